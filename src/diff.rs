//! Proposals as hunks: line-based differences between the human's text and
//! an agent's, computed with `similar`. Pure functions, used by the store
//! side (to build proposals) and by the editor (to draw ghost text).

use serde::{Deserialize, Serialize};
use similar::{DiffOp, TextDiff};

/// Whether `old` and `new` differ only in blank space at line ends and
/// in blank lines: a change nobody reading the code would see.
pub fn only_blank_space_differs(old: &str, new: &str) -> bool {
    let lines = |text: &'_ str| -> Vec<String> {
        text.lines()
            .map(str::trim_end)
            .filter(|l| !l.is_empty())
            .map(str::to_owned)
            .collect()
    };
    lines(old) == lines(new)
}

/// One contiguous change: `old_lines` starting at `old_start` (0-based) are
/// replaced by `new_lines`. Lines carry no line ending.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hunk {
    pub old_start: usize,
    pub old_lines: Vec<String>,
    pub new_lines: Vec<String>,
}

/// What a proposal does to one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FileChange {
    Added,
    Modified,
    Deleted,
}

/// The hunks of one file of a proposal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileDiff {
    pub path: String,
    pub change: FileChange,
    pub hunks: Vec<Hunk>,
    /// When the human changed the file since the proposal's base (a
    /// conflict): their changes, base to current text — the other side.
    #[serde(default)]
    pub human_hunks: Vec<Hunk>,
    /// The stable key of each hunk ([`hunk_keys`] of the project path):
    /// computed once, so they do not change when the path is shown absolute.
    #[serde(default)]
    pub keys: Vec<String>,
}

impl FileDiff {
    /// The diff of project file `path`, its hunks keyed.
    pub fn new(path: String, change: FileChange, hunks: Vec<Hunk>, human_hunks: Vec<Hunk>) -> Self {
        let keys = hunk_keys(&path, &hunks);
        FileDiff {
            path,
            change,
            hunks,
            human_hunks,
            keys,
        }
    }
}

/// Which hunk of a proposal an accept or reject means. A number (from 1, in
/// file order across the proposal) is what a person types; a key is what the
/// editor sends for the hunk it drew, and it still names the same change
/// after a rebase moved it or a hunk before it went away.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum HunkRef {
    Number(usize),
    Key(String),
}

impl std::fmt::Display for HunkRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HunkRef::Number(n) => write!(f, "{n}"),
            HunkRef::Key(k) => write!(f, "{k}"),
        }
    }
}

/// The stable keys of one file's `hunks`: a hash of the path and of what the
/// hunk changes, not of where, so a hunk keeps its key when lines above it
/// are added or removed. Identical hunks of a file are told apart by their order.
pub fn hunk_keys(path: &str, hunks: &[Hunk]) -> Vec<String> {
    let mut seen: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    hunks
        .iter()
        .map(|h| {
            let mut hasher = blake3::Hasher::new();
            hasher.update(path.as_bytes());
            for side in [&h.old_lines, &h.new_lines] {
                hasher.update(&[0xff]);
                for line in side {
                    hasher.update(line.as_bytes());
                    hasher.update(b"\n");
                }
            }
            let key = hasher.finalize().to_hex()[..12].to_owned();
            let n = seen.entry(key.clone()).or_insert(0);
            *n += 1;
            if *n == 1 {
                key
            } else {
                format!("{key}-{n}")
            }
        })
        .collect()
}

/// The hunk `which` of a proposal: its file's index and the hunk.
pub fn find_hunk(diffs: &[FileDiff], which: &HunkRef) -> Option<(usize, Hunk)> {
    let mut k = 0;
    for (i, d) in diffs.iter().enumerate() {
        for (j, h) in d.hunks.iter().enumerate() {
            k += 1;
            let hit = match which {
                HunkRef::Number(n) => k == *n,
                HunkRef::Key(key) => d.keys.get(j) == Some(key),
            };
            if hit {
                return Some((i, h.clone()));
            }
        }
    }
    None
}

