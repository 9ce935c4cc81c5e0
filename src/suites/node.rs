//! A JavaScript or TypeScript project's tests: the `test` script of the
//! nearest `package.json` (npm's placeholder that only fails is none), run
//! by the package manager its lockfile names (`pnpm-lock.yaml`,
//! `yarn.lock`, `bun.lock`, else npm), with the project's `node_modules`
//! read where they are: the scratch copy links to them.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::lang::environment::Environment;

/// The script npm writes into a new `package.json`: no tests.
const PLACEHOLDER: &str = "no test specified";

/// The test script of a `package.json`'s text, if it has a real one.
fn test_script(text: &str) -> Option<String> {
    let json: serde_json::Value = serde_json::from_str(text).ok()?;
    let script = json.get("scripts")?.get("test")?.as_str()?;
    (!script.contains(PLACEHOLDER) && !script.trim().is_empty()).then(|| script.to_owned())
}

/// A package manager: the lockfile that names it, how it runs the test
/// script, how a package is added for development.
type Manager = (&'static str, &'static [&'static str], &'static str);

const MANAGERS: &[Manager] = &[
    ("pnpm-lock.yaml", &["pnpm", "test"], "pnpm add -D"),
    ("yarn.lock", &["yarn", "test"], "yarn add -D"),
    ("bun.lock", &["bun", "run", "test"], "bun add -d"),
    ("bun.lockb", &["bun", "run", "test"], "bun add -d"),
    ("package-lock.json", &["npm", "test"], "npm install -D"),
];

/// npm, when no lockfile names a manager.
const NPM: Manager = ("no lockfile", &["npm", "test"], "npm install -D");

/// Where a JavaScript file's tests run (see the module's comment).
pub fn find(
    root: &Path,
    start: &Path,
    _var: &dyn Fn(&str) -> Option<OsString>,
) -> Option<Environment> {
    let (dir, script) = super::nearest(root, start, "package.json", test_script)?;
    // A workspace's lockfile is at its root, above the package.
    let up = || dir.ancestors().take_while(|d| d.starts_with(root));
    let (lockfile, command, adds) = up()
        .find_map(|d| MANAGERS.iter().find(|(lock, ..)| d.join(lock).is_file()))
        .copied()
        .unwrap_or(NPM);
    let modules: Vec<PathBuf> = up()
        .map(|d| d.join("node_modules"))
        .filter(|m| std::fs::symlink_metadata(m).is_ok_and(|m| m.is_dir()))
        .collect();
    let folder = super::folder_of(root, &dir);
    let package = match folder.as_str() {
        "" => "package.json".to_owned(),
        f => format!("{f}/package.json"),
    };
    Some(Environment {
        program: PathBuf::from(command[0]),
        command: Some(command.iter().map(|s| s.to_string()).collect()),
        folder,
        linked: modules.iter().map(|m| super::folder_of(root, m)).collect(),
        readable: modules,
        env: [
            // Run once and quietly, as on a build machine: no watch mode,
            // no update check, no audit (no network either way).
            ("CI", "true"),
            // Plain text: what the failures are read from.
            ("NO_COLOR", "1"),
            ("FORCE_COLOR", "0"),
            ("NO_UPDATE_NOTIFIER", "1"),
            ("npm_config_update_notifier", "false"),
            ("npm_config_audit", "false"),
            ("npm_config_fund", "false"),
        ]
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .to_vec(),
        found: format!(
            "{package}'s test script `{script}`, with {} ({lockfile})",
            command[0]
        ),
        adds: adds.to_owned(),
        has_runner: true,
        ..Environment::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn the_nearest_test_script_runs_with_the_lockfiles_manager() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path();
        write(
            &root.join("package.json"),
            r#"{"scripts":{"test":"node --test"}}"#,
        );
        write(&root.join("pnpm-lock.yaml"), "");
        std::fs::create_dir_all(root.join("node_modules")).unwrap();
        let app = root.join("packages/app");
        write(
            &app.join("package.json"),
            r#"{"scripts":{"test":"vitest run"}}"#,
        );
        std::fs::create_dir_all(app.join("node_modules")).unwrap();
        let lib = root.join("packages/lib");
        write(
            &lib.join("package.json"),
            r#"{"scripts":{"test":"echo \"Error: no test specified\" && exit 1"}}"#,
        );
        let e = find(root, &app.join("src"), &|_| None).unwrap();
        assert_eq!(
            e.command.as_deref(),
            Some(&["pnpm".to_owned(), "test".to_owned()][..])
        );
        assert_eq!(e.folder, "packages/app");
        assert_eq!(e.linked, ["packages/app/node_modules", "node_modules"]);
        assert_eq!(
            e.readable,
            [app.join("node_modules"), root.join("node_modules")]
        );
        assert!(
            e.found.contains("`vitest run`") && e.found.contains("pnpm-lock.yaml"),
            "{}",
            e.found
        );
        // npm's placeholder is no test script: the root's runs.
        let e = find(root, &lib, &|_| None).unwrap();
        assert_eq!(e.folder, "");
        // No package.json with tests: nothing.
        let bare = tempfile::tempdir().unwrap();
        write(&bare.path().join("package.json"), r#"{"name":"x"}"#);
        assert!(find(bare.path(), bare.path(), &|_| None).is_none());
    }

    #[test]
    fn without_a_lockfile_npm_runs_it() {
        let t = tempfile::tempdir().unwrap();
        write(
            &t.path().join("package.json"),
            r#"{"scripts":{"test":"node --test"}}"#,
        );
        let e = find(t.path(), t.path(), &|_| None).unwrap();
        assert_eq!(e.program, PathBuf::from("npm"));
        assert_eq!(e.adds, "npm install -D");
        assert!(e.linked.is_empty());
    }
}
