use super::*;

fn caps(preset: &str) -> Capabilities {
    Capabilities::new(&CapabilitiesConfig::default(), Some(preset)).unwrap()
}

#[test]
fn secrets_are_neither_read_nor_written_anywhere_in_the_tree() {
    let c = caps("sandbox");
    for p in [
        ".env",
        ".env.local",
        "config/.env.production",
        "keys/server.pem",
        "home/.ssh/id_rsa",
        "tls/site.key",
        ".netrc",
    ] {
        assert!(c.check_read(p).is_err(), "{p} readable");
        assert!(c.check_write(p).is_err(), "{p} writable");
    }
    for p in ["app.py", "src/env.py", "docs/environment.md", "pem.txt"] {
        assert!(c.check_read(p).is_ok(), "{p} not readable");
        assert!(c.check_write(p).is_ok(), "{p} not writable");
    }
    let e = c.check_read(".env").unwrap_err().to_string();
    assert!(e.contains("secret pattern") && e.contains("sandbox"), "{e}");
}

#[test]
fn presets_set_what_may_be_written_and_run() {
    let ro = caps("readonly");
    assert!(ro.check_read("app.py").is_ok());
    assert!(ro
        .check_write("app.py")
        .unwrap_err()
        .to_string()
        .contains("may not write"));
    let cfg = CapabilitiesConfig {
        commands: vec!["pytest".into()],
        ..CapabilitiesConfig::default()
    };
    let sandbox = Capabilities::new(&cfg, Some("sandbox")).unwrap();
    assert!(
        sandbox.check_command(&["pytest".into()]).is_err(),
        "sandbox runs nothing"
    );
    let dev = Capabilities::new(&cfg, Some("developer")).unwrap();
    assert!(
        dev.check_command(&["pytest".into(), "-x; rm -rf /".into()])
            .is_ok(),
        "arguments never reach a shell"
    );
    for argv in [
        vec!["rm", "-rf", "/"],
        vec!["/usr/bin/pytest"],
        vec!["pytest; rm -rf /"],
        vec!["../pytest"],
        vec![""],
    ] {
        let argv: Vec<String> = argv.into_iter().map(String::from).collect();
        assert!(dev.check_command(&argv).is_err(), "{argv:?} allowed");
    }
    assert!(Capabilities::new(&cfg, Some("root")).is_err());
}

#[test]
fn read_and_write_globs_limit_paths() {
    let cfg = CapabilitiesConfig {
        read: vec!["src/**".into(), "README.md".into()],
        write: vec!["src/*.py".into()],
        ..CapabilitiesConfig::default()
    };
    let c = Capabilities::new(&cfg, None).unwrap();
    assert!(c.check_read("src/a/b.py").is_ok());
    assert!(c.check_read("README.md").is_ok());
    assert!(c.check_read("tests/t.py").is_err());
    assert!(c.check_write("src/a.py").is_ok());
    assert!(c.check_write("src/sub/a.py").is_err(), "* does not cross /");
    assert!(c.check_write("README.md").is_err());
    assert!(c.check_host("example.com").is_err());
    assert!(c.check_mcp("fs.read").is_err());
}

#[test]
fn mcp_patterns_decide_which_servers_start_and_which_tools_run() {
    let cfg = CapabilitiesConfig {
        mcp: vec!["fs.read_*".into(), "git.status".into()],
        hosts: vec!["search.local".into()],
        ..CapabilitiesConfig::default()
    };
    let c = Capabilities::new(&cfg, None).unwrap();
    assert!(c.may_use_mcp_server("fs"));
    assert!(c.may_use_mcp_server("git"));
    assert!(
        !c.may_use_mcp_server("f"),
        "a prefix of a name is not the name"
    );
    assert!(!c.may_use_mcp_server("shell"));
    assert!(c.check_mcp("fs.read_file").is_ok());
    assert!(c.check_mcp("fs.write_file").is_err());
    assert!(c.check_mcp("git.status").is_ok());
    assert!(c.check_mcp("git.push").is_err());
    assert!(c.check_host("search.local").is_ok());
    assert!(c.check_endpoint("search.local", Some(8888)).is_ok());
    assert!(c.check_endpoint("other.local", None).is_err());
    let by_port = Capabilities::new(
        &CapabilitiesConfig {
            hosts: vec!["127.0.0.1:8888".into()],
            ..CapabilitiesConfig::default()
        },
        None,
    )
    .unwrap();
    assert!(by_port.check_endpoint("127.0.0.1", Some(8888)).is_ok());
    assert!(by_port.check_endpoint("127.0.0.1", Some(9999)).is_err());
    let any = Capabilities::new(
        &CapabilitiesConfig {
            mcp: vec!["*".into()],
            ..CapabilitiesConfig::default()
        },
        None,
    )
    .unwrap();
    assert!(any.may_use_mcp_server("shell"));
    assert!(any.check_mcp("shell.run").is_ok());
}

