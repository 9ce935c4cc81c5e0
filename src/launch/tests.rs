//! The launcher's file rules on a real shell: what a confined program may
//! write and read, the project kept out by any path.

use super::{Launch, Network, Policy};
use crate::confine::{available, Rules};

fn sh(rules: &Rules, script: &str) -> (bool, String) {
    let policy = Policy {
        files: rules.clone(),
        network: Network::Off,
    };
    let mut launch = Launch::new("/bin/sh", Some(&policy), &[], []).unwrap();
    launch
        .command()
        .args(["-c", script])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let started = launch.spawn().unwrap();
    let out = started.child.wait_with_output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_confined_program_writes_only_where_it_may_and_reads_nothing_of_the_project() {
    assert!(available(), "these machines have Landlock");
    let t = tempfile::tempdir().unwrap();
    let (root, work) = (t.path().join("proj"), t.path().join("work"));
    std::fs::create_dir_all(&root).unwrap();
    std::fs::create_dir_all(&work).unwrap();
    std::fs::write(root.join(".env"), "SECRET=1\n").unwrap();
    let mut rules = Rules::system();
    rules.write.push(work.clone());
    rules.keep_out(&root).unwrap();
    let r = root.display();
    let w = work.display();
    assert!(sh(&rules, &format!("echo hi > {w}/a && cat {w}/a")).0);
    assert!(
        !sh(&rules, &format!("cat {r}/.env")).0,
        "the project is unreadable"
    );
    assert!(!sh(&rules, &format!("echo x > {r}/new")).0);
    assert!(!sh(&rules, &format!("ln -s {r}/.env {w}/l && cat {w}/l")).0);
    assert!(!sh(&rules, &format!("cd {w} && cat ../proj/.env")).0);
    // A child that leaves the process group is confined all the same.
    let (_, _) = sh(
        &rules,
        &format!("setsid sh -c 'echo late > {r}/late' ; sleep 0.2"),
    );
    assert!(!root.join("new").exists() && !root.join("late").exists());
    assert_eq!(std::fs::read_to_string(work.join("a")).unwrap(), "hi\n");
}

#[test]
fn a_confined_program_reads_the_systems_settings_but_not_its_secrets() {
    // Run as root (CI, containers), /etc/shadow is otherwise readable.
    let rules = Rules::system();
    assert!(
        sh(&rules, "cat /etc/passwd /etc/hosts > /dev/null").0,
        "settings programs need"
    );
    for secret in [
        "/etc/shadow",
        "/etc/gshadow",
        "/etc/sudoers",
        "/etc/ssl/private",
    ] {
        if std::path::Path::new(secret).exists() {
            // Nothing of it is read: refused, or found empty.
            let (_, said) = sh(
                &rules,
                &format!("(if [ -d {secret} ]; then ls -A {secret}; else cat {secret}; fi) >&2"),
            );
            assert!(
                said.trim().is_empty() || said.contains("Permission denied"),
                "{secret} was readable: {said}"
            );
        }
    }
    assert!(
        sh(&rules, "ls /etc/ssl/certs > /dev/null").0,
        "certificates are not secret"
    );
}
