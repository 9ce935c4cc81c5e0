//! The prompts of a code-mode agent: what the model may call, which Python
//! it may use, and the task with its context, in the language of the file.

use super::Problem;
use crate::lang::{self, Language};
use crate::llm::ChatMessage;

pub const SYSTEM: &str = r#"You are a coding agent. You change a software project by writing ONE Python program that calls the host functions below. Reply with the program in a single ```python fenced block and nothing else.

Host functions (paths are relative to the project root):
- get_task() -> str: the task.
- read_file(path) -> str: the text of a file.
- write_file(path, content) -> bool: replace the whole file with `content` (creates it if needed).
- delete_file(path) -> bool: delete a file.
- list_dir(path) -> list[str]: entries of a directory ("" is the root; directories end with "/").
- file_exists(path) -> bool
- search_files(pattern) -> list[str]: files whose path matches a glob like "*.py" or "src/**/*.py", or, if the pattern has no wildcard, files containing that text.
- get_file_tree() -> str: every file of the project, one per line.
- ask_llm(prompt, context) -> str: ask a language model a question (e.g. to write a docstring); returns its answer as text.
- log(message) -> bool: note progress.
- submit_result(summary, changed_files) -> bool: REQUIRED at the end: a one-line summary and the list of paths you changed.

The Python is a restricted subset: str methods, f-strings, lists, dicts, comprehensions, functions, classes, try/except, `re` and `json` work. There is no open(), no os, no pathlib, no subprocess, no `%` string formatting and no textwrap: use the host functions and f-strings. Edit text with str methods (split("\n"), index, join, replace). Keep the program short. Write each changed file once with its complete new content.

Example (add a docstring to function `load` in `app/io.py`):
```python
path = "app/io.py"
src = read_file(path)
lines = src.split("\n")
for i, line in enumerate(lines):
    if line.lstrip().startswith("def load("):
        indent = line[: len(line) - len(line.lstrip())] + "    "
        lines.insert(i + 1, indent + '"""Load the file and return its records."""')
        break
write_file(path, "\n".join(lines))
submit_result("Added a docstring to load", [path])
```"#;

/// The host functions a program is offered beyond [`SYSTEM`]'s, as far as
/// `caps` allows them: `mcp_call` (naming the MCP servers it may use),
/// `env`, `snapshot` and `rollback`. Nothing when none is.
pub fn more_functions(hub: &crate::mcp::Hub, caps: &crate::capabilities::Capabilities) -> String {
    let mut lines = Vec::new();
    let servers: Vec<&str> = hub
        .server_names()
        .filter(|s| caps.may_use_mcp_server(s))
        .collect();
    if !servers.is_empty() {
        lines.push(format!(
            "- mcp_call(server, tool, args) -> str: call the tool `tool` of an MCP server ({}) with a dict of its arguments; returns its text output.",
            servers.join(", ")
        ));
    }
    if caps.may_read_env() {
        lines.push("- env(name, default=None) -> str: an environment variable you may read (os.getenv works too); env() gives all of them.".into());
    }
    if caps.check_snapshot().is_ok() {
        lines.push("- snapshot(name) -> str: checkpoint your changes so far; returns the checkpoint's name.".into());
    }
    if caps.check_rollback().is_ok() {
        lines.push("- rollback(name) -> str: undo your changes made since checkpoint `name` (e.g. when the tests fail after them).".into());
    }
    if lines.is_empty() {
        return String::new();
    }
    format!("\n\nAlso:\n{}", lines.join("\n"))
}

/// What the model is asked to answer with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EditForm {
    /// A program calling host functions (fits larger models; multi-file).
    Program,
    /// The new version of each changed definition (fits small models).
    Definitions,
}

/// The system prompt of the definitions form for a file in `language`.
pub fn system_definitions(language: &Language) -> String {
    let (name, fence) = (language.name, language.fence);
    let (what, head) = match language.id {
        "python" => ("function, method or class", "its `def` or `class` line"),
        _ => ("function, method or type", "its signature line"),
    };
    format!(
        "You are an expert {name} programmer editing a file of the user's project. Reply with the complete new version of each {what} you change or add, in ONE ```{fence} code block, and nothing else.
- Write every changed definition in full, with {head}, and keep its name.
- Do not repeat definitions you do not change.
- To change a method, you may write just that method ({}).
- Put imports you add at the top of the block.
- Keep the code valid {name}: close every string and bracket.",
        language.method_example,
    )
}