#[test]
fn secret_names_match_in_any_case() {
    let caps = Capabilities::new(&CapabilitiesConfig::default(), None).unwrap();
    for secret in [
        ".env",
        ".ENV",
        "config/.Env.local",
        "ID_RSA",
        "home/Id_Ed25519",
        "Server.PEM",
        "tls/KEY.Key",
        ".NETRC",
    ] {
        assert!(caps.is_secret(secret), "{secret}");
        assert!(!caps.may_see(secret), "{secret}");
    }
    for plain in ["environment.py", "src/identity.py", "pem_tools.py"] {
        assert!(!caps.is_secret(plain), "{plain}");
    }
}

#[test]
fn a_shared_file_is_a_readable_text_file_of_the_project_reached_through_no_link() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "TOP_SECRET\n").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::write(root.join("util.py"), "def f():\n    pass\n").unwrap();
    std::fs::write(root.join(".ENV"), "TOKEN=x\n").unwrap();
    std::fs::write(root.join("big.py"), "#".repeat(300_000)).unwrap();
    std::fs::write(root.join("blob.bin"), [0xff, 0xfe, 0x00]).unwrap();
    std::os::unix::fs::symlink(outside.path().join("secret.txt"), root.join("link.txt")).unwrap();
    let c = caps("sandbox");
    let share = |rel: &str| c.read_to_share(root, rel, 200 * 1024);
    assert_eq!(share("util.py").unwrap(), "def f():\n    pass\n");
    assert!(share("../secret.txt").is_err());
    assert!(share(&outside.path().join("secret.txt").to_string_lossy()).is_err());
    assert!(share("link.txt").unwrap_err().to_string().contains("link"));
    assert!(share(".ENV").unwrap_err().to_string().contains("secret"));
    assert!(share("big.py").is_err());
    assert!(share("blob.bin")
        .unwrap_err()
        .to_string()
        .contains("not text"));
    assert!(share("gone.py")
        .unwrap_err()
        .to_string()
        .contains("not a file"));
}

#[test]
fn checkpoints_are_for_developers_unless_the_configuration_says_otherwise() {
    for (preset, allowed) in [("readonly", false), ("sandbox", false), ("developer", true)] {
        let c = caps(preset);
        assert_eq!(c.check_snapshot().is_ok(), allowed, "{preset}");
        assert_eq!(c.check_rollback().is_ok(), allowed, "{preset}");
    }
    let config = CapabilitiesConfig {
        snapshot: Some(true),
        rollback: Some(false),
        ..CapabilitiesConfig::default()
    };
    let sandbox = Capabilities::new(&config, Some("sandbox")).unwrap();
    assert!(sandbox.check_snapshot().is_ok());
    let developer = Capabilities::new(&config, Some("developer")).unwrap();
    let denied = developer.check_rollback().unwrap_err().to_string();
    assert!(denied.contains("capabilities.rollback"), "{denied}");
}

#[test]
fn a_file_the_human_allowed_is_writable_under_readonly_but_never_a_secret() {
    let config = CapabilitiesConfig::default();
    let mut caps = Capabilities::new(&config, Some("readonly")).unwrap();
    assert!(caps.check_write("calc.py").is_err());
    caps.allow_write("calc.py");
    caps.allow_write(".env");
    assert!(caps.check_write("calc.py").is_ok());
    assert!(
        caps.check_write("other.py").is_err(),
        "only what was allowed"
    );
    let secret = caps.check_write(".env").unwrap_err().to_string();
    assert!(secret.contains("secret"), "{secret}");
}
