//! The project's own rules for agents, found as other tools find them: the
//! nearest `AGENTS.md` in the folders from the file an agent works on up to
//! the project root (the AGENTS.md convention: the closest one wins), then
//! `CLAUDE.md` and `.github/copilot-instructions.md` at the root. Chimera's
//! own agents read them first; what is shown is capped, and a file the
//! caller cannot read (a secret) is never among them.

/// Rules files read at the project root, after the nearest `AGENTS.md`.
pub const AT_ROOT: &[&str] = &["CLAUDE.md", ".github/copilot-instructions.md"];

/// The nearest of these in the folders above a file.
pub const NEAREST: &str = "AGENTS.md";

/// At most this many characters of rules in all: a small model's context
/// is 4,096 tokens, and the task and its file come first.
pub const MAX_CHARS: usize = 2_000;

/// A rules file found, and what of it agents are shown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// Its project path.
    pub path: String,
    /// Its text, cut to what the cap leaves.
    pub shown: String,
    /// Characters left out by the cap.
    pub cut: usize,
}

/// The rules for an agent working on project path `near` (none: the root's
/// alone); `read` gives a project path's text, `None` when it is missing or
/// may not be read.
pub fn find(near: Option<&str>, read: impl Fn(&str) -> Option<String>) -> Vec<Found> {
    let mut folders: Vec<String> = Vec::new();
    if let Some(near) = near {
        let mut dir = std::path::Path::new(near).parent();
        while let Some(d) = dir.filter(|d| !d.as_os_str().is_empty()) {
            folders.push(d.to_string_lossy().into_owned());
            dir = d.parent();
        }
    }
    folders.push(String::new());
    let nearest = folders.iter().find_map(|dir| {
        let path = if dir.is_empty() {
            NEAREST.to_owned()
        } else {
            format!("{dir}/{NEAREST}")
        };
        read(&path).map(|text| (path, text))
    });
    let at_root = AT_ROOT
        .iter()
        .filter_map(|p| read(p).map(|text| ((*p).to_owned(), text)));
    let mut left = MAX_CHARS;
    let mut found = Vec::new();
    for (path, text) in nearest.into_iter().chain(at_root) {
        let text = text.trim();
        if text.is_empty() {
            continue;
        }
        let total = text.chars().count();
        let shown: String = text.chars().take(left).collect();
        left -= shown.chars().count();
        found.push(Found {
            cut: total - shown.chars().count(),
            path,
            shown,
        });
    }
    found
}

/// The rules as a section of a system prompt ("" when there are none).
pub fn section(found: &[Found]) -> String {
    if found.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "\n\nThe project's rules for agents (follow them; where they disagree with the task, the task wins):",
    );
    for f in found {
        out.push_str(&format!("\nFrom `{}`:\n{}", f.path, f.shown));
        if f.cut > 0 {
            out.push_str(&format!("\n[… {} more characters not shown]", f.cut));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn reader(files: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let files: HashMap<String, String> = files
            .iter()
            .map(|(p, t)| ((*p).to_owned(), (*t).to_owned()))
            .collect();
        move |p| files.get(p).cloned()
    }

    #[test]
    fn the_nearest_agents_md_wins_and_the_roots_other_files_follow() {
        let read = reader(&[
            ("AGENTS.md", "root rules"),
            ("pkg/AGENTS.md", "package rules"),
            ("CLAUDE.md", "claude rules"),
            (".github/copilot-instructions.md", "copilot rules"),
        ]);
        let found = find(Some("pkg/sub/mod.py"), &read);
        let paths: Vec<&str> = found.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "pkg/AGENTS.md",
                "CLAUDE.md",
                ".github/copilot-instructions.md"
            ]
        );
        let found = find(Some("other/mod.py"), &read);
        assert_eq!(found[0].path, "AGENTS.md");
        assert_eq!(find(None, &read)[0].shown, "root rules");
        assert!(find(Some("a.py"), reader(&[])).is_empty());
    }

    #[test]
    fn rules_are_capped_in_all_and_say_what_was_cut() {
        let long = "x".repeat(MAX_CHARS + 500);
        let read = reader(&[("AGENTS.md", long.as_str()), ("CLAUDE.md", "more")]);
        let found = find(Some("a.py"), &read);
        assert_eq!(found[0].shown.chars().count(), MAX_CHARS);
        assert_eq!(found[0].cut, 500);
        assert_eq!(found[1].shown, "", "nothing is left for the next file");
        assert!(section(&found).contains("[… 500 more characters not shown]"));
        assert_eq!(section(&[]), "");
    }

    #[test]
    fn a_file_that_may_not_be_read_is_never_found() {
        // The caller's reader refuses a secret (or a file agents may not read).
        let read = |p: &str| (p != "AGENTS.md").then(|| "rules".to_owned());
        let found = find(Some("a.py"), read);
        assert_eq!(found.len(), 2);
        assert!(found.iter().all(|f| f.path != "AGENTS.md"));
    }
}
