//! Chooses what the model sees of the file the task is about (found by
//! [`super::locate`]): the definition in focus (named in the task, else
//! under the cursor), its callers and callees in the file, all trimmed to
//! the model's context window.

use crate::lang::{self, DefKind, Definition};

use super::prompt::TargetView;

fn describe(d: &Definition) -> String {
    let kind = match d.kind {
        DefKind::Function => "function",
        DefKind::Class => "class",
        DefKind::Method => "method",
    };
    let name = d.qualified_name();
    format!(
        "{kind} `{name}` (lines {}-{})",
        d.start_line + 1,
        d.end_line + 1
    )
}

/// The line of `d` that names it (`def mean(xs):`, `func (s *Store)
/// Add(n int) {`), without the colon or brace that opens its body.
fn signature(text: &str, d: &Definition) -> String {
    let start = text[..d.name_start].rfind('\n').map_or(0, |i| i + 1);
    let end = text[d.name_start..]
        .find('\n')
        .map_or(text.len(), |i| d.name_start + i);
    text[start..end]
        .trim()
        .trim_end_matches(['{', ':'])
        .trim_end()
        .to_owned()
}

/// The definition the task is about: one the task names, else the one
/// under the cursor.
pub fn focus<'a>(
    defs: &'a [Definition],
    task: &str,
    cursor_line: Option<usize>,
) -> Option<&'a Definition> {
    let mentions = super::locate::mentions(task);
    let named = mentions
        .names()
        .find_map(|n| defs.iter().find(|d| d.is_named(n)));
    named.or_else(|| cursor_line.and_then(|l| crate::python::definition_at(defs, l)))
}

/// The most of a file shown whole when an answer is definitions and
/// the task has a focus: beyond it the model sees the focus in full and the
/// rest as an outline. On a 2-core machine a small model reads about 60
/// tokens a second, so a whole 12 KB module costs a minute before the
/// first word of the answer; the definitions it changes are what it needs.
pub const FOCUSED_VIEW_CHARS: usize = 6_000;

/// Builds the view of `text` (at `path`) for the prompt, within `budget`
/// characters; `focused`: the answer is definitions, so a focus and an
/// outline of the rest are enough for a long file.
pub fn target_view(
    path: &str,
    text: &str,
    task: &str,
    cursor_line: Option<usize>,
    budget: usize,
    focused: bool,
) -> TargetView {
    let language = lang::of_file(path);
    let defs = match lang::is_source(path) {
        true => lang::definitions(language, text),
        false => vec![],
    };
    let focus = focus(&defs, task, cursor_line);
    let budget = match focus {
        Some(_) if focused => budget.min(FOCUSED_VIEW_CHARS),
        _ => budget,
    };
    let related = focus.map_or_else(Vec::new, |f| related(text, &defs, f));
    let (shown, outline) = match text.len() <= budget {
        true => (text.to_owned(), vec![]),
        false => cut_to(text, &defs, focus, budget),
    };
    TargetView {
        path: path.to_owned(),
        language,
        shown,
        outline,
        focus: focus.map(describe),
        related,
        focus_function: focus
            .filter(|f| f.kind == DefKind::Function && f.parent.is_none())
            .map(|f| signature(text, f)),
        new: false,
        references: vec![],
        editable: vec![],
        failing_tests: None,
    }
}

/// The definitions of `defs` that call `focus` or that it calls, at most
/// 12, each with its signature and line.
fn related(text: &str, defs: &[Definition], f: &Definition) -> Vec<String> {
    let body = &text[f.start..f.end];
    let mut related = Vec::new();
    for d in defs {
        if d.start == f.start || d.kind == DefKind::Class {
            continue;
        }
        let calls_focus = text[d.start..d.end].contains(&format!("{}(", f.name))
            && !(f.start >= d.start && f.end <= d.end);
        let called =
            body.contains(&format!("{}(", d.name)) && !(d.start >= f.start && d.end <= f.end);
        let how = match (calls_focus, called) {
            (true, _) => "calls it",
            (false, true) => "it calls",
            (false, false) => continue,
        };
        let line = d.start_line + 1;
        related.push(format!("- {how}: {} (line {line})", signature(text, d)));
    }
    related.truncate(12);
    related
}

