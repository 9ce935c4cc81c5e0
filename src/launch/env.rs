//! The environment a launched process gets: an allow-list of the user's
//! variables that programs and toolchains need to run, never the rest.
//! What is left out is what a process could use against the user: the
//! editor's server (`NVIM`), agents' sockets (`SSH_AUTH_SOCK`,
//! `DBUS_SESSION_BUS_ADDRESS`, `XDG_RUNTIME_DIR`), and every key, token
//! or password a shell exported. An agent's configuration names what it
//! needs besides (`pass_env`, its own `env`).

use std::ffi::OsString;

/// Variables passed as they are: how to find and run programs, the
/// language and terminal, and the toolchains' own settings.
const PASSED: &[&str] = &[
    // Running programs.
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "TZ",
    // Language and terminal.
    "LANG",
    "LANGUAGE",
    "TERM",
    "COLORTERM",
    "NO_COLOR",
    // Where programs keep their files (not XDG_RUNTIME_DIR: sockets).
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "XDG_CACHE_HOME",
    "XDG_STATE_HOME",
    "XDG_CONFIG_DIRS",
    "XDG_DATA_DIRS",
    // Certificates (a company's own authority).
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "REQUESTS_CA_BUNDLE",
    "NODE_EXTRA_CA_CERTS",
    // Python.
    "PYTHONPATH",
    "PYTHONHOME",
    "VIRTUAL_ENV",
    "CONDA_PREFIX",
    "CONDA_DEFAULT_ENV",
    "PYENV_ROOT",
    "PYENV_VERSION",
    "UV_CACHE_DIR",
    "UV_PYTHON",
    // JavaScript.
    "NODE_PATH",
    "NVM_DIR",
    "NVM_BIN",
    // Rust.
    "CARGO_HOME",
    "RUSTUP_HOME",
    "RUSTUP_TOOLCHAIN",
    "CARGO_TARGET_DIR",
    // Go.
    "GOPATH",
    "GOROOT",
    "GOCACHE",
    "GOMODCACHE",
    "GOFLAGS",
    "GOTOOLCHAIN",
    // Java.
    "JAVA_HOME",
];

/// Set in every launched process: no `__pycache__` left in an agent's
/// folder (where it would come back as part of a proposal) or a scratch
/// copy.
const DEFAULTS: &[(&str, &str)] = &[("PYTHONDONTWRITEBYTECODE", "1")];

/// Whether the user's variable `name` is passed to every launched
/// process.
pub fn passed(name: &str) -> bool {
    PASSED.contains(&name) || name.starts_with("LC_")
}

/// The environment for a launched process: the allow-listed variables of
/// `from`, those `names` asks for besides, then [`DEFAULTS`] and `set`
/// over them.
pub fn environment(
    from: impl IntoIterator<Item = (OsString, OsString)>,
    names: &[String],
    set: impl IntoIterator<Item = (String, String)>,
) -> Vec<(OsString, OsString)> {
    let mut env: Vec<(OsString, OsString)> = from
        .into_iter()
        .filter(|(k, _)| {
            k.to_str()
                .is_some_and(|k| passed(k) || names.iter().any(|n| n == k))
        })
        .collect();
    let defaults = DEFAULTS.iter().map(|(k, v)| (k.to_string(), v.to_string()));
    for (k, v) in defaults.chain(set) {
        env.retain(|(old, _)| old.to_str() != Some(k.as_str()));
        env.push((k.into(), v.into()));
    }
    env
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        pairs.iter().map(|(k, v)| (k.into(), v.into())).collect()
    }

    #[test]
    fn only_what_programs_need_is_passed_and_what_the_config_names() {
        let user = vars(&[
            ("PATH", "/usr/bin"),
            ("NVIM", "/run/user/0/nvim.1.0"),
            ("AWS_SECRET_ACCESS_KEY", "abc"),
            ("SSH_AUTH_SOCK", "/tmp/ssh-x/agent.1"),
            ("XDG_RUNTIME_DIR", "/run/user/0"),
            ("ANTHROPIC_API_KEY", "sk-1"),
            ("LC_ALL", "C.UTF-8"),
            ("VIRTUAL_ENV", "/p/.venv"),
        ]);
        let env = environment(
            user,
            &["ANTHROPIC_API_KEY".into()],
            [("TMPDIR".to_string(), "/t".to_string())],
        );
        let names: Vec<_> = env.iter().map(|(k, _)| k.to_str().unwrap()).collect();
        assert_eq!(
            names,
            [
                "PATH",
                "ANTHROPIC_API_KEY",
                "LC_ALL",
                "VIRTUAL_ENV",
                "PYTHONDONTWRITEBYTECODE",
                "TMPDIR"
            ]
        );
    }

    #[test]
    fn what_is_set_wins_over_the_users_value() {
        let env = environment(
            vars(&[("HOME", "/root")]),
            &[],
            [("HOME".to_string(), "/private".to_string())],
        );
        assert_eq!(
            env,
            vars(&[("PYTHONDONTWRITEBYTECODE", "1"), ("HOME", "/private")])
        );
    }
}
