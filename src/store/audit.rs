//! The records of what agents did — the effect log, the audit log of tool
//! calls, their refusals — are written best effort: a write that fails
//! does not stop the work it records. Its failure is kept here and shown
//! (`GET /status`, `chimera status`), never dropped unseen.

use serde::Serialize;

use super::{Result, Store};

/// Records that could not be written since the store was opened.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Unrecorded {
    pub count: u64,
    /// The last failure, in words.
    pub last: Option<String>,
}

impl Store {
    /// `r`'s value; its failure kept as an unrecorded write.
    pub(crate) fn noted<T>(&self, r: Result<T>) -> Option<T> {
        match r {
            Ok(v) => Some(v),
            Err(e) => {
                if let Ok(mut u) = self.unrecorded.lock() {
                    u.count += 1;
                    u.last = Some(e.to_string());
                }
                None
            }
        }
    }

    /// The records that could not be written so far.
    pub fn unrecorded(&self) -> Unrecorded {
        self.unrecorded
            .lock()
            .map(|u| u.clone())
            .unwrap_or_default()
    }

    /// An event of the audit trail (a refusal, a denied call), best
    /// effort: see [`Store::unrecorded`].
    pub fn audit_event(&self, agent: Option<&str>, kind: &str, data: &serde_json::Value) {
        let r = self.append_event(agent, kind, data);
        self.noted(r);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_that_cannot_be_written_is_kept_not_dropped() {
        let store = Store::open_in_memory(std::path::Path::new("/p")).unwrap();
        assert!(store.effect_record("llm", None, "a", "b", 1).is_some());
        assert_eq!(store.unrecorded(), Unrecorded::default());
        store.conn().execute_batch("DROP TABLE effects").unwrap();
        assert_eq!(store.effect_record("llm", None, "a", "b", 1), None);
        let u = store.unrecorded();
        assert_eq!(u.count, 1);
        assert!(u.last.unwrap().contains("effects"), "the reason is kept");
    }
}
