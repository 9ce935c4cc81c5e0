//! A Go project's tests: `go test` of the package of the task's file, in
//! the module its nearest `go.mod` makes, offline (`GOPROXY=off`, the
//! installed toolchain), reading the user's module cache where it is and
//! building into a cache of Chimera's own for the project.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::lang::environment::Environment;

/// Where a Go file's tests run (see the module's comment).
pub fn find(
    root: &Path,
    start: &Path,
    var: &dyn Fn(&str) -> Option<OsString>,
) -> Option<Environment> {
    let (module, ()) = super::nearest(root, start, "go.mod", |t| {
        t.contains("module").then_some(())
    })?;
    let start = if start.starts_with(&module) {
        start
    } else {
        &module
    };
    let package = match start.strip_prefix(&module).ok()?.to_string_lossy().as_ref() {
        "" => "./...".to_owned(),
        p => format!("./{p}"),
    };
    let modcache = super::folder_var(var, "GOMODCACHE").or_else(|| {
        let gopath = super::folder_var(var, "GOPATH")
            .or_else(|| var("HOME").map(|h| PathBuf::from(h).join("go")))?;
        Some(gopath.join("pkg/mod"))
    });
    let ours = super::own_cache(root, "go-build", var)?;
    let mut env: Vec<(String, String)> = [
        ("GOPROXY", "off"),
        ("GOTOOLCHAIN", "local"),
        ("GOTELEMETRY", "off"),
    ]
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .to_vec();
    env.push(("GOCACHE".into(), ours.display().to_string()));
    if let Some(m) = &modcache {
        env.push(("GOMODCACHE".into(), m.display().to_string()));
    }
    let folder = super::folder_of(root, &module);
    Some(Environment {
        program: PathBuf::from("go"),
        command: Some(["go", "test", package.as_str()].map(String::from).to_vec()),
        found: format!(
            "go test {package} in the module of {}",
            match folder.as_str() {
                "" => "go.mod".to_owned(),
                f => format!("{f}/go.mod"),
            }
        ),
        folder,
        readable: modcache.into_iter().filter(|m| m.is_dir()).collect(),
        checkouts: ours.parent().map(|p| p.join("checkouts")),
        writable: vec![ours],
        env,
        adds: "go get".into(),
        has_runner: true,
        ..Environment::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_package_of_the_file_is_tested_offline_in_its_module() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().join("svc");
        std::fs::create_dir_all(root.join("internal/store")).unwrap();
        std::fs::write(root.join("go.mod"), "module example.com/svc\n\ngo 1.22\n").unwrap();
        let home = t.path().join("home").into_os_string();
        let var = |n: &str| (n == "HOME").then(|| home.clone());
        let e = find(&root, &root.join("internal/store"), &var).unwrap();
        assert_eq!(
            e.command.as_ref().unwrap().join(" "),
            "go test ./internal/store"
        );
        assert!(e.env.contains(&("GOPROXY".into(), "off".into())));
        assert!(e
            .env
            .iter()
            .any(|(k, v)| k == "GOMODCACHE" && v.ends_with("home/go/pkg/mod")));
        assert_eq!(e.folder, "");
        let whole = find(&root, &root, &var).unwrap();
        assert_eq!(whole.command.unwrap().join(" "), "go test ./...");
        assert!(find(t.path(), t.path(), &var).is_none(), "no go.mod above");
    }
}