fn strip_eol(line: &str) -> String {
    line.strip_suffix('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .unwrap_or(line)
        .to_owned()
}

/// The hunks turning `old` into `new`, in file order, without context lines.
pub fn hunks(old: &str, new: &str) -> Vec<Hunk> {
    let diff = TextDiff::configure()
        .algorithm(similar::Algorithm::Patience)
        .diff_lines(old, new);
    let old_lines = diff.old_slices();
    let new_lines = diff.new_slices();
    let mut out: Vec<Hunk> = Vec::new();
    for op in diff.ops() {
        let (old_range, new_range) = match *op {
            DiffOp::Equal { .. } => continue,
            DiffOp::Delete {
                old_index, old_len, ..
            } => (old_index..old_index + old_len, 0..0),
            DiffOp::Insert {
                old_index,
                new_index,
                new_len,
            } => (old_index..old_index, new_index..new_index + new_len),
            DiffOp::Replace {
                old_index,
                old_len,
                new_index,
                new_len,
            } => (
                old_index..old_index + old_len,
                new_index..new_index + new_len,
            ),
        };
        let hunk = Hunk {
            old_start: old_range.start,
            old_lines: old_lines[old_range.clone()]
                .iter()
                .map(|l| strip_eol(l))
                .collect(),
            new_lines: new_lines[new_range].iter().map(|l| strip_eol(l)).collect(),
        };
        // Adjacent ops (a delete followed by an insert) form one hunk.
        match out.last_mut() {
            Some(last) if last.old_start + last.old_lines.len() == hunk.old_start => {
                last.old_lines.extend(hunk.old_lines);
                last.new_lines.extend(hunk.new_lines);
            }
            _ => out.push(hunk),
        }
    }
    // A change of only the final newline shows as a changed last line.
    if out.is_empty() && old != new {
        let n = old.lines().count().saturating_sub(1);
        let last_old = old.lines().last().unwrap_or("").to_owned();
        let last_new = new.lines().last().unwrap_or("").to_owned();
        out.push(Hunk {
            old_start: n,
            old_lines: vec![last_old],
            new_lines: vec![last_new],
        });
    }
    out
}

/// A unified diff of one file (3 lines of context), as shown to models
/// and in the diff view.
pub fn unified(path: &str, old: &str, new: &str) -> String {
    TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{path}"), &format!("b/{path}"))
        .to_string()
}

/// The files and hunks of a unified diff (`--- a/path` / `+++ b/path`
/// headers, as [`unified`] writes them and `git diff` does), for
/// [`apply`]. Hunks whose counts disagree with their lines are dropped with
/// their file; `/dev/null` names an added or deleted file's other side.
pub fn parse_unified(text: &str) -> Vec<(String, Vec<Hunk>)> {
    let mut files: Vec<(String, Vec<Hunk>)> = Vec::new();
    let mut old_path = String::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        if let Some(p) = line.strip_prefix("--- ") {
            old_path = p.trim().trim_start_matches("a/").to_owned();
            continue;
        }
        if let Some(p) = line.strip_prefix("+++ ") {
            let p = p.trim();
            let path = if p == "/dev/null" {
                old_path.clone()
            } else {
                p.trim_start_matches("b/").to_owned()
            };
            files.push((path, Vec::new()));
            continue;
        }
        let Some(header) = line.strip_prefix("@@ -") else {
            continue;
        };
        let Some((old, rest)) = header.split_once(' ') else {
            continue;
        };
        let (start, count) = match old.split_once(',') {
            Some((s, c)) => (
                s.parse::<usize>().unwrap_or(0),
                c.parse::<usize>().unwrap_or(0),
            ),
            None => (old.parse::<usize>().unwrap_or(0), 1),
        };
        let new_count = rest
            .strip_prefix('+')
            .and_then(|r| r.split(' ').next())
            .map(|r| r.split_once(',').map_or(1, |(_, c)| c.parse().unwrap_or(0)))
            .unwrap_or(0);
        let mut hunk = Hunk {
            old_start: if count == 0 {
                start
            } else {
                start.saturating_sub(1)
            },
            old_lines: Vec::new(),
            new_lines: Vec::new(),
        };
        while hunk.old_lines.len() < count || hunk.new_lines.len() < new_count {
            let Some(l) = lines.next() else { break };
            match l.split_at_checked(1) {
                Some((" ", t)) => {
                    hunk.old_lines.push(t.to_owned());
                    hunk.new_lines.push(t.to_owned());
                }
                Some(("-", t)) => hunk.old_lines.push(t.to_owned()),
                Some(("+", t)) => hunk.new_lines.push(t.to_owned()),
                _ if l.is_empty() => {
                    hunk.old_lines.push(String::new());
                    hunk.new_lines.push(String::new());
                }
                _ => {}
            }
        }
        while lines.peek().is_some_and(|l| l.starts_with('\\')) {
            lines.next();
        }
        if hunk.old_lines.len() != count || hunk.new_lines.len() != new_count {
            files.pop();
            continue;
        }
        if let Some((_, hunks)) = files.last_mut() {
            hunks.push(hunk);
        }
    }
    files
}

