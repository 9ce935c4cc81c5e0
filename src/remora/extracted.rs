//! What one file contributes to the topology, as both extractors make it
//! (Python's own walk in [`super::extract`], the query-driven one in
//! [`super::by_query`]): nodes before they have IDs, the references they
//! make, the ID comments found. A leaf below both.

use std::collections::HashMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::{EdgeKind, NodeType};

/// An ID comment found in the text: the ID and its byte range.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdSpan {
    pub id: String,
    pub start: usize,
    pub end: usize,
}

/// A node as found in one file, before it has an ID.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawNode {
    pub node_type: NodeType,
    pub name: String,
    pub qualname: String,
    /// Index of the parent in [`Extracted::nodes`]; `None` for the file.
    pub parent: Option<usize>,
    /// 1-based, inclusive; decorators included.
    pub start_line: usize,
    pub end_line: usize,
    pub start_byte: usize,
    pub end_byte: usize,
    /// The `# rm_…` comment ending the definition's header line, if any.
    pub id_comment: Option<IdSpan>,
    /// Where a trailing ID comment goes: the end of the line holding the
    /// header's `:`. `None` where no comment can go without changing the
    /// code (a body that starts on that line and runs on, a `\` continuation).
    pub id_insert_at: Option<usize>,
    /// blake3 of the node's text without its own ID comment.
    pub source_hash: String,
    /// 0-based row of the header line, and where in it the ID comment is
    /// looked for from (Python: after the header's `:`; else the name).
    pub(super) header_row: usize,
    pub(super) colon_end: usize,
}

/// What a reference points at, as far as one file can tell.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "t", rename_all = "snake_case")]
pub enum Target {
    /// A top-level definition of the same file.
    Local { name: String },
    /// A method of a class of the same file (`self.x()`, `Class.x()`).
    Method { class: String, name: String },
    /// A top-level name of another module (`from m import f; f()`, `m.f()`),
    /// or, for an import, the submodule `module.name` if there is one.
    InModule { module: String, name: String },
    /// A whole module (`import m`).
    Module { module: String },
}

/// A reference from one node of the file.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RawRef {
    /// Index in [`Extracted::nodes`].
    pub from: usize,
    pub kind: EdgeKind,
    /// Shared: a file's references are kept between its edits and handed
    /// out again (see [`super::extract::Statements`]) without copying.
    pub target: Arc<Target>,
}

/// Everything one file contributes to the topology.
#[derive(Debug, Clone)]
pub struct Extracted {
    /// `nodes[0]` is the file itself; the others follow in source order,
    /// parents before children.
    pub nodes: Vec<RawNode>,
    pub refs: Vec<RawRef>,
    /// The parse has errors (the human is mid-edit): definitions may be missing.
    pub has_error: bool,
    /// The `# remora-file: rm_…` comment, if present.
    pub file_comment: Option<IdSpan>,
    /// Where a file comment line goes: after a shebang and an encoding line.
    pub file_comment_at: usize,
    /// A blank line must follow an inserted file comment (so that it does
    /// not join the comment or code below it).
    pub file_comment_gap: bool,
    /// The file's line ending, kept by anything written into it.
    pub newline: &'static str,
    /// What starts a line comment in the file's language (`#`, `//`, `--`).
    pub comment: &'static str,
}

/// The file's line ending: the first line's.
pub(crate) fn newline_of(text: &str) -> &'static str {
    match text.find('\n') {
        Some(i) if i > 0 && text.as_bytes()[i - 1] == b'\r' => "\r\n",
        _ => "\n",
    }
}

/// The top-level definitions among a file's `nodes` by name (the last of
/// a name): what a bare name in the file may refer to.
pub(crate) fn top_level(nodes: &[RawNode]) -> HashMap<&str, NodeType> {
    nodes
        .iter()
        .filter(|n| n.parent == Some(0))
        .map(|n| (n.name.as_str(), n.node_type))
        .collect()
}

/// `text.lines().count()`, at the speed of counting bytes.
fn line_count(text: &str) -> usize {
    let newlines = text.bytes().filter(|&b| b == b'\n').count();
    newlines + usize::from(!text.is_empty() && !text.ends_with('\n'))
}

/// The node of the file itself.
pub(crate) fn file_node(path: &str, text: &str) -> RawNode {
    RawNode {
        node_type: NodeType::File,
        name: path.to_owned(),
        qualname: path.to_owned(),
        parent: None,
        start_line: 1,
        end_line: line_count(text).max(1),
        start_byte: 0,
        end_byte: text.len(),
        id_comment: None,
        id_insert_at: None,
        source_hash: blake3::hash(text.as_bytes()).to_hex().to_string(),
        header_row: 0,
        colon_end: 0,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn line_count_is_the_count_of_lines() {
        for text in ["", "\n", "a", "a\n", "a\nb", "a\r\nb\r\n", "\n\n", "é\nx"] {
            assert_eq!(super::line_count(text), text.lines().count(), "{text:?}");
        }
    }
}