pub fn system(form: EditForm, language: &Language) -> String {
    match form {
        EditForm::Program => SYSTEM.to_owned(),
        EditForm::Definitions => system_definitions(language),
    }
}

/// The file the task is about, as shown to the model.
#[derive(Debug, Clone)]
pub struct TargetView {
    pub path: String,
    /// The file's language (Python for a file of no known language).
    pub language: &'static Language,
    /// The file's text, or only the focus when the file does not fit (the
    /// rest is then in `outline`).
    pub shown: String,
    /// What the part of the file not shown defines, one per line
    /// ("line 91: def name(args)"); empty when the whole file is shown.
    pub outline: Vec<String>,
    /// "function `parse_config` (lines 4-10)" when the cursor is in one.
    pub focus: Option<String>,
    /// Callers and callees of the focus, one per line (`name: signature`).
    pub related: Vec<String>,
    /// `def name(args)` when the focus is a top-level function: what a
    /// last repair round may ask the model to write anew.
    pub focus_function: Option<String>,
    /// The file does not exist yet: the task creates it.
    pub new: bool,
    /// Files that fit the task too, as (path, text shown), for reference.
    pub references: Vec<(String, String)>,
    /// Other files the answer may change, as (path, text shown).
    pub editable: Vec<(String, String)>,
    /// The project's tests of this file fail now (a task to fix it).
    pub failing_tests: Option<super::checks::Failing>,
}

/// The first user message: the task, the selection, the target file and
/// the project's files.
pub fn task_message(
    form: EditForm,
    task: &str,
    selection: Option<&str>,
    target: Option<&TargetView>,
    tree: &[String],
) -> ChatMessage {
    let mut msg = String::new();
    let fence = target.map_or("python", |t| t.language.fence);
    if let Some(t) = target {
        msg.push_str(&target_part(t));
    }
    if let Some(sel) = selection {
        msg.push_str(&format!(
            "\nThe user selected this part (it is what the task is about):\n```\n{sel}\n```\n"
        ));
    }
    if form == EditForm::Program {
        let listed: Vec<&str> = tree.iter().take(200).map(String::as_str).collect();
        msg.push_str(&format!("\nProject files:\n{}\n", listed.join("\n")));
        if tree.len() > listed.len() {
            msg.push_str(&format!(
                "[... and {} more; use search_files]\n",
                tree.len() - listed.len()
            ));
        }
    }
    msg.push_str(&format!("\nTask: {task}\n"));
    let several = target.is_some_and(|t| !t.editable.is_empty());
    let comment = target.map_or("#", |t| t.language.line_comment);
    msg.push_str(&match form {
        EditForm::Program => "\nWrite the Python program now.".to_owned(),
        EditForm::Definitions if several => format!("\nSeveral files may change: reply with one ```{fence} block per file you change, each starting with the line `{comment} file: <its path>`, holding that file's changed definitions."),
        EditForm::Definitions => format!("\nReply with the changed definitions in one ```{fence} block."),
    });
    ChatMessage::user(msg)
}

/// What the first message shows of the target: the files beside it,
/// its text (or its focus and an outline of the rest), the cursor, the
/// related code and the tests that fail now.
fn target_part(t: &TargetView) -> String {
    let mut msg = String::new();
    let fence = t.language.fence;
    for (path, text) in &t.references {
        msg.push_str(&format!(
            "File `{path}` (for reference):\n```{}\n{}\n```\n\n",
            lang::of_file(path).fence,
            text.trim_end()
        ));
    }
    for (path, text) in &t.editable {
        msg.push_str(&format!(
            "File `{path}`:\n```{}\n{}\n```\n\n",
            lang::of_file(path).fence,
            text.trim_end()
        ));
    }
    if t.new {
        msg.push_str(&format!(
            "File `{}` does not exist yet: the task creates it. Write its whole content.\n",
            t.path
        ));
    } else if t.outline.is_empty() {
        msg.push_str(&format!(
            "File `{}`:\n```{fence}\n{}\n```\n",
            t.path,
            t.shown.trim_end()
        ));
    } else {
        if !t.shown.is_empty() {
            let part = t.focus.as_deref().unwrap_or("the part the task is about");
            msg.push_str(&format!(
                "File `{}`, {part}:\n```{fence}\n{}\n```\n",
                t.path,
                t.shown.trim_end()
            ));
        }
        let outline: Vec<String> = t.outline.iter().map(|l| format!("- {l}")).collect();
        msg.push_str(&format!(
            "\nThe rest of `{}` is too long to show. It also defines (leave these out of your answer; they stay as they are):\n{}\n",
            t.path,
            outline.join("\n")
        ));
    }
    if let Some(focus) = &t.focus {
        msg.push_str(&format!("\nThe cursor is in {focus}.\n"));
    }
    if !t.related.is_empty() {
        msg.push_str(&format!("\nRelated code:\n{}\n", t.related.join("\n")));
    }
    if let Some(f) = &t.failing_tests {
        msg.push_str(&format!(
            "\nThe project's tests fail now ({}):\n```\n{}\n```\n",
            f.said,
            f.output.trim_end()
        ));
    }
    msg
}