/// Rewrites the line endings of `new` to those of `base` when `base` uses
/// CRLF throughout, so an agent that writes `\n` does not convert the file.
pub fn match_line_endings(base: &str, new: &str) -> String {
    let crlf = base.matches("\r\n").count();
    let lf = base.matches('\n').count();
    if crlf == 0 || crlf != lf {
        return new.to_owned();
    }
    let mut out = String::with_capacity(new.len() + new.len() / 40);
    let mut prev = '\0';
    for c in new.chars() {
        if c == '\n' && prev != '\r' {
            out.push('\r');
        }
        out.push(c);
        prev = c;
    }
    out
}

/// Applies `hunks` (computed against `old`) to `old`; `None` if a hunk does
/// not match the text (the text changed since the hunks were computed).
/// How many lines hunk `h` (made on a base) moves on the human's text,
/// which `human` hunks made from the same base; `None` when `h` touches or
/// borders one of them (their order could not be told apart).
pub fn shift_past(human: &[Hunk], h: &Hunk) -> Option<isize> {
    let (from, to) = (h.old_start, h.old_start + h.old_lines.len());
    let mut shift = 0isize;
    for u in human {
        let (u_from, u_to) = (u.old_start, u.old_start + u.old_lines.len());
        if from <= u_to && u_from <= to {
            return None;
        }
        if u_to <= from {
            shift += u.new_lines.len() as isize - u.old_lines.len() as isize;
        }
    }
    Some(shift)
}

