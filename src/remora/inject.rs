//! Writing node IDs into source as comments: `    # rm_…` at the end of each
//! definition's header line and `# remora-file: rm_…` near the top (with
//! the language's own comment marker: `//`, `--`).
//! Only those bytes change: line endings, a missing final newline, tabs,
//! continuations and the rest of the file stay exactly as they were.

use serde::Serialize;

use super::extract::Extracted;

/// Replace bytes `[start, end)` of the text with `text`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TextEdit {
    pub start: usize,
    pub end: usize,
    pub text: String,
}

/// The same edit in buffer coordinates (0-based rows, byte columns), as
/// `nvim_buf_set_text` takes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BufferEdit {
    pub start_row: usize,
    pub start_col: usize,
    pub end_row: usize,
    pub end_col: usize,
    pub lines: Vec<String>,
}

/// An ID edit for a loaded buffer, with the line it expects to find there so
/// an edit computed for an older text is never applied.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct IdEdit {
    #[serde(flatten)]
    pub edit: BufferEdit,
    pub expect: String,
}

/// The edits that make `text` carry `ids` (parallel to `ex.nodes`), in order.
pub fn id_edits(text: &str, ex: &Extracted, ids: &[String]) -> Vec<TextEdit> {
    let mut edits = Vec::new();
    if let Some(file_id) = ids.first() {
        match &ex.file_comment {
            Some(c) if &c.id == file_id => {}
            Some(c) => edits.push(TextEdit {
                start: c.start,
                end: c.end,
                text: file_id.clone(),
            }),
            None => {
                let at = ex.file_comment_at;
                let nl = ex.newline;
                let line = format!("{} {} {file_id}", ex.comment, super::ids::FILE_MARKER);
                let text = if at == text.len() && !text.is_empty() && !text.ends_with('\n') {
                    format!("{nl}{line}")
                } else if ex.file_comment_gap {
                    format!("{line}{nl}{nl}")
                } else {
                    format!("{line}{nl}")
                };
                edits.push(TextEdit {
                    start: at,
                    end: at,
                    text,
                });
            }
        }
    }
    for (node, id) in ex.nodes.iter().zip(ids).skip(1) {
        match (&node.id_comment, node.id_insert_at) {
            (Some(c), _) if &c.id == id => {}
            (Some(c), _) => edits.push(TextEdit {
                start: c.start,
                end: c.end,
                text: id.clone(),
            }),
            (None, Some(at)) => edits.push(TextEdit {
                start: at,
                end: at,
                text: format!("    {} {id}", ex.comment),
            }),
            (None, None) => {}
        }
    }
    edits.sort_by_key(|e| (e.start, e.end));
    edits
}

/// `text` with `edits` (sorted, not overlapping) applied.
pub fn apply(text: &str, edits: &[TextEdit]) -> String {
    let mut out = String::with_capacity(text.len() + edits.len() * 16);
    let mut at = 0;
    for e in edits {
        out.push_str(&text[at..e.start]);
        out.push_str(&e.text);
        at = e.end;
    }
    out.push_str(&text[at..]);
    out
}

/// `edits` in buffer coordinates of `text`. Buffer lines do not hold the
/// line ending, so a `\r` before a `\n` is not part of any column.
pub fn buffer_edits(text: &str, edits: &[TextEdit]) -> Vec<BufferEdit> {
    let line_starts: Vec<usize> = std::iter::once(0)
        .chain(text.match_indices('\n').map(|(i, _)| i + 1))
        .collect();
    let pos = |byte: usize| {
        let row = line_starts.partition_point(|&s| s <= byte) - 1;
        (row, byte - line_starts[row])
    };
    edits
        .iter()
        .map(|e| {
            let (start_row, start_col) = pos(e.start);
            let (end_row, end_col) = pos(e.end);
            let lines = e
                .text
                .split('\n')
                .map(|l| l.strip_suffix('\r').unwrap_or(l).to_owned())
                .collect();
            BufferEdit {
                start_row,
                start_col,
                end_row,
                end_col,
                lines,
            }
        })
        .collect()
}