/// Earlier attempts the user rejected, with what they said: the model must
/// do better, not the same again.
pub fn feedback_message(feedback: &[crate::store::Feedback]) -> ChatMessage {
    let mut msg = String::from("The user rejected your earlier attempt(s) at this task.\n");
    for (i, f) in feedback.iter().enumerate() {
        msg.push_str(&format!(
            "\nAttempt {}:\n```diff\n{}```\nThe user said: {}\n",
            i + 1,
            f.attempt.chars().take(6000).collect::<String>(),
            f.feedback
        ));
    }
    msg.push_str("\nDo the task again, following the user's feedback.");
    ChatMessage::user(msg)
}

/// The message asking the model to fix its answer after `problem`.
pub fn repair_message(form: EditForm, problem: &Problem, language: &Language) -> ChatMessage {
    let fence = language.fence;
    ChatMessage::user(match (form, problem.whole_file()) {
        (EditForm::Program, _) => format!(
            "Your program did not work:\n```\n{problem}\n```\nFix it and reply with the complete corrected program in one ```python block. Remember to call submit_result at the end."
        ),
        (EditForm::Definitions, None) => format!(
            "That did not work:\n```\n{problem}\n```\nReply again with the complete corrected definitions in one ```{fence} block, and nothing else."
        ),
        (EditForm::Definitions, Some(path)) => format!(
            "That did not work:\n```\n{problem}\n```\nReply again with the whole file `{path}`, corrected, in one ```{fence} block, and nothing else."
        ),
    })
}

/// A fresh request for the function `signature` alone, without its old
/// code: small models shown a function tend to answer with it unchanged,
/// round after round; asked for it anew they write the change.
pub fn anew_message(task: &str, signature: &str, language: &Language) -> ChatMessage {
    ChatMessage::user(format!(
        "Task: {}\n\nWrite the function `{signature}` anew so that it does this. Reply with the complete function in one ```{} block, and nothing else.",
        task.trim(),
        language.fence
    ))
}

/// The program in a reply: the first ```python (or ```py, or bare ```)
/// fenced block, else the whole reply.
pub fn extract_code(reply: &str) -> String {
    extract_code_as(reply, &crate::lang::PYTHON)
}

/// [`extract_code`] for a reply in `language`: its fence (```go, ```rs, …)
/// is the one taken.
pub fn extract_code_as(reply: &str, language: &crate::lang::Language) -> String {
    // An odd number of fences after code with no opening fence (1.5B
    // sometimes starts its answer inside the block): the first one closes it.
    if let Some(first) = reply.find("```") {
        let head = &reply[..first];
        let code_like = language.id == "python"
            && head.lines().any(|l| {
                ["def ", "class ", "async def ", "import ", "from ", "@"]
                    .iter()
                    .any(|k| l.starts_with(k))
            });
        if code_like && reply.matches("```").count() % 2 == 1 {
            return head.to_owned();
        }
    }
    let mut best: Option<String> = None;
    let mut rest = reply;
    while let Some(start) = rest.find("```") {
        let after = &rest[start + 3..];
        let (tag, body) = after.split_once('\n').unwrap_or((after, ""));
        let tag = tag.trim().to_lowercase();
        let end = body.find("```").unwrap_or(body.len());
        let code = body[..end].to_owned();
        if language.is_fence(&tag) {
            return code;
        }
        // A program is Python whatever the file's language.
        let program = lang::PYTHON.is_fence(&tag) && crate::python::calls_host(&code);
        if best.is_none() && (tag.is_empty() || program) {
            best = Some(code);
        }
        rest = &body[(end + 3).min(body.len())..];
    }
    best.unwrap_or_else(|| reply.trim().to_owned())
}

