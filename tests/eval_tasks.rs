//! The evaluation's task set is sound: every check fails on the sample
//! project and passes once a correct answer — written the way small models
//! answer, as changed definitions — is spliced in. This also exercises the
//! splicer on realistic replies (lone methods, partial classes, imports,
//! module constants).

use std::path::Path;
use std::process::Command;

use chimera::python::{self, ReplyForm};

fn copy_dir(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            std::fs::create_dir_all(&target).unwrap();
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

fn check(project: &Path, code: &str) -> Result<(), String> {
    let out = Command::new("python3")
        .args(["-B", "-c", code])
        .current_dir(project)
        .output()
        .expect("python3 runs");
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

#[test]
fn every_task_check_fails_before_and_passes_after_a_correct_answer() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("eval");
    let tasks: Vec<serde_json::Value> =
        serde_json::from_str(&std::fs::read_to_string(root.join("tasks.json")).unwrap()).unwrap();
    let solutions: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(root.join("solutions.json")).unwrap())
            .unwrap();
    assert!(tasks.len() >= 72, "the task set has at least 72 tasks");
    let mut failures = Vec::new();
    for t in &tasks {
        let id = t["id"].as_str().unwrap();
        let dir = tempfile::tempdir().unwrap();
        copy_dir(&root.join("project"), dir.path());
        let code = t["check"].as_str().unwrap();
        if check(dir.path(), code).is_ok() {
            failures.push(format!("{id}: the check passes before the edit"));
            continue;
        }
        // One answer for the task's file, or one per file it changes: a
        // reply to splice, or `{"whole": text}` for a file written whole
        // (a move takes a definition out, which splicing never does).
        let answers: Vec<(String, serde_json::Value)> = match &solutions[id] {
            serde_json::Value::Object(per_file) => per_file
                .iter()
                .map(|(f, a)| (f.clone(), a.clone()))
                .collect(),
            serde_json::Value::Null => panic!("no solution for {id}"),
            one => vec![(t["file"].as_str().unwrap().to_owned(), one.clone())],
        };
        let mut broken = None;
        for (path, answer) in answers {
            let file = dir.path().join(&path);
            // A task may create its file.
            let before = std::fs::read_to_string(&file).unwrap_or_default();
            let focus = (path == t["file"].as_str().unwrap())
                .then(|| t["line"].as_u64().map(|l| l as usize - 1))
                .flatten();
            let after = match (&answer["whole"], answer.as_str()) {
                (serde_json::Value::String(whole), _) => Ok(whole.clone()),
                (_, Some(answer)) => match chimera::lang::splice::classify(
                    &chimera::lang::PYTHON,
                    answer,
                    Some(&before),
                ) {
                    ReplyForm::Definitions(code) => {
                        python::splice_definitions(&before, &code, focus).map_err(|e| e.to_string())
                    }
                    ReplyForm::WholeFile(code) => Ok(code),
                    other => Err(format!("classified as {other:?}")),
                },
                _ => Err(format!(
                    "a solution for {path} is a string or {{\"whole\": …}}"
                )),
            };
            match after {
                Ok(after) => {
                    assert!(
                        python::syntax_problem(&after).is_none(),
                        "{id}: spliced {path} does not parse:\n{after}"
                    );
                    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
                    std::fs::write(&file, &after).unwrap();
                }
                Err(e) => broken = Some(format!("{id}: {path}: {e}")),
            }
        }
        if let Some(b) = broken {
            failures.push(b);
            continue;
        }
        if let Err(e) = check(dir.path(), code) {
            failures.push(format!("{id}: check fails after the edit:\n{e}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
