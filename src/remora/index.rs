//! Keeps the topology and the store in step with the files: a changed file
//! is parsed again alone; a whole project is parsed on every core and its
//! edges resolved once at the end. In inline mode it also says which IDs the
//! text lacks and produces the text that carries them.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;

use tree_sitter::{InputEdit, Parser, Point, Tree};

use super::extract::{extract, extract_cached, ChunkCache, Extracted};
use super::inject::{self, TextEdit};
use super::is_indexed;
use super::topology::{FileChange, Topology};
use crate::store::{hash_bytes, Result, Store};

/// The topology, loaded from the store and written back on every change.
#[derive(Default)]
pub struct Indexer {
    topo: Topology,
    /// Until the topology is loaded: each indexed file's hash, enough to
    /// tell that nothing changed (see [`Indexer::open`]).
    unloaded: Option<HashMap<String, String>>,
    /// The last parse of recently edited files, for incremental re-parsing.
    trees: Vec<Recent>,
    parser: Option<Parser>,
}

/// A recently indexed file: its text, tree and statements, so the next
/// edit re-parses and re-walks only what changed.
struct Recent {
    path: String,
    text: String,
    tree: Tree,
    chunks: ChunkCache,
}

/// Trees kept for incremental parsing: the files being edited right now.
const KEPT_TREES: usize = 8;