/// The code blocks of a reply that may change several files, each with
/// the file it is for: named by a `# file: path` comment line (which may
/// also start a new file inside one block), else by the line before the
/// block ("File `b.py`:"). `None`: the block names no file. A name that is
/// none of `files` is kept as written, to be refused by name.
pub fn file_blocks(reply: &str, files: &[String]) -> Vec<(Option<String>, String)> {
    let file_named = |line: &str| -> Option<String> {
        let m = super::locate::mentions(line);
        let token = m.files.first()?;
        Some(
            super::locate::named_files(&m, files)
                .into_iter()
                .next()
                .unwrap_or_else(|| token.trim_start_matches("./").to_owned()),
        )
    };
    // `# file: a.py`, `// a.go`, `-- File a.lua`: a comment that is a path.
    let marker = |line: &str| -> Option<String> {
        let line = line.trim();
        let c = ["#", "//", "--"]
            .iter()
            .find_map(|m| line.strip_prefix(m))?
            .trim();
        let c = c
            .strip_prefix("file:")
            .or_else(|| c.strip_prefix("File:"))
            .or_else(|| c.strip_prefix("file "))
            .or_else(|| c.strip_prefix("File "))
            .unwrap_or(c)
            .trim();
        (!c.contains(' ')).then(|| file_named(c)).flatten()
    };
    let mut out: Vec<(Option<String>, String)> = Vec::new();
    let mut rest = reply;
    // A reply that starts with `# file:` and no opening fence (1.5B does
    // this): the text up to the first fence, which closes it, is a block.
    let head_end = reply.find("```").unwrap_or(reply.len());
    if let Some(first) = reply[..head_end].lines().position(|l| marker(l).is_some()) {
        let head: Vec<&str> = reply[..head_end].lines().skip(first).collect();
        split_at_markers(&head.join("\n"), None, &marker, &mut out);
        rest = reply.get(head_end + 3..).unwrap_or("");
    }
    while let Some(start) = rest.find("```") {
        let before = rest[..start].lines().rev().find(|l| !l.trim().is_empty());
        let after = &rest[start + 3..];
        let (tag, body) = after.split_once('\n').unwrap_or((after, ""));
        let end = body.find("```").unwrap_or(body.len());
        let code = &body[..end];
        rest = &body[(end + 3).min(body.len())..];
        let tag = tag.trim().to_lowercase();
        if !tag.is_empty() && lang::by_name(&tag).is_none() {
            continue;
        }
        split_at_markers(code, before.and_then(file_named), &marker, &mut out);
    }
    out
}

