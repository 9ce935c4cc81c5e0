//! A Rust project's tests: `cargo test --offline` in the package of the
//! task's file (the nearest `Cargo.toml`; in a workspace, cargo tests the
//! package whose folder it runs in). It builds into a target folder of
//! Chimera's own for the project, reused between runs and first filled
//! from the user's `target/` (copied, never written), so a run after a
//! one-line change rebuilds what the user's own `cargo test` would. The
//! registry and the toolchain are read where they are.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::lang::environment::Environment;

/// Where a Rust file's tests run (see the module's comment).
pub fn find(
    root: &Path,
    start: &Path,
    var: &dyn Fn(&str) -> Option<OsString>,
) -> Option<Environment> {
    let (package, ()) = super::nearest(root, start, "Cargo.toml", |t| {
        (t.contains("[package]") || t.contains("[workspace]")).then_some(())
    })?;
    // The user's target folder: the workspace's (the topmost manifest
    // that names one), unless the user sets another.
    let workspace = package
        .ancestors()
        .take_while(|d| d.starts_with(root))
        .filter(|d| {
            std::fs::read_to_string(d.join("Cargo.toml")).is_ok_and(|t| t.contains("[workspace]"))
        })
        .last()
        .unwrap_or(&package)
        .to_path_buf();
    let theirs =
        super::folder_var(var, "CARGO_TARGET_DIR").unwrap_or_else(|| workspace.join("target"));
    let ours = super::own_cache(root, "cargo-target", var)?;
    let home = |name: &str, default: &str| {
        super::folder_var(var, name).or_else(|| var("HOME").map(|h| PathBuf::from(h).join(default)))
    };
    // The registry's sources and the toolchains, where the user keeps
    // them; never `credentials.toml`.
    let cargo_home = home("CARGO_HOME", ".cargo");
    let readable = cargo_home
        .iter()
        .flat_map(|c| ["registry", "git", "bin"].map(|d| c.join(d)))
        .chain(home("RUSTUP_HOME", ".rustup"))
        .filter(|p| p.is_dir())
        .collect();
    let folder = super::folder_of(root, &package);
    let said = match folder.as_str() {
        "" => "Cargo.toml".to_owned(),
        f => format!("{f}/Cargo.toml"),
    };
    let seeded = std::fs::symlink_metadata(theirs.join("debug")).is_ok_and(|m| m.is_dir());
    Some(Environment {
        program: PathBuf::from("cargo"),
        command: Some(["cargo", "test", "--offline"].map(String::from).to_vec()),
        folder,
        readable,
        checkouts: ours.parent().map(|p| p.join("checkouts")),
        writable: vec![ours.clone()],
        seed: seeded.then(|| (theirs, ours.clone())),
        env: vec![
            ("CARGO_TARGET_DIR".into(), ours.display().to_string()),
            ("CARGO_TERM_COLOR".into(), "never".into()),
            // A failure's message, not a backtrace, is what a model reads.
            ("RUST_BACKTRACE".into(), "0".into()),
        ],
        found: format!("cargo test of {said}, building in {}", ours.display()),
        adds: "cargo add --dev".into(),
        has_runner: true,
        ..Environment::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_files_package_is_tested_building_in_chimeras_own_target() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().join("ws");
        let member = root.join("crates/core");
        std::fs::create_dir_all(member.join("src")).unwrap();
        std::fs::create_dir_all(root.join("target/debug")).unwrap();
        std::fs::write(
            root.join("Cargo.toml"),
            "[workspace]\nmembers = [\"crates/*\"]\n",
        )
        .unwrap();
        std::fs::write(member.join("Cargo.toml"), "[package]\nname = \"core\"\n").unwrap();
        let cargo_home = t.path().join("home/.cargo");
        for d in ["registry", "bin"] {
            std::fs::create_dir_all(cargo_home.join(d)).unwrap();
        }
        let credentials = cargo_home.join("credentials.toml");
        std::fs::write(&credentials, "[registry]\ntoken = \"secret\"\n").unwrap();
        let home = t.path().join("home").into_os_string();
        let var = |n: &str| (n == "HOME").then(|| home.clone());
        let e = find(&root, &member.join("src"), &var).unwrap();
        // The registry is read where it is; the registry token never.
        assert!(
            e.readable.contains(&cargo_home.join("registry")),
            "{:?}",
            e.readable
        );
        assert!(
            !e.readable.iter().any(|r| credentials.starts_with(r)),
            "{:?}",
            e.readable
        );
        assert_eq!(e.folder, "crates/core");
        assert_eq!(
            e.command.as_ref().unwrap().join(" "),
            "cargo test --offline"
        );
        let ours = &e.writable[0];
        assert!(
            ours.starts_with(t.path().join("home/.cache/chimera/build")),
            "{ours:?}"
        );
        assert_eq!(e.seed, Some((root.join("target"), ours.clone())));
        assert!(e
            .env
            .contains(&("CARGO_TARGET_DIR".into(), ours.display().to_string())));
        // Another project builds elsewhere.
        let other = t.path().join("other");
        std::fs::create_dir_all(&other).unwrap();
        std::fs::write(other.join("Cargo.toml"), "[package]\nname = \"o\"\n").unwrap();
        let o = find(&other, &other, &var).unwrap();
        assert_ne!(&o.writable[0], ours);
        assert_eq!(o.seed, None, "no target of the user's to start from");
        // No manifest: nothing.
        let bare = t.path().join("bare");
        std::fs::create_dir_all(&bare).unwrap();
        assert!(find(&bare, &bare, &var).is_none());
    }
}