pub fn apply(old: &str, hunks: &[Hunk], eol: &str, final_newline: bool) -> Option<String> {
    let lines: Vec<String> = old
        .lines()
        .map(|l| l.strip_suffix('\r').unwrap_or(l).to_owned())
        .collect();
    let mut out: Vec<String> = Vec::with_capacity(lines.len());
    let mut pos = 0;
    for h in hunks {
        if h.old_start < pos || h.old_start + h.old_lines.len() > lines.len() {
            return None;
        }
        out.extend_from_slice(&lines[pos..h.old_start]);
        if lines[h.old_start..h.old_start + h.old_lines.len()] != h.old_lines[..] {
            return None;
        }
        out.extend(h.new_lines.iter().cloned());
        pos = h.old_start + h.old_lines.len();
    }
    out.extend_from_slice(&lines[pos..]);
    let mut text = out.join(eol);
    if final_newline && !out.is_empty() {
        text.push_str(eol);
    }
    Some(text)
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_unified_diff_parses_back_into_hunks_that_apply() {
        let old = "a\nb\nc\nd\ne\nf\ng\nh\n";
        let new = "a\nB\nc\nd\ne\nf\ng\nh\ni\n";
        let text = unified("x.py", old, new) + &unified("new.py", "", "one\ntwo\n");
        let files = super::parse_unified(&text);
        assert_eq!(files.len(), 2, "{files:?}");
        assert_eq!(files[0].0, "x.py");
        assert_eq!(
            super::apply(old, &files[0].1, "\n", true).as_deref(),
            Some(new)
        );
        assert_eq!(files[1].0, "new.py");
        assert_eq!(
            super::apply("", &files[1].1, "\n", true).as_deref(),
            Some("one\ntwo\n")
        );
        // A hunk cut short is not half applied.
        let cut: String = text.lines().take(5).map(|l| format!("{l}\n")).collect();
        assert!(
            super::parse_unified(&cut)
                .iter()
                .all(|(_, h)| !h.is_empty())
                || super::parse_unified(&cut).is_empty()
        );
    }
    use super::*;

    #[test]
    fn a_hunk_keeps_its_key_when_lines_above_it_come_and_go_and_twins_differ() {
        let old = "a\nb\nc\nd\n";
        let before = hunks(old, "a\nB\nc\nD\n");
        let shifted = hunks("x\ny\na\nb\nc\nd\n", "x\ny\na\nb\nc\nD\n");
        let k1 = hunk_keys("m.py", &before);
        let k2 = hunk_keys("m.py", &shifted);
        assert_eq!(k1.len(), 2);
        assert_eq!(k1[1], k2[0], "d -> D keeps its key two lines lower");
        assert_ne!(k1[0], k1[1]);
        assert_ne!(
            hunk_keys("n.py", &before)[0],
            k1[0],
            "the path is part of it"
        );
        let twins = hunks("p\nq\np\n", "p\nP\nq\np\nP\n");
        let keys = hunk_keys("m.py", &twins);
        assert_eq!(keys.len(), 2);
        assert_ne!(keys[0], keys[1], "identical hunks are told apart");
        let files = vec![FileDiff::new(
            "m.py".into(),
            FileChange::Modified,
            twins.clone(),
            vec![],
        )];
        assert_eq!(
            find_hunk(&files, &HunkRef::Key(keys[1].clone())).map(|h| h.1),
            Some(twins[1].clone())
        );
        assert_eq!(
            find_hunk(&files, &HunkRef::Number(1)).map(|h| h.1),
            Some(twins[0].clone())
        );
        assert_eq!(find_hunk(&files, &HunkRef::Number(3)), None);
        assert_eq!(find_hunk(&files, &HunkRef::Key("nope".into())), None);
    }

    #[test]
    fn insertion_replacement_and_deletion() {
        let old = "a\nb\nc\nd\n";
        let new = "a\nB\nc\nx\ny\n";
        let h = hunks(old, new);
        assert_eq!(
            h,
            vec![
                Hunk {
                    old_start: 1,
                    old_lines: vec!["b".into()],
                    new_lines: vec!["B".into()]
                },
                Hunk {
                    old_start: 3,
                    old_lines: vec!["d".into()],
                    new_lines: vec!["x".into(), "y".into()]
                },
            ]
        );
        assert_eq!(apply(old, &h, "\n", true).unwrap(), new);
    }

    #[test]
    fn pure_insertion_has_no_old_lines() {
        let h = hunks(
            "def f():\n    pass\n",
            "def f():\n    \"\"\"Doc.\"\"\"\n    pass\n",
        );
        assert_eq!(h.len(), 1);
        assert_eq!(h[0].old_start, 1);
        assert!(h[0].old_lines.is_empty());
        assert_eq!(h[0].new_lines, vec!["    \"\"\"Doc.\"\"\""]);
    }

    #[test]
    fn apply_refuses_hunks_that_no_longer_match() {
        let h = hunks("a\nb\n", "a\nc\n");
        assert!(apply("a\nX\n", &h, "\n", true).is_none());
    }

    #[test]
    fn crlf_files_stay_crlf() {
        assert_eq!(
            match_line_endings("a\r\nb\r\n", "a\nb\nc\n"),
            "a\r\nb\r\nc\r\n"
        );
        assert_eq!(match_line_endings("a\r\nb\r\n", "a\r\nz\r\n"), "a\r\nz\r\n");
        assert_eq!(match_line_endings("a\nb\n", "a\nc\n"), "a\nc\n");
    }

    #[test]
    fn hunks_ignore_crlf_in_line_text() {
        let h = hunks("a\r\nb\r\n", "a\r\nc\r\n");
        assert_eq!(h[0].old_lines, vec!["b"]);
        assert_eq!(h[0].new_lines, vec!["c"]);
    }
}

/// The line ending `text` uses ("\r\n" when every line ends so, else "\n"),
/// and whether it ends with one.
pub fn line_style(text: &str) -> (&'static str, bool) {
    let crlf = text.matches("\r\n").count();
    let lf = text.matches('\n').count();
    let eol = if crlf > 0 && crlf == lf { "\r\n" } else { "\n" };
    (eol, text.is_empty() || text.ends_with('\n'))
}