impl std::fmt::Debug for Indexer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Indexer")
            .field("topo", &self.topo)
            .finish_non_exhaustive()
    }
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
    /// The whole topology from the store.
    pub fn load(store: &Store) -> Result<Self> {
        let mut ix = Self::open(store)?;
        ix.hydrate(store)?;
        Ok(ix)
    }

    /// Reads only the hashes of the files indexed: reopening an unchanged
    /// project costs one small query. The nodes and edges are loaded by
    /// [`Indexer::hydrate`], which every change and query calls first.
    pub fn open(store: &Store) -> Result<Self> {
        Ok(Self {
            unloaded: Some(store.remora_file_hashes()?),
            ..Self::default()
        })
    }

    /// Loads the topology if [`Indexer::open`] left it in the store.
    pub fn hydrate(&mut self, store: &Store) -> Result<()> {
        if self.unloaded.is_some() {
            self.topo = store.remora_load()?;
            self.unloaded = None;
        }
        Ok(())
    }

    /// The hash of the text indexed for each file.
    fn known_hashes(&self) -> HashMap<String, String> {
        match &self.unloaded {
            Some(h) => h.clone(),
            None => self
                .topo
                .file_paths()
                .filter_map(|p| Some((p.clone(), self.topo.file(p)?.hash.clone())))
                .collect(),
        }
    }

    /// Parses and extracts `text`, incrementally from the file's last
    /// parse when there is one.
    fn parse_extract(&mut self, path: &str, text: &str) -> Extracted {
        // Only Python is re-parsed incrementally: the others are parsed
        // whole, from their queries.
        if crate::lang::for_path(path).is_none_or(|l| l.id != "python") {
            return extract(path, text);
        }
        let old = self
            .trees
            .iter()
            .position(|r| r.path == path)
            .map(|i| self.trees.remove(i));
        if self.parser.is_none() {
            let mut p = Parser::new();
            if p.set_language(&tree_sitter_python::LANGUAGE.into())
                .is_err()
            {
                return extract(path, text);
            }
            self.parser = Some(p);
        }
        let Some(parser) = self.parser.as_mut() else {
            return extract(path, text);
        };
        let (tree, mut chunks) = match old {
            Some(Recent {
                text: old_text,
                tree: mut old_tree,
                chunks,
                ..
            }) => {
                for edit in input_edits(&old_text, text) {
                    old_tree.edit(&edit);
                }
                (parser.parse(text, Some(&old_tree)), chunks)
            }
            None => (parser.parse(text, None), ChunkCache::default()),
        };
        let Some(tree) = tree else {
            return extract(path, text);
        };
        let ex = extract_cached(path, text, &tree, &mut chunks);
        if self.trees.len() >= KEPT_TREES {
            self.trees.remove(0);
        }
        self.trees.push(Recent {
            path: path.to_owned(),
            text: text.to_owned(),
            tree,
            chunks,
        });
        ex
    }

    /// The topology in memory; empty until [`Indexer::hydrate`] after
    /// [`Indexer::open`].
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
        self.hydrate(store)?;
        let hash = hash_bytes(text.as_bytes());
        if self.topo.file(path).is_some_and(|f| f.hash == hash) {
            return Ok(Indexed::default());
        }
        let ex = self.parse_extract(path, text);
        let change = self.topo.update_file(path, &hash, &ex);
        store.remora_apply(std::slice::from_ref(&change))?;
        Ok(Indexed {
            change: Some(change),
        })
    }

    /// The file is gone from the project.
    pub fn remove(&mut self, store: &Store, path: &str) -> Result<Option<FileChange>> {
        self.hydrate(store)?;
        self.trees.retain(|r| r.path != path);
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
            .filter(|p| is_indexed(p))
            .collect();
        let known = self.known_hashes();
        let gone: Vec<String> = known
            .keys()
            .filter(|p| !wanted.contains(p.as_str()))
            .cloned()
            .collect();
        let mut todo: Vec<&str> = Vec::new();
        for (path, hash) in files {
            if !is_indexed(path) {
                continue;
            }
            match (hash, known.get(path)) {
                (Some(h), Some(k)) if h == k => stats.unchanged += 1,
                _ => todo.push(path),
            }
        }
        if todo.is_empty() && gone.is_empty() {
            return Ok(stats);
        }
        self.hydrate(store)?;
        let mut changes = Vec::new();
        for p in gone {
            if let Some(c) = self.topo.remove_file(&p) {
                changes.push(c);
                stats.removed += 1;
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

/// The edits turning `old` into `new`, one per changed run of lines, last
/// first (so each is expressed in the coordinates the tree has when it is
/// applied). One edit spanning several top-level statements would make
/// tree-sitter re-parse nearly the whole file; several small ones do not.
fn input_edits(old: &str, new: &str) -> Vec<InputEdit> {
    let starts = |text: &str| -> Vec<usize> {
        std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1))
            .collect()
    };
    let (old_starts, new_starts) = (starts(old), starts(new));
    // Position of the start of line `line` (or of the end of the text).
    let point = |text: &str, starts: &[usize], line: usize| -> (usize, Point) {
        match starts.get(line) {
            Some(&b) => (b, Point::new(line, 0)),
            None => {
                let last = starts.len() - 1;
                (text.len(), Point::new(last, text.len() - starts[last]))
            }
        }
    };
    // Lines equal at both ends need no diffing (the common case: one edit).
    let (ol, nl) = (old_starts.len(), new_starts.len());
    fn line<'t>(text: &'t str, starts: &[usize], i: usize) -> &'t str {
        &text[starts[i]..starts.get(i + 1).copied().unwrap_or(text.len())]
    }
    let head = (0..ol.min(nl))
        .take_while(|&i| line(old, &old_starts, i) == line(new, &new_starts, i))
        .count();
    let tail = (0..(ol.min(nl) - head))
        .take_while(|&i| line(old, &old_starts, ol - 1 - i) == line(new, &new_starts, nl - 1 - i))
        .count();
    let (old_mid, new_mid) = (
        &old[point(old, &old_starts, head).0..point(old, &old_starts, ol - tail).0],
        &new[point(new, &new_starts, head).0..point(new, &new_starts, nl - tail).0],
    );
    let diff = similar::TextDiff::configure()
        .timeout(std::time::Duration::from_millis(5))
        .diff_lines(old_mid, new_mid);
    let mut edits: Vec<InputEdit> = diff
        .ops()
        .iter()
        .filter(|op| op.tag() != similar::DiffTag::Equal)
        .map(|op| {
            let (o, n) = (op.old_range(), op.new_range());
            let (o, n) = (o.start + head..o.end + head, n.start + head..n.end + head);
            let (start_byte, start_position) = point(old, &old_starts, o.start);
            let (old_end_byte, old_end_position) = point(old, &old_starts, o.end);
            let (new_start, _) = point(new, &new_starts, n.start);
            let (new_end, new_end_point) = point(new, &new_starts, n.end);
            let rows = new_end_point.row - n.start;
            InputEdit {
                start_byte,
                old_end_byte,
                new_end_byte: start_byte + (new_end - new_start),
                start_position,
                old_end_position,
                new_end_position: Point::new(
                    start_position.row + rows,
                    if rows == 0 {
                        start_position.column + new_end_point.column
                    } else {
                        new_end_point.column
                    },
                ),
            }
        })
        .collect();
    edits.reverse();
    edits
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Incremental parses must give the tree a fresh parse gives.
    #[test]
    fn incremental_parses_match_fresh_ones() {
        let base = "import os\n\nclass A:\n    def m(self):\n        return 1\n\n    def n(self):\n        return os.sep\n\ndef f():\n    return A().m()\n";
        let edits: Vec<String> = vec![
            base.replace("return 1", "return 2"),
            base.replace("return 1", "x = 1\n        return x"),
            base.replace("    def n(self):\n        return os.sep\n", ""),
            base.replace("import os\n", "import os\nimport sys\n")
                .replace("return A().m()", "return A().n()"),
            base.trim_end().to_owned(),
            format!("{base}def g(:\n"),
            base.replace('\n', "\r\n"),
            String::new(),
            base.to_owned(),
        ];
        let mut ix = Indexer::default();
        let mut prev = base.to_owned();
        ix.parse_extract("a.py", &prev);
        for text in edits {
            let a = ix.parse_extract("a.py", &text);
            let incremental = &ix.trees.last().unwrap().tree;
            let fresh = crate::python::parse(&text).unwrap();
            assert_eq!(
                incremental.root_node().to_sexp(),
                fresh.root_node().to_sexp(),
                "from {prev:?} to {text:?}"
            );
            let b = extract("a.py", &text);
            assert_eq!(a.nodes, b.nodes);
            assert_eq!(a.refs, b.refs);
            prev = text;
        }
    }

    /// Random line edits: the cached, incremental extraction always equals
    /// a fresh one.
    #[test]
    fn cached_extraction_matches_fresh_under_random_edits() {
        let pieces = [
            "def f(a):\n    return g(a)\n",
            "class K(Base):\n    def m(self):\n        return self.n()\n",
            "    def n(self):  # rm_aaaa0001\n        pass\n",
            "import os\n",
            "from pkg import g\n",
            "x = (1,\n",
            "\n",
            "@dec\ndef h():\n    pass\n",
            "    y = 2\n",
        ];
        let mut lines: Vec<String> =
            "def f(a):\n    return g(a)\n\nclass K(Base):\n    def m(self):\n        return 1\n"
                .lines()
                .map(|l| format!("{l}\n"))
                .collect();
        let mut seed: u64 = 0x2545f4914f6cdd1d;
        let mut next = move |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n.max(1) as u64) as usize
        };
        let mut ix = Indexer::default();
        for round in 0..1000 {
            let at = next(lines.len() + 1);
            match next(3) {
                0 => lines.insert(at.min(lines.len()), pieces[next(pieces.len())].to_owned()),
                1 if !lines.is_empty() => {
                    lines.remove(at.min(lines.len() - 1));
                }
                _ if !lines.is_empty() => {
                    let i = at.min(lines.len() - 1);
                    lines[i] = pieces[next(pieces.len())].to_owned();
                }
                _ => {}
            }
            let text: String = lines.concat();
            let a = ix.parse_extract("a.py", &text);
            // The statement cache changes nothing for the same tree…
            let same_tree =
                super::super::extract::extract_tree("a.py", &text, &ix.trees.last().unwrap().tree);
            assert_eq!(a.nodes, same_tree.nodes, "round {round}:\n{text}");
            assert_eq!(a.refs, same_tree.refs, "round {round}:\n{text}");
            // …and without syntax errors (where tree-sitter's recovery may
            // differ between an incremental and a fresh parse) nor does
            // the incremental parse.
            let b = extract("a.py", &text);
            assert_eq!(a.has_error, b.has_error);
            if !b.has_error {
                assert_eq!(a.nodes, b.nodes, "round {round}:\n{text}");
                assert_eq!(a.refs, b.refs, "round {round}:\n{text}");
            }
        }
    }
}
