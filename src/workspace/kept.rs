//! An attempt set aside while the agent tries again: the overlay's files,
//! bytes included (a cleared overlay no longer holds its blobs), to put
//! back if no later try does better ([`super::Workspace::keep`],
//! [`super::Workspace::restore`]).

use crate::store::{OverlayEntry, Store, StoreError};

/// One overlay file: its path, its change and base, and their bytes.
struct File {
    path: String,
    entry: OverlayEntry,
    data: Option<Vec<u8>>,
    base: Option<Vec<u8>>,
}

/// `agent`'s overlay as it was when [`Kept::take`] read it.
pub struct Kept(Vec<File>);

impl Kept {
    /// A copy of `agent`'s overlay.
    pub(super) fn take(store: &Store, agent: &str) -> Result<Kept, StoreError> {
        let bytes = |h: &Option<String>| h.as_deref().map(|h| store.blob(h)).transpose();
        let mut files = Vec::new();
        for (path, entry) in store.overlay_entries(agent)? {
            files.push(File {
                data: bytes(&entry.hash)?,
                base: bytes(&entry.base_hash)?,
                path,
                entry,
            });
        }
        Ok(Kept(files))
    }

    /// Makes `agent`'s overlay what it was when taken.
    pub(super) fn restore(&self, store: &Store, agent: &str) -> Result<(), StoreError> {
        store.overlay_clear(agent)?;
        for f in &self.0 {
            for data in [&f.data, &f.base].into_iter().flatten() {
                store.put_blob(data)?;
            }
            store.overlay_set(
                agent,
                &f.path,
                f.entry.hash.as_deref(),
                f.entry.base_hash.as_deref(),
            )?;
        }
        Ok(())
    }
}
