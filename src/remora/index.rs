//! Keeps the topology and the store in step with the files: a changed file
//! is parsed again alone; a whole project is parsed on every core and its
//! edges resolved once at the end. In inline mode it also says which IDs the
//! text lacks and produces the text that carries them.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;

use tree_sitter::{InputEdit, Parser, Point, Tree};

use super::by_query;
use super::extract::{extract, extract_kept, Extracted, Statements};
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
    /// One parser per language, made on first use.
    parsers: HashMap<&'static str, Parser>,
}

/// A recently indexed file: its text, tree and what was read from it, so
/// the next edit re-parses and re-reads only what changed.
struct Recent {
    path: String,
    text: String,
    tree: Tree,
    read: Read,
}

/// What was read from a file's tree, kept for its next edit.
enum Read {
    /// Python: each top-level statement's share of the extraction.
    Statements(Box<Statements>),
    /// Other languages: what their queries matched.
    Matches(by_query::Matched),
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
                .filter_map(|p| Some((p.to_owned(), self.topo.file(p)?.hash.clone())))
                .collect(),
        }
    }

    /// Parses and extracts `text`, incrementally from the file's last
    /// parse when there is one: tree-sitter re-parses what the edit
    /// touched, and only the statements (Python) or query matches (the
    /// other languages) it can have changed are read again.
    fn parse_extract(&mut self, path: &str, text: &str) -> Extracted {
        let Some(lang) = crate::lang::for_path(path) else {
            return extract(path, text);
        };
        let old = self
            .trees
            .iter()
            .position(|r| r.path == path)
            .map(|i| self.trees.remove(i));
        let parser = match self.parsers.entry(lang.id) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => {
                let mut p = Parser::new();
                if p.set_language(&lang.grammar()).is_err() {
                    return extract(path, text);
                }
                e.insert(p)
            }
        };
        let (tree, edited) = match old {
            Some(Recent {
                text: old_text,
                tree: mut old_tree,
                read,
                ..
            }) => {
                let edits = input_edits(&old_text, text);
                for edit in &edits {
                    old_tree.edit(edit);
                }
                let tree = parser.parse(text, Some(&old_tree));
                (tree, Some((old_tree, edits, read)))
            }
            None => (parser.parse(text, None), None),
        };
        let Some(tree) = tree else {
            return extract(path, text);
        };
        let (ex, read) = match (edited, lang.id) {
            (edited, "python") => {
                let mut kept = match edited {
                    Some((_, _, Read::Statements(kept))) => kept,
                    _ => Box::default(),
                };
                let ex = extract_kept(path, text, &tree, &mut kept);
                (ex, Read::Statements(kept))
            }
            (Some((old_tree, edits, Read::Matches(old))), _) => {
                let changed: Vec<std::ops::Range<usize>> = old_tree
                    .changed_ranges(&tree)
                    .map(|r| r.start_byte..r.end_byte)
                    .collect();
                let (ex, matched) =
                    by_query::extract_edited(lang, path, text, &tree, old, &edits, &changed);
                (ex, Read::Matches(matched))
            }
            _ => {
                let (ex, matched) = by_query::extract_tree(lang, path, text, &tree);
                (ex, Read::Matches(matched))
            }
        };
        if self.trees.len() >= KEPT_TREES {
            self.trees.remove(0);
        }
        self.trees.push(Recent {
            path: path.to_owned(),
            text: text.to_owned(),
            tree,
            read,
        });
        ex
    }

    /// Keeps `ex`, what [`Indexer::parse_extract`] last made of `path`, for
    /// the file's next edit to move rather than make again.
    fn give_back(&mut self, path: &str, ex: Extracted) {
        if let Some(Recent {
            read: Read::Statements(kept),
            ..
        }) = self.trees.iter_mut().find(|r| r.path == path)
        {
            kept.give_back(ex);
        }
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
        self.give_back(path, ex);
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
        let known = self.known_hashes();
        let (todo, gone) = to_index(files, &known, &mut stats);
        if todo.is_empty() && gone.is_empty() {
            return Ok(stats);
        }
        self.hydrate(store)?;
        let mut removed = Vec::new();
        for p in gone {
            if let Some(c) = self.topo.remove_file(&p) {
                removed.push(c);
                stats.removed += 1;
            }
        }
        let mut added = Vec::new();
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
                        added.push(topo.add_file_unresolved(&path, &hash, &ex));
                    }
                    None => stats.unchanged += 1,
                }
            }
        });
        if stats.parsed == 0 && stats.removed == 0 {
            return Ok(stats);
        }
        let topo = &mut self.topo;
        store.remora_apply_with(|write| {
            removed.iter().try_for_each(&mut *write)?;
            for pending in added {
                write(&topo.written(pending))?;
            }
            topo.resolve_all(|change| write(&change))
        })?;
        Ok(stats)
    }
}

