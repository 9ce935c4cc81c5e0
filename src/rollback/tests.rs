use std::collections::HashMap;
use std::os::unix::fs::PermissionsExt;

use super::*;
use crate::sync::{self, OpenBuffers};

fn project() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(".git")).unwrap();
    std::fs::write(dir.path().join("a.py"), "a = 1\n").unwrap();
    std::fs::write(dir.path().join("run.sh"), "echo hi\n").unwrap();
    std::fs::set_permissions(
        dir.path().join("run.sh"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    let store = Store::open(dir.path()).unwrap();
    sync::import(&store, dir.path(), 1 << 20, &OpenBuffers::default()).unwrap();
    (dir, store)
}

fn change(dir: &Path, store: &Store, path: &str, text: Option<&str>) {
    let abs = dir.join(path);
    match text {
        Some(t) => std::fs::write(&abs, t).unwrap(),
        None => std::fs::remove_file(&abs).unwrap(),
    }
    let p = crate::paths::ProjectPath::parse(path).unwrap();
    sync::sync_from_disk(store, dir, &p, 1 << 20).unwrap();
}

#[test]
fn rollback_restores_files_modes_and_stable_and_can_itself_be_undone() {
    let (dir, store) = project();
    let snap = store.snapshot_create("start").unwrap();
    assert_eq!(snap.files, 2);
    change(dir.path(), &store, "a.py", Some("a = 2\n"));
    change(dir.path(), &store, "run.sh", None);
    change(dir.path(), &store, "new.py", Some("n = 1\n"));
    let plan = plan(&store, &snap.id).unwrap();
    assert_eq!(plan.restore, ["a.py", "run.sh"]);
    assert_eq!(plan.delete, ["new.py"]);
    assert!(
        plan.describe(false)
            .contains("restore 2 file(s), delete 1 file(s)"),
        "{}",
        plan.describe(false)
    );
    // A dry run changes nothing.
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a.py")).unwrap(),
        "a = 2\n"
    );
    let applied = apply(&store, dir.path(), &plan, &HashMap::new()).unwrap();
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a.py")).unwrap(),
        "a = 1\n"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("run.sh")).unwrap(),
        "echo hi\n"
    );
    let mode = std::fs::metadata(dir.path().join("run.sh"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o755);
    assert!(!dir.path().join("new.py").exists());
    assert!(
        super::plan(&store, &snap.id).unwrap().is_empty(),
        "stable agrees"
    );
    let restored = store.stable_entry("run.sh").unwrap().unwrap();
    assert_eq!(
        restored.size, 8,
        "the stable layer has the restored file's size"
    );
    // Rolling back to the snapshot taken just before undoes the rollback.
    let before = applied.before.unwrap();
    let undo = super::plan(&store, &before.id).unwrap();
    apply(&store, dir.path(), &undo, &HashMap::new()).unwrap();
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a.py")).unwrap(),
        "a = 2\n"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("new.py")).unwrap(),
        "n = 1\n"
    );
    assert!(!dir.path().join("run.sh").exists());
    let ids: Vec<String> = store
        .snapshots()
        .unwrap()
        .into_iter()
        .map(|s| s.message)
        .collect();
    assert_eq!(ids[2], "start", "newest first: {ids:?}");
}

#[test]
fn loaded_buffers_are_left_to_the_editor() {
    let (dir, store) = project();
    let snap = store.snapshot_create("start").unwrap();
    change(dir.path(), &store, "a.py", Some("a = 2\n"));
    let plan = plan(&store, &snap.id).unwrap();
    let buffers = HashMap::from([("a.py".to_string(), "a = 2\n".to_string())]);
    let applied = apply(&store, dir.path(), &plan, &buffers).unwrap();
    assert_eq!(
        applied.buffers,
        vec![("a.py".to_string(), "a = 1\n".to_string())]
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a.py")).unwrap(),
        "a = 2\n",
        "the file of a loaded buffer is not written behind it"
    );
}

#[test]
fn effects_since_the_snapshot_are_named_as_irreversible() {
    let (_dir, store) = project();
    store
        .effect_record("llm", Some("ag"), "before", "x", 5)
        .unwrap();
    let snap = store.snapshot_create("start").unwrap();
    store
        .effect_record("llm", Some("ag"), "prompt", "reply", 120)
        .unwrap();
    store
        .effect_record("command", Some("ag"), "pytest", "ok", 900)
        .unwrap();
    let plan = plan(&store, &snap.id).unwrap();
    assert_eq!(plan.effects.len(), 2);
    let text = plan.describe(false);
    assert!(
        text.contains("cannot be undone: 1 command, 1 llm"),
        "{text}"
    );
    let effects = store.effects(0, Some("llm")).unwrap();
    assert_eq!(effects.len(), 2);
    assert_eq!(effects[1].snapshot_id.as_deref(), Some(snap.id.as_str()));
    assert_eq!(effects[0].snapshot_id, None);
    // Outputs are capped.
    let big = "x".repeat(10_000);
    store
        .effect_record("network", None, "get", &big, 1)
        .unwrap();
    assert!(store.effects(0, Some("network")).unwrap()[0].output.len() < 4200);
}

#[test]
fn a_rollback_into_open_buffers_says_those_wait_for_a_write() {
    let (dir, store) = project();
    let snap = store.snapshot_create("start").unwrap();
    change(dir.path(), &store, "a.py", Some("a = 2\n"));
    let plan = plan(&store, &snap.id).unwrap();
    let said = plan.describe_with(false, &["a.py".to_owned()]);
    assert!(
        said.contains("restore a.py (in its open buffer, not yet written)")
            && said.contains("1 file(s) were restored in their open buffers")
            && said.contains("everything is undone once those buffers are written"),
        "{said}"
    );
    assert!(!said.contains("everything is undone."), "{said}");
    assert!(plan.describe(false).contains("everything is undone."));
}
