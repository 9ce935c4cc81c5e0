//! Keeps the topology and the store in step with the files: a changed file
//! is parsed again alone; a whole project is parsed on every core and its
//! edges resolved once at the end. In inline mode it also says which IDs the
//! text lacks and produces the text that carries them.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;

use super::extract::{extract, Extracted};
use super::inject::{self, TextEdit};
use super::is_python;
use super::topology::{FileChange, Topology};
use crate::store::{hash_bytes, Result, Store};

/// The topology, loaded from the store and written back on every change.
#[derive(Debug, Default)]
pub struct Indexer {
    topo: Topology,
}

/// The outcome of indexing one file.
#[derive(Debug, Default)]
pub struct Indexed {
    /// `None`: the text is the one already indexed.
    pub change: Option<FileChange>,
}

/// The outcome of indexing many files.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct BulkStats {
    /// Files parsed (the others were unchanged since the last index).
    pub parsed: usize,
    pub unchanged: usize,
    pub removed: usize,
}

impl Indexer {
    pub fn load(store: &Store) -> Result<Self> {
        Ok(Self {
            topo: store.remora_load()?,
        })
    }

    pub fn topology(&self) -> &Topology {
        &self.topo
    }

    /// Whether `text` is what was indexed for `path`.
    pub fn is_current(&self, path: &str, text: &str) -> bool {
        self.topo
            .file(path)
            .is_some_and(|f| f.hash == hash_bytes(text.as_bytes()))
    }

    /// Indexes the new text of one file (only that file is parsed) and writes
    /// the change to the store.
    pub fn index_text(&mut self, store: &Store, path: &str, text: &str) -> Result<Indexed> {
        let hash = hash_bytes(text.as_bytes());
        if self.topo.file(path).is_some_and(|f| f.hash == hash) {
            return Ok(Indexed::default());
        }
        let ex = extract(path, text);
        let change = self.topo.update_file(path, &hash, &ex);
        store.remora_apply(std::slice::from_ref(&change))?;
        Ok(Indexed {
            change: Some(change),
        })
    }

    /// The file is gone from the project.
    pub fn remove(&mut self, store: &Store, path: &str) -> Result<Option<FileChange>> {
        let change = self.topo.remove_file(path);
        if let Some(c) = &change {
            store.remora_apply(std::slice::from_ref(c))?;
        }
        Ok(change)
    }

    /// The edits that give `text` its IDs as inline comments (empty when it
    /// has them all), without changing the topology.
    pub fn id_edits(&self, path: &str, text: &str) -> Vec<TextEdit> {
        let ex = extract(path, text);
        let ids = self.topo.assign_ids(path, &ex);
        inject::id_edits(text, &ex, &ids)
    }

    /// Indexes every file of `files` whose text changed since the last
    /// index, parsing on `threads` threads; files indexed before but no
    /// longer listed are removed. A file listed with the hash of its text is
    /// skipped without loading when that hash was indexed already; the others
    /// are loaded with `load`. One transaction for the lot.
    pub fn index_all<F>(
        &mut self,
        store: &Store,
        files: &[(String, Option<String>)],
        threads: usize,
        load: F,
    ) -> Result<BulkStats>
    where
        F: Fn(&str) -> Option<String> + Sync,
    {
        let mut stats = BulkStats::default();
        let wanted: HashSet<&str> = files
            .iter()
            .map(|(p, _)| p.as_str())
            .filter(|p| is_python(p))
            .collect();
        let gone: Vec<String> = self
            .topo
            .file_paths()
            .filter(|p| !wanted.contains(p.as_str()))
            .cloned()
            .collect();
        let mut changes = Vec::new();
        for p in gone {
            if let Some(c) = self.topo.remove_file(&p) {
                changes.push(c);
                stats.removed += 1;
            }
        }
        let known: HashMap<String, String> = self
            .topo
            .file_paths()
            .filter_map(|p| Some((p.clone(), self.topo.file(p)?.hash.clone())))
            .collect();
        let mut todo: Vec<&str> = Vec::new();
        for (path, hash) in files {
            if !is_python(path) {
                continue;
            }
            match (hash, known.get(path)) {
                (Some(h), Some(k)) if h == k => stats.unchanged += 1,
                _ => todo.push(path),
            }
        }
        let next = AtomicUsize::new(0);
        let (tx, rx) = mpsc::sync_channel::<(String, String, Option<Extracted>)>(256);
        let topo = &mut self.topo;
        std::thread::scope(|scope| {
            for _ in 0..threads.max(1) {
                let tx = tx.clone();
                let (todo, next, load, known) = (&todo, &next, &load, &known);
                scope.spawn(move || loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(path) = todo.get(i) else { return };
                    let Some(text) = load(path) else { continue };
                    let hash = hash_bytes(text.as_bytes());
                    let ex = (known.get(*path) != Some(&hash)).then(|| extract(path, &text));
                    if tx.send((path.to_string(), hash, ex)).is_err() {
                        return;
                    }
                });
            }
            drop(tx);
            // Matching IDs is serial; it runs while the workers parse.
            for (path, hash, ex) in rx {
                match ex {
                    Some(ex) => {
                        stats.parsed += 1;
                        changes.push(topo.add_file_unresolved(&path, &hash, &ex));
                    }
                    None => stats.unchanged += 1,
                }
            }
        });
        if stats.parsed > 0 || stats.removed > 0 {
            changes.extend(self.topo.resolve_all());
        }
        if !changes.is_empty() {
            store.remora_apply(&changes)?;
        }
        Ok(stats)
    }
}
