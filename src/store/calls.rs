//! The audit log (seed 002): every tool call an agent made — reads, lists
//! and writes as well as the irreversible effects — with its arguments and
//! result in brief, viewable per agent.

use rusqlite::params;
use serde::Serialize;

use super::{now_ms, Result, Store};

/// One tool call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ToolCall {
    pub seq: i64,
    pub agent_id: String,
    /// The host function, tool, MCP tool (`server.tool`) or ACP request.
    pub tool: String,
    /// The arguments as the log shows them (long texts by their size).
    pub args: String,
    pub ok: bool,
    /// The result in brief, or the error.
    pub result: String,
    pub duration_ms: i64,
    pub created_at: i64,
}

/// Arguments and results are kept up to this many bytes.
const CALL_CAP: usize = 1024;

fn capped(s: &str) -> &str {
    let mut end = s.len().min(CALL_CAP);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

impl Store {
    /// Records that `agent` called `tool`; `None` when it could not be
    /// written (kept, see [`Store::unrecorded`]).
    pub fn tool_call_record(
        &self,
        agent: &str,
        tool: &str,
        args: &str,
        result: std::result::Result<&str, &str>,
        duration_ms: i64,
    ) -> Option<i64> {
        let (ok, text) = match result {
            Ok(t) => (true, t),
            Err(t) => (false, t),
        };
        let conn = self.conn();
        let r = conn
            .prepare_cached(
                "INSERT INTO tool_calls (agent_id, tool, args, ok, result, duration_ms, created_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )
            .and_then(|mut stmt| {
                stmt.execute(params![
                    agent,
                    tool,
                    capped(args),
                    ok,
                    capped(text),
                    duration_ms,
                    now_ms()
                ])
            })
            .map(|_| conn.last_insert_rowid())
            .map_err(Into::into);
        drop(conn);
        self.noted(r)
    }

    /// `agent`'s tool calls after sequence `since`, oldest first.
    pub fn tool_calls(&self, agent: &str, since: i64) -> Result<Vec<ToolCall>> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached(
            "SELECT seq, agent_id, tool, args, ok, result, duration_ms, created_at
             FROM tool_calls WHERE agent_id = ?1 AND seq > ?2 ORDER BY seq",
        )?;
        let rows = stmt.query_map(params![agent, since], |r| {
            Ok(ToolCall {
                seq: r.get(0)?,
                agent_id: r.get(1)?,
                tool: r.get(2)?,
                args: r.get(3)?,
                ok: r.get(4)?,
                result: r.get(5)?,
                duration_ms: r.get(6)?,
                created_at: r.get(7)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_are_kept_per_agent_in_order_and_capped() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        store
            .tool_call_record("a", "read_file", "\"app.py\"", Ok("<20 bytes>"), 1)
            .unwrap();
        store
            .tool_call_record("b", "list_dir", "\"\"", Ok("['app.py']"), 0)
            .unwrap();
        let huge = "é".repeat(5000);
        store
            .tool_call_record("a", "write_file", &huge, Err("denied"), 2)
            .unwrap();
        let a = store.tool_calls("a", 0).unwrap();
        assert_eq!(
            a.iter().map(|c| c.tool.as_str()).collect::<Vec<_>>(),
            ["read_file", "write_file"]
        );
        assert!(a[0].ok && !a[1].ok);
        assert_eq!(a[1].result, "denied");
        assert!(a[1].args.len() <= CALL_CAP, "{}", a[1].args.len());
        assert_eq!(store.tool_calls("a", a[0].seq).unwrap().len(), 1);
        assert_eq!(store.tool_calls("b", 0).unwrap()[0].result, "['app.py']");
        assert!(store.tool_calls("nobody", 0).unwrap().is_empty());
    }
}