/// What a bulk index has to do: the paths of `files` to load (their text
/// not indexed yet, or of no known hash) and the indexed paths no longer
/// listed; counts the unchanged in `stats`.
fn to_index<'f>(
    files: &'f [(String, Option<String>)],
    known: &HashMap<String, String>,
    stats: &mut BulkStats,
) -> (Vec<&'f str>, Vec<String>) {
    let wanted: HashSet<&str> = files
        .iter()
        .map(|(p, _)| p.as_str())
        .filter(|p| is_indexed(p))
        .collect();
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
    (todo, gone)
}

/// The edits turning `old` into `new`, one per changed run of lines, last
/// first (so each is expressed in the coordinates the tree has when it is
/// applied). One edit spanning several top-level statements would make
/// tree-sitter re-parse nearly the whole file; several small ones do not.
pub fn input_edits(old: &str, new: &str) -> Vec<InputEdit> {
    let (o, n) = (old.as_bytes(), new.as_bytes());
    // Whole lines equal at both ends need no diffing (the common case: one
    // edit): the texts are compared as bytes, the lines counted only up to
    // the first difference.
    let same = common_prefix(o, n);
    let head = o[..same]
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1);
    let same_end = common_prefix_rev(&o[head..], &n[head..]);
    let (mut old_end, mut new_end) = (o.len() - same_end, n.len() - same_end);
    // The equal tail starts at a line start in both texts.
    let line_start = |text: &[u8], at: usize| at == head || text[at - 1] == b'\n';
    while old_end < o.len() && !(line_start(o, old_end) && line_start(n, new_end)) {
        old_end += 1;
        new_end += 1;
    }
    let head_row = o[..head].iter().filter(|&&b| b == b'\n').count();
    let (old_mid, new_mid) = (&old[head..old_end], &new[head..new_end]);
    let starts = |text: &str| -> Vec<usize> {
        std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1))
            .collect()
    };
    let (old_starts, new_starts) = (starts(old_mid), starts(new_mid));
    // Where line `line` of a middle starts (or where the middle ends), in
    // the whole text.
    let point = |mid: &str, starts: &[usize], line: usize| -> (usize, Point) {
        match starts.get(line) {
            Some(&b) => (head + b, Point::new(head_row + line, 0)),
            None => {
                let last = starts.len() - 1;
                (
                    head + mid.len(),
                    Point::new(head_row + last, mid.len() - starts[last]),
                )
            }
        }
    };
    // similar's TextDiff compacts its ops, which can leave their indices
    // out of order (2.7); the plain Myers ops are in order.
    let (old_lines, new_lines): (Vec<&str>, Vec<&str>) = (
        old_mid.split_inclusive('\n').collect(),
        new_mid.split_inclusive('\n').collect(),
    );
    let mut ops = similar::algorithms::Replace::new(similar::algorithms::Capture::new());
    let deadline = std::time::Instant::now() + std::time::Duration::from_millis(5);
    // Capture's hook cannot fail.
    let _ = similar::algorithms::myers::diff_deadline(
        &mut ops,
        &old_lines,
        0..old_lines.len(),
        &new_lines,
        0..new_lines.len(),
        Some(deadline),
    );
    let mut edits: Vec<InputEdit> = ops
        .into_inner()
        .into_ops()
        .iter()
        .filter(|op| op.tag() != similar::DiffTag::Equal)
        .map(|op| {
            let (o, n) = (op.old_range(), op.new_range());
            let (start_byte, start_position) = point(old_mid, &old_starts, o.start);
            let (old_end_byte, old_end_position) = point(old_mid, &old_starts, o.end);
            let (new_start, new_start_point) = point(new_mid, &new_starts, n.start);
            let (new_end, new_end_point) = point(new_mid, &new_starts, n.end);
            let rows = new_end_point.row - new_start_point.row;
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

/// How many bytes `a` and `b` have in common at their start.
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    // Blocks compare as one memcmp; only the first unequal one byte by byte.
    const BLOCK: usize = 256;
    let len = a.len().min(b.len());
    let mut at = 0;
    while at + BLOCK <= len && a[at..at + BLOCK] == b[at..at + BLOCK] {
        at += BLOCK;
    }
    at + a[at..len]
        .iter()
        .zip(&b[at..len])
        .take_while(|(x, y)| x == y)
        .count()
}

/// How many bytes `a` and `b` have in common at their end.
fn common_prefix_rev(a: &[u8], b: &[u8]) -> usize {
    const BLOCK: usize = 256;
    let len = a.len().min(b.len());
    let (ea, eb) = (a.len(), b.len());
    let mut at = 0;
    while at + BLOCK <= len && a[ea - at - BLOCK..ea - at] == b[eb - at - BLOCK..eb - at] {
        at += BLOCK;
    }
    at + a[..ea - at]
        .iter()
        .rev()
        .zip(b[..eb - at].iter().rev())
        .take(len - at)
        .take_while(|(x, y)| x == y)
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A xorshift generator: the same random edits on every run.
    struct Rng(u64);

    impl Rng {
        /// A number below `n` (0 when `n` is 0).
        fn below(&mut self, n: usize) -> usize {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            (self.0 % n.max(1) as u64) as usize
        }
    }

    /// One random line edit: a piece put in, a line taken out, or a line
    /// replaced by a piece.
    fn edit_lines<T: Clone>(lines: &mut Vec<T>, pieces: &[T], rng: &mut Rng) {
        let at = rng.below(lines.len() + 1);
        match rng.below(3) {
            0 => lines.insert(at, pieces[rng.below(pieces.len())].clone()),
            1 if !lines.is_empty() => {
                lines.remove(at.min(lines.len() - 1));
            }
            _ if !lines.is_empty() => {
                let i = at.min(lines.len() - 1);
                lines[i] = pieces[rng.below(pieces.len())].clone();
            }
            _ => {}
        }
    }

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
            ix.give_back("a.py", a);
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
        let mut lines: Vec<&str> =
            "def f(a):\n    return g(a)\n\nclass K(Base):\n    def m(self):\n        return 1\n"
                .split_inclusive('\n')
                .collect();
        let mut rng = Rng(0x2545f4914f6cdd1d);
        let mut ix = Indexer::default();
        for round in 0..1000 {
            edit_lines(&mut lines, &pieces, &mut rng);
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
            // Every other round the extraction is not given back (as when
            // indexing fails): the next one walks every statement.
            if round % 2 == 0 {
                ix.give_back("a.py", a);
            }
        }
    }

    /// Statements the last Python extraction of `path` walked.
    fn walked(ix: &Indexer, path: &str) -> usize {
        match ix.trees.iter().find(|r| r.path == path).map(|r| &r.read) {
            Some(Read::Statements(kept)) => kept.walked(),
            _ => panic!("no statements kept for {path}"),
        }
    }

    /// An edit walks the statements it changed; the others' nodes are
    /// moved, shifted by the lines put in above them, and their references
    /// resolved again only when a name they may refer to changed.
    #[test]
    fn an_edit_walks_only_the_statements_it_changed() {
        let base = "import os\n\nclass A:\n    def m(self):\n        return os.sep\n\ndef f():\n    return A().m() + g()\n\ndef g():  # rm_aaaa0001\n    return 1\n";
        let st = crate::store::Store::open_in_memory(std::path::Path::new("/project")).unwrap();
        let mut ix = Indexer::default();
        ix.index_text(&st, "a.py", base).unwrap();
        assert_eq!(walked(&ix, "a.py"), 4, "the first extraction walks all");
        for (text, walks) in [
            (base.replace("return 1", "return 2"), 1),
            (base.replace("class A:", "x = 1\n\n\nclass A:"), 1),
            (base.replace("def g():", "def h():"), 1),
            (base.replace("import os\n", "import sys\n"), 1),
            (
                base.replace(
                    "        return os.sep\n",
                    "        return os.sep\n\n    def n(self):\n        pass\n",
                ),
                1,
            ),
        ] {
            ix.index_text(&st, "a.py", base).unwrap();
            ix.index_text(&st, "a.py", &text).unwrap();
            assert_eq!(walked(&ix, "a.py"), walks, "{text}");
            let fresh = extract("a.py", &text);
            let kept = ix.topology().nodes_in("a.py");
            assert_eq!(kept.len(), fresh.nodes.len(), "{text}");
            for (n, raw) in kept.iter().zip(&fresh.nodes) {
                assert_eq!(
                    (
                        n.qualname.as_str(),
                        n.start_line,
                        n.end_line,
                        n.source_hash.as_str()
                    ),
                    (
                        raw.qualname.as_str(),
                        raw.start_line,
                        raw.end_line,
                        raw.source_hash.as_str()
                    ),
                    "{text}"
                );
            }
            let file = ix.topology().file("a.py").unwrap();
            let refs: Vec<_> = file
                .refs
                .iter()
                .map(|r| (r.from.as_str(), r.kind, &r.target))
                .collect();
            let kept_ids: Vec<String> = kept.iter().map(|n| n.id.clone()).collect();
            let fresh_refs: Vec<_> = fresh
                .refs
                .iter()
                .map(|r| (kept_ids[r.from].as_str(), r.kind, &*r.target))
                .collect();
            assert_eq!(refs, fresh_refs, "{text}");
        }
    }

    fn point_of(text: &str, at: usize) -> Point {
        let row = text[..at].matches('\n').count();
        let col = at - text[..at].rfind('\n').map_or(0, |i| i + 1);
        Point::new(row, col)
    }

    /// Applied in their order, the edits turn the old text into the new
    /// one, and every point is where its byte is.
    #[test]
    fn input_edits_turn_old_into_new() {
        let words = ["a\n", "bb\n", "\n", "c", "dd\r\n", "é\n", "x y\n"];
        let mut rng = Rng(0x9e3779b97f4a7c15);
        for round in 0..2000 {
            let old: String = (0..rng.below(12))
                .map(|_| words[rng.below(words.len())])
                .collect();
            let mut pieces: Vec<&str> = old.split_inclusive('\n').collect();
            for _ in 0..1 + rng.below(3) {
                edit_lines(&mut pieces, &words, &mut rng);
            }
            let new: String = pieces.concat();
            let mut text = old.clone();
            let edits = input_edits(&old, &new);
            for (i, e) in edits.iter().enumerate() {
                assert_eq!(e.start_position, point_of(&text, e.start_byte), "{round}");
                assert_eq!(
                    e.old_end_position,
                    point_of(&text, e.old_end_byte),
                    "{round}"
                );
                // The edits still to come are above this one: in the new
                // text, this one sits where they moved it.
                let above: isize = edits[i + 1..]
                    .iter()
                    .map(|e| e.new_end_byte as isize - e.old_end_byte as isize)
                    .sum();
                let (s, ne) = (
                    e.start_byte.saturating_add_signed(above),
                    e.new_end_byte.saturating_add_signed(above),
                );
                text = format!(
                    "{}{}{}",
                    &text[..e.start_byte],
                    &new[s..ne],
                    &text[e.old_end_byte..]
                );
                assert_eq!(
                    e.new_end_position,
                    point_of(&text, e.new_end_byte),
                    "{round} {old:?} -> {new:?} {e:?}"
                );
            }
            assert_eq!(text, new, "round {round}: {old:?} -> {new:?}");
        }
    }

    /// Lines each language's random edits are made of: definitions,
    /// methods, attached comments, ID comments, calls, imports, and the odd
    /// unbalanced line.
    fn pieces(lang: &str) -> (&'static str, &'static [&'static str]) {
        match lang {
            "js" => (
                "a.js",
                &[
                    "const { g } = require(\"./b\");\n",
                    "import { h } from \"./c\";\n",
                    "function f(a) {\n  return g(a);\n}\n",
                    "class K extends Base {\n  m() { return this.n(); }\n",
                    "  n() { // rm_aaaa0001\n    return h();\n  }\n",
                    "}\n",
                    "// a comment\n",
                    "/** doc */\n",
                    "const k = (x) => f(x);\n",
                    "\n",
                    "  let y = (1,\n",
                ],
            ),
            "ts" => (
                "a.ts",
                &[
                    "import { g } from \"./b\";\n",
                    "export function f(a: number): number {\n  return g(a);\n}\n",
                    "interface I { x: number }\n",
                    "class K {\n  m(): void { this.n(); }\n",
                    "  n(): number { // rm_aaaa0002\n    return 1;\n  }\n",
                    "}\n",
                    "/** doc */\n",
                    "type T = string;\n",
                    "\n",
                    "const z = f(2;\n",
                ],
            ),
            "go" => (
                "a.go",
                &[
                    "package a\n",
                    "import \"fmt\"\n",
                    "func F(a int) int {\n\treturn G(a)\n}\n",
                    "type S struct {\n\tx int\n}\n",
                    "func (s *S) M() int { // rm_aaaa0003\n\treturn s.N()\n}\n",
                    "// F does things.\n",
                    "func G(a int) int { fmt.Println(a); return a }\n",
                    "\n",
                    "}\n",
                    "\tx := F(1\n",
                ],
            ),
            "rs" => (
                "src/a.rs",
                &[
                    "use crate::b::g;\n",
                    "mod c;\n",
                    "fn f(a: u8) -> u8 {\n    g(a)\n}\n",
                    "pub struct S { x: u8 }\n",
                    "impl S {\n    fn m(&self) -> u8 { self.n() }\n",
                    "    fn n(&self) -> u8 { // rm_aaaa0004\n        S::new()\n    }\n",
                    "}\n",
                    "/// Docs.\n",
                    "#[derive(Debug)]\n",
                    "\n",
                    "    let y = (1,\n",
                ],
            ),
            _ => (
                "lua/a.lua",
                &[
                    "local b = require(\"b\")\n",
                    "local M = {}\n",
                    "local function f(a)\n  return b.g(a)\nend\n",
                    "function M.m(x) -- rm_aaaa0005\n  return f(x)\nend\n",
                    "M.n = function()\n  return M.m(1)\nend\n",
                    "--- docs\n",
                    "end\n",
                    "\n",
                    "return M\n",
                    "  local y = (1,\n",
                ],
            ),
        }
    }

    /// Random line edits in every language: extraction after an edit,
    /// re-reading only what it touched, always equals reading the whole
    /// tree again — and a fresh parse, where the text parses.
    #[test]
    fn edited_extraction_matches_fresh_in_every_language() {
        for lang in ["js", "ts", "go", "rs", "lua"] {
            let (path, pieces) = pieces(lang);
            let language = crate::lang::for_path(path).unwrap();
            let mut lines: Vec<&str> = pieces.to_vec();
            let mut rng = Rng(0x2545f4914f6cdd1d);
            let mut ix = Indexer::default();
            for round in 0..600 {
                // Now and then several lines at once, as a paste or an undo.
                for _ in 0..1 + rng.below(3) / 2 {
                    edit_lines(&mut lines, pieces, &mut rng);
                }
                let text: String = lines.concat();
                let a = ix.parse_extract(path, &text);
                let tree = &ix.trees.last().unwrap().tree;
                let (whole, _) = by_query::extract_tree(language, path, &text, tree);
                assert_eq!(a.nodes, whole.nodes, "{lang} round {round}:\n{text}");
                assert_eq!(a.refs, whole.refs, "{lang} round {round}:\n{text}");
                let b = extract(path, &text);
                assert_eq!(a.has_error, b.has_error, "{lang} round {round}:\n{text}");
                if !b.has_error {
                    assert_eq!(a.nodes, b.nodes, "{lang} round {round}:\n{text}");
                    assert_eq!(a.refs, b.refs, "{lang} round {round}:\n{text}");
                }
            }
        }
    }
}
