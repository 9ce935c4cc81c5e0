//! A Lua project's tests: `busted` where the project has a `.busted`
//! (its options: where the specs are, which Lua), run in that folder,
//! with the project's LuaRocks tree (`lua_modules`) read where it is.
//! Its report is asked for as TAP, which every runner's reader here
//! already knows, whatever output the project's `.busted` chose.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::lang::environment::Environment;

/// Where a Lua file's tests run (see the module's comment).
pub fn find(
    root: &Path,
    start: &Path,
    _var: &dyn Fn(&str) -> Option<OsString>,
) -> Option<Environment> {
    let (dir, ()) = super::nearest(root, start, ".busted", |_| Some(()))?;
    let folder = super::folder_of(root, &dir);
    let rocks = dir.join("lua_modules");
    let rocks: Vec<PathBuf> = std::fs::symlink_metadata(&rocks)
        .is_ok_and(|m| m.is_dir())
        .then_some(rocks)
        .into_iter()
        .collect();
    Some(Environment {
        program: PathBuf::from("busted"),
        command: Some(vec!["busted".into(), "--output=TAP".into()]),
        found: format!(
            "busted, as {} says",
            match folder.as_str() {
                "" => ".busted".to_owned(),
                f => format!("{f}/.busted"),
            }
        ),
        linked: rocks.iter().map(|r| super::folder_of(root, r)).collect(),
        readable: rocks,
        folder,
        adds: "luarocks install --local".into(),
        has_runner: true,
        ..Environment::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busted_runs_where_the_project_says_so() {
        let t = tempfile::tempdir().unwrap();
        assert!(find(t.path(), t.path(), &|_| None).is_none());
        std::fs::write(t.path().join(".busted"), "return {}\n").unwrap();
        std::fs::create_dir_all(t.path().join("lua_modules")).unwrap();
        let e = find(t.path(), &t.path().join("lua"), &|_| None).unwrap();
        assert_eq!(e.command.unwrap(), ["busted", "--output=TAP"]);
        assert_eq!(e.linked, ["lua_modules"]);
    }
}
