//! The topology the editor reads, shared: one writer (the Remora worker)
//! behind a lock that readers hold only to look.

use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use super::index::Indexer;

/// The topology the editor reads.
#[derive(Clone, Default)]
pub struct SharedIndex(Arc<RwLock<Indexer>>);

impl From<Indexer> for SharedIndex {
    fn from(ix: Indexer) -> Self {
        SharedIndex(Arc::new(RwLock::new(ix)))
    }
}

impl SharedIndex {
    pub fn read(&self) -> RwLockReadGuard<'_, Indexer> {
        // A panic while writing leaves at worst a stale topology, which the
        // next change repairs: a poisoned lock is still usable.
        self.0.read().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn write(&self) -> RwLockWriteGuard<'_, Indexer> {
        self.0.write().unwrap_or_else(|p| p.into_inner())
    }
}