/// A file too big for the window: the focus in full, and the rest as a
/// list of what it defines, within `budget`. The list is prose outside
/// the code block: as code (or comments) in the block, small models copied
/// it back into their answer — on a real package, 300 tokens of outline a
/// reply, half a minute each on 2 cores.
fn cut_to(
    text: &str,
    defs: &[Definition],
    focus: Option<&Definition>,
    budget: usize,
) -> (String, Vec<String>) {
    let shown: String = focus
        .map(|f| text[f.start..f.end].chars().take(budget / 2).collect())
        .unwrap_or_default();
    let mut room = budget.saturating_sub(shown.len());
    let mut outline = Vec::new();
    for d in defs
        .iter()
        .filter(|d| d.parent.is_none() || d.kind == DefKind::Method)
    {
        if focus.is_some_and(|f| f.start == d.start) {
            continue;
        }
        let indent = if d.kind == DefKind::Method { "  " } else { "" };
        let line = format!("line {}: {indent}{}", d.start_line + 1, signature(text, d));
        if line.len() + 3 > room {
            break;
        }
        room -= line.len() + 3;
        outline.push(line);
    }
    (shown, outline)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SRC: &str = "def helper(x):\n    return x\n\n\ndef parse_config(path):\n    return helper(path)\n\n\ndef main():\n    parse_config('a')\n";

    #[test]
    fn focus_prefers_the_name_in_the_task_then_the_cursor() {
        let defs = crate::python::definitions(SRC);
        assert_eq!(
            focus(&defs, "add a docstring to parse_config", Some(0))
                .unwrap()
                .name,
            "parse_config"
        );
        assert_eq!(
            focus(&defs, "add a docstring", Some(9)).unwrap().name,
            "main"
        );
        assert!(focus(&defs, "do something", None).is_none());
    }

    #[test]
    fn view_names_focus_callers_and_callees() {
        let v = target_view("a.py", SRC, "document parse_config", None, 10_000, true);
        assert_eq!(
            v.focus.as_deref(),
            Some("function `parse_config` (lines 5-6)")
        );
        assert!(
            v.related.iter().any(|r| r.contains("calls it: def main()")),
            "{:?}",
            v.related
        );
        assert!(
            v.related
                .iter()
                .any(|r| r.contains("it calls: def helper(x) (line 1)")),
            "{:?}",
            v.related
        );
        assert_eq!(v.shown, SRC);
    }

    #[test]
    fn a_go_file_has_its_focus_and_signatures_in_go() {
        let src = "package m\n\nfunc helper(x int) int {\n\treturn x\n}\n\n// Parse parses.\nfunc (c *Config) Parse(path string) error {\n\treturn helper(1)\n}\n";
        let v = target_view(
            "m/config.go",
            src,
            "document Config.Parse",
            None,
            10_000,
            true,
        );
        assert_eq!(v.language.id, "go");
        assert_eq!(
            v.focus.as_deref(),
            Some("method `Config.Parse` (lines 7-10)")
        );
        assert_eq!(v.related, ["- it calls: func helper(x int) int (line 3)"]);
        let v = target_view(
            "m/config.go",
            src,
            "make helper double x",
            None,
            10_000,
            true,
        );
        assert_eq!(v.focus_function.as_deref(), Some("func helper(x int) int"));
    }

    #[test]
    fn a_long_file_answered_with_definitions_shows_the_focus_and_an_outline() {
        let mut long = SRC.to_owned();
        while long.len() <= FOCUSED_VIEW_CHARS {
            long.push_str(&format!("\n\ndef filler_{}():\n    return 1\n", long.len()));
        }
        let window = 100_000;
        let v = target_view("a.py", &long, "document parse_config", None, window, true);
        assert!(v.shown.len() <= FOCUSED_VIEW_CHARS, "{}", v.shown.len());
        assert_eq!(v.shown, "def parse_config(path):\n    return helper(path)");
        assert!(
            v.outline.iter().any(|l| l == "line 1: def helper(x)"),
            "{:?}",
            v.outline
        );
        // A whole-file answer needs the whole file; so does a task with no focus.
        let whole = target_view("a.py", &long, "document parse_config", None, window, false);
        assert_eq!(whole.shown, long);
        let unfocused = target_view("a.py", &long, "tidy this up", None, window, true);
        assert_eq!(unfocused.shown, long);
    }

    #[test]
    fn a_file_too_big_becomes_an_outline_with_the_focus() {
        let mut big = SRC.to_owned();
        for i in 0..50 {
            big.push_str(&format!("\n\ndef filler_{i}():\n    return {i}\n"));
        }
        let v = target_view("a.py", &big, "document parse_config", None, 1500, false);
        // Nothing of the outline is in the code a model could echo back.
        assert_eq!(v.shown, "def parse_config(path):\n    return helper(path)");
        assert!(
            v.outline.iter().any(|l| l == "line 1: def helper(x)"),
            "{:?}",
            v.outline
        );
        assert!(
            v.outline.iter().any(|l| l.ends_with(": def filler_3()")),
            "{:?}",
            v.outline
        );
        let shown = v.shown.len() + v.outline.iter().map(|l| l.len() + 3).sum::<usize>();
        assert!(shown <= 1500, "{shown}");
    }
}