/// Three-way merge: the changes from `base` to `human` and from `base` to
/// `agent`, combined. `None` when they touch the same lines (a conflict).
pub fn merge3(base: &str, human: &str, agent: &str) -> Option<String> {
    if human == base {
        return Some(agent.to_owned());
    }
    if agent == base || agent == human {
        return Some(human.to_owned());
    }
    let ours = hunks(base, human);
    let theirs = hunks(base, agent);
    let mut all: Vec<Hunk> = Vec::with_capacity(ours.len() + theirs.len());
    for t in &theirs {
        let t_end = t.old_start + t.old_lines.len();
        for o in &ours {
            let o_end = o.old_start + o.old_lines.len();
            if o == t {
                continue;
            }
            let overlap = o.old_start.max(t.old_start) < o_end.min(t_end);
            let same_point = o.old_start == t.old_start;
            let inserts_inside =
                (o.old_lines.is_empty() && t.old_start < o.old_start && o.old_start < t_end)
                    || (t.old_lines.is_empty() && o.old_start < t.old_start && t.old_start < o_end);
            if overlap || same_point || inserts_inside {
                return None;
            }
        }
    }
    all.extend(ours.iter().cloned());
    for t in theirs {
        if !ours.contains(&t) {
            all.push(t);
        }
    }
    all.sort_by_key(|h| (h.old_start, !h.old_lines.is_empty()));
    let (eol, final_nl) = line_style(human);
    apply(base, &all, eol, final_nl)
}

/// Three-way merge that never fails: where `human` and `agent` change the
/// same lines of `base`, both sides are kept between git-style markers
/// (`<<<<<<< yours`, `=======`, `>>>>>>> {label}`), for the human to settle
/// in the buffer. Changes on one side only, or made alike on both, merge.
pub fn merge3_marked(base: &str, human: &str, agent: &str, label: &str) -> String {
    if let Some(clean) = merge3(base, human, agent) {
        return clean;
    }
    let ours = hunks(base, human);
    let theirs = hunks(base, agent);
    let clash = |o: &Hunk, t: &Hunk| {
        let (o_end, t_end) = (
            o.old_start + o.old_lines.len(),
            t.old_start + t.old_lines.len(),
        );
        o != t
            && (o.old_start.max(t.old_start) < o_end.min(t_end)
                || o.old_start == t.old_start
                || (o.old_lines.is_empty() && t.old_start < o.old_start && o.old_start < t_end)
                || (t.old_lines.is_empty() && o.old_start < t.old_start && t.old_start < o_end))
    };
    // Every hunk, each side marked, in base order; clashing ones join a
    // cluster (transitively), replaced as one marked region.
    let mut all: Vec<(bool, Hunk)> = ours
        .iter()
        .map(|h| (true, h.clone()))
        .chain(
            theirs
                .iter()
                .filter(|t| !ours.contains(t))
                .map(|h| (false, h.clone())),
        )
        .collect();
    all.sort_by_key(|(_, h)| (h.old_start, h.old_lines.len()));
    let base_lines: Vec<String> = base
        .lines()
        .map(|l| l.strip_suffix('\r').unwrap_or(l).to_owned())
        .collect();
    let mut out: Vec<Hunk> = Vec::new();
    let mut i = 0;
    while i < all.len() {
        let mut cluster = vec![all[i].clone()];
        let mut j = i + 1;
        while j < all.len()
            && cluster.iter().any(|(side, c)| {
                all[j].0 != *side
                    && clash(
                        if *side { c } else { &all[j].1 },
                        if *side { &all[j].1 } else { c },
                    )
            })
        {
            cluster.push(all[j].clone());
            j += 1;
        }
        if cluster.len() == 1 {
            out.push(cluster.remove(0).1);
        } else {
            let lo = cluster.iter().map(|(_, h)| h.old_start).min().unwrap_or(0);
            let hi = cluster
                .iter()
                .map(|(_, h)| h.old_start + h.old_lines.len())
                .max()
                .unwrap_or(lo);
            let region = &base_lines[lo.min(base_lines.len())..hi.min(base_lines.len())];
            let side = |mine: bool| -> Vec<String> {
                let moved: Vec<Hunk> = cluster
                    .iter()
                    .filter(|(s, _)| *s == mine)
                    .map(|(_, h)| Hunk {
                        old_start: h.old_start - lo,
                        ..h.clone()
                    })
                    .collect();
                let text = region.iter().map(|l| format!("{l}\n")).collect::<String>();
                apply(&text, &moved, "\n", true)
                    .unwrap_or(text)
                    .lines()
                    .map(str::to_owned)
                    .collect()
            };
            let mut lines = vec!["<<<<<<< yours".to_owned()];
            lines.extend(side(true));
            lines.push("=======".to_owned());
            lines.extend(side(false));
            lines.push(format!(">>>>>>> {label}"));
            out.push(Hunk {
                old_start: lo,
                old_lines: region.to_vec(),
                new_lines: lines,
            });
        }
        i = j;
    }
    let (eol, final_nl) = line_style(human);
    apply(base, &out, eol, final_nl).unwrap_or_else(|| human.to_owned())
}