/// Pushes the parts of `code` onto `out`, each with its file: `file` until
/// the first line `marker` reads as a file name, then that file.
fn split_at_markers(
    code: &str,
    mut file: Option<String>,
    marker: &dyn Fn(&str) -> Option<String>,
    out: &mut Vec<(Option<String>, String)>,
) {
    let mut part = String::new();
    for line in code.lines() {
        if let Some(named) = marker(line) {
            if !part.trim().is_empty() {
                out.push((file.take(), std::mem::take(&mut part)));
            }
            part.clear();
            file = Some(named);
            continue;
        }
        part.push_str(line);
        part.push('\n');
    }
    if !part.trim().is_empty() {
        out.push((file, part));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_definitions_prompt_names_the_files_language() {
        // Python's is the prompt every Python eval was measured with.
        assert_eq!(
            system_definitions(&lang::PYTHON),
            "You are an expert Python programmer editing a file of the user's project. Reply with the complete new version of each function, method or class you change or add, in ONE ```python code block, and nothing else.\n- Write every changed definition in full, with its `def` or `class` line, and keep its name.\n- Do not repeat definitions you do not change.\n- To change a method, you may write just that method (`def name(self, ...):`).\n- Put imports you add at the top of the block.\n- Keep the code valid Python: close every string and bracket."
        );
        let go = system_definitions(&lang::GO);
        assert!(
            go.contains("expert Go programmer") && go.contains("ONE ```go code block"),
            "{go}"
        );
        assert!(
            go.contains("(with its receiver: `func (s *Store) Name(...) { ... }`)"),
            "{go}"
        );
    }

    #[test]
    fn takes_the_first_python_block() {
        let reply = "Here:\n```text\nnot this\n```\n```python\nx = 1\n```\n```python\ny = 2\n```";
        assert_eq!(extract_code(reply), "x = 1\n");
    }

    #[test]
    fn falls_back_to_a_bare_block_then_the_whole_reply() {
        assert_eq!(extract_code("```\nprint(1)\n```"), "print(1)\n");
        assert_eq!(extract_code("print(2)"), "print(2)");
        assert_eq!(
            extract_code("def f():\n    return 1\n```\n\nThe cursor is in `f`."),
            "def f():\n    return 1\n"
        );
        assert_eq!(
            extract_code("```python\nunterminated = 1\n"),
            "unterminated = 1\n"
        );
    }

    #[test]
    fn task_message_carries_file_focus_selection_and_tree() {
        let target = TargetView {
            path: "a.py".into(),
            language: &lang::PYTHON,
            shown: "def f(): pass\n".into(),
            outline: vec![],
            focus: Some("function `f` (lines 1-1)".into()),
            focus_function: Some("def f()".into()),
            related: vec!["g: def g(): return f()".into()],
            new: false,
            references: vec![("b.py".into(), "def g(): return f()\n".into())],
            editable: vec![],
            failing_tests: Some(crate::agent::checks::Failing {
                said: "1 failed".into(),
                output: "FAILED test_a.py::test_f - assert 1 == 2".into(),
            }),
        };
        let m = task_message(
            EditForm::Program,
            "add a docstring",
            Some("def f(): pass"),
            Some(&target),
            &["a.py".into()],
        );
        for want in [
            "Task: add a docstring",
            "`a.py`",
            "selected",
            "cursor is in function `f`",
            "def g()",
            "Project files",
            "File `b.py` (for reference)",
            "tests fail now (1 failed)",
            "test_a.py::test_f - assert 1 == 2",
        ] {
            assert!(m.content.contains(want), "{want}: {}", m.content);
        }
        let m = task_message(
            EditForm::Definitions,
            "x",
            None,
            Some(&target),
            &["a.py".into()],
        );
        assert!(!m.content.contains("Project files"));
    }

    #[test]
    fn blocks_of_several_files_are_told_apart_by_their_markers() {
        let files = vec![
            "inventory/items.py".to_owned(),
            "inventory/report.py".to_owned(),
        ];
        let reply = "Here is the change.\n\n```python\n# file: inventory/report.py\ndef f():\n    pass\n```\n\nFile `items.py`:\n```python\ndef g():\n    pass\n```\n```python\ndef h():\n    pass\n# file: new.py\nX = 1\n```\n```text\nnot code\n```";
        let blocks = file_blocks(reply, &files);
        assert_eq!(
            blocks,
            vec![
                (
                    Some("inventory/report.py".into()),
                    "def f():\n    pass\n".into()
                ),
                (
                    Some("inventory/items.py".into()),
                    "def g():\n    pass\n".into()
                ),
                (None, "def h():\n    pass\n".into()),
                (Some("new.py".into()), "X = 1\n".into()),
            ]
        );
        assert_eq!(file_blocks("no code here", &files), vec![]);
        // No opening fence: the first fence closes what the markers began.
        let unopened = "# file: inventory/items.py\ndef g():\n    pass\n\n# file: inventory/report.py\ndef f():\n    pass\n```\n\nThe cursor is now in `f`.";
        assert_eq!(
            file_blocks(unopened, &files),
            vec![
                (
                    Some("inventory/items.py".into()),
                    "def g():\n    pass\n\n".into()
                ),
                (
                    Some("inventory/report.py".into()),
                    "def f():\n    pass\n".into()
                ),
            ]
        );
        // A comment that is prose is code, not a marker.
        let one = file_blocks("```python\n# fix the loop\nx = 1\n```", &files);
        assert_eq!(one, vec![(None, "# fix the loop\nx = 1\n".into())]);
    }
}
