//! The prompts of a code-mode agent: what the model may call, which Python
//! it may use, and the task with its context.

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

/// Caps the text of a file shown in the prompt, in characters.
const FILE_CAP: usize = 12_000;

/// The first user message: the task, the selection, the current file and
/// the project's files.
pub fn task_message(task: &str, context: Option<&str>, file: Option<(&str, &str)>, tree: &[String]) -> ChatMessage {
    let mut msg = format!("Task: {task}\n");
    if let Some((path, text)) = file {
        let shown: String = text.chars().take(FILE_CAP).collect();
        let more = if shown.len() < text.len() { "\n[... file continues ...]" } else { "" };
        msg.push_str(&format!("\nThe user is editing `{path}`:\n```python\n{shown}{more}\n```\n"));
    }
    if let Some(ctx) = context {
        msg.push_str(&format!("\nThe user selected this part (it is what the task is about):\n```\n{ctx}\n```\n"));
    }
    let listed: Vec<&str> = tree.iter().take(200).map(String::as_str).collect();
    msg.push_str(&format!("\nProject files:\n{}\n", listed.join("\n")));
    if tree.len() > listed.len() {
        msg.push_str(&format!("[... and {} more; use search_files]\n", tree.len() - listed.len()));
    }
    msg.push_str("\nWrite the Python program now.");
    ChatMessage::user(msg)
}

/// The message asking the model to fix its program after `problem`.
pub fn repair_message(problem: &str) -> ChatMessage {
    ChatMessage::user(format!(
        "Your program did not work:\n```\n{problem}\n```\nFix it and reply with the complete corrected program in one ```python block. Remember to call submit_result at the end."
    ))
}

/// The program in a reply: the first ```python (or ```py, or bare ```)
/// fenced block, else the whole reply.
pub fn extract_code(reply: &str) -> String {
    let mut best: Option<String> = None;
    let mut rest = reply;
    while let Some(start) = rest.find("```") {
        let after = &rest[start + 3..];
        let (lang, body) = after.split_once('\n').unwrap_or((after, ""));
        let lang = lang.trim().to_lowercase();
        let end = body.find("```").unwrap_or(body.len());
        let code = body[..end].to_owned();
        if lang == "python" || lang == "py" || lang == "python3" {
            return code;
        }
        if best.is_none() && lang.is_empty() {
            best = Some(code);
        }
        rest = &body[(end + 3).min(body.len())..];
    }
    best.unwrap_or_else(|| reply.trim().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn takes_the_first_python_block() {
        let reply = "Here:\n```text\nnot this\n```\n```python\nx = 1\n```\n```python\ny = 2\n```";
        assert_eq!(extract_code(reply), "x = 1\n");
    }

    #[test]
    fn falls_back_to_a_bare_block_then_the_whole_reply() {
        assert_eq!(extract_code("```\nprint(1)\n```"), "print(1)\n");
        assert_eq!(extract_code("print(2)"), "print(2)");
        assert_eq!(extract_code("```python\nunterminated = 1\n"), "unterminated = 1\n");
    }

    #[test]
    fn task_message_carries_file_selection_and_tree() {
        let m = task_message("add a docstring", Some("def f(): pass"), Some(("a.py", "def f(): pass\n")), &["a.py".into()]);
        assert!(m.content.contains("Task: add a docstring"));
        assert!(m.content.contains("`a.py`"));
        assert!(m.content.contains("selected"));
    }
}