/// The smallest line range of `old` to replace to get `new`:
/// `(start, end, replacement lines)`, lines without endings.
pub fn minimal_edit(old: &str, new: &str) -> (usize, usize, Vec<String>) {
    let a: Vec<&str> = old.lines().collect();
    let b: Vec<&str> = new.lines().collect();
    let prefix = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let max_suffix = a.len().min(b.len()) - prefix;
    let suffix = a
        .iter()
        .rev()
        .zip(b.iter().rev())
        .take(max_suffix)
        .take_while(|(x, y)| x == y)
        .count();
    let lines = b[prefix..b.len() - suffix]
        .iter()
        .map(|l| l.strip_suffix('\r').unwrap_or(l).to_owned())
        .collect();
    (prefix, a.len() - suffix, lines)
}

#[cfg(test)]
mod merge_tests {
    #[test]
    fn overlapping_changes_keep_both_sides_between_markers() {
        let base = "a\nb\nc\nd\ne\nf\n";
        let human = "a\nB-mine\nc\nd\ne\nF\n";
        let agent = "a\nB-agent\nc\nD\ne\nf\n";
        assert_eq!(
            super::merge3_marked(base, human, agent, "chimera x1"),
            "a\n<<<<<<< yours\nB-mine\n=======\nB-agent\n>>>>>>> chimera x1\nc\nD\ne\nF\n"
        );
        // Nothing overlaps: the plain merge.
        assert_eq!(
            super::merge3_marked(base, "a\nb\nc\nd\ne\nF\n", agent, "x"),
            "a\nB-agent\nc\nD\ne\nF\n"
        );
        // Both sides inserting at the same place.
        assert_eq!(
            super::merge3_marked("a\nb\n", "a\nmine\nb\n", "a\ntheirs\nb\n", "x"),
            "a\n<<<<<<< yours\nmine\n=======\ntheirs\n>>>>>>> x\nb\n"
        );
    }

    use super::*;

    #[test]
    fn non_overlapping_changes_merge() {
        let base = "a\nb\nc\nd\ne\n";
        let human = "A\nb\nc\nd\ne\n";
        let agent = "a\nb\nc\nd\nE\n";
        assert_eq!(merge3(base, human, agent).unwrap(), "A\nb\nc\nd\nE\n");
    }

    #[test]
    fn overlapping_changes_conflict() {
        let base = "a\nb\nc\n";
        assert!(merge3(base, "a\nB\nc\n", "a\nX\nc\n").is_none());
        assert!(
            merge3(base, "a\nnew\nb\nc\n", "a\nother\nb\nc\n").is_none(),
            "two inserts at one point"
        );
    }

    #[test]
    fn identical_changes_are_taken_once() {
        assert_eq!(
            merge3("a\nb\nc\nd\n", "a\nB\nc\nd\n", "a\nB\nc\nD\n").unwrap(),
            "a\nB\nc\nD\n"
        );
    }

    #[test]
    fn minimal_edit_finds_the_changed_range() {
        assert_eq!(
            minimal_edit("a\nb\nc\n", "a\nX\nY\nc\n"),
            (1, 2, vec!["X".into(), "Y".into()])
        );
        assert_eq!(
            minimal_edit("a\nb\n", "a\nb\nc\n"),
            (2, 2, vec!["c".into()])
        );
        assert_eq!(minimal_edit("a\na\n", "a\n"), (1, 2, vec![]));
    }
}
