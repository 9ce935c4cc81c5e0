//! The Seatbelt profile (macOS's `sandbox-exec`) that says what
//! [`super::Rules`] say, for the same confinement Landlock gives on Linux:
//! everything denied but the folders to read, the folders to write, and
//! what any program needs to run at all (starting programs, the system's
//! services, the network its model is on). Paths travel as parameters
//! (`-D R0=/usr`), never spliced into the profile's text, so no folder
//! name can change the profile. Pure: written and tested on any system.

use std::ffi::OsString;
use std::path::Path;

use super::Rules;

/// Where macOS keeps the tool.
pub const SANDBOX_EXEC: &str = "/usr/bin/sandbox-exec";

/// What every confined program may do besides its folders. Metadata
/// (`stat`) is readable everywhere, as under Landlock, which does not
/// restrict it: a program finds its way to its folders; the files'
/// contents stay out of reach.
const BASE: &str = "(version 1)
(deny default)
(allow process-exec process-fork)
(allow signal (target same-sandbox))
(allow process-info* (target same-sandbox))
(allow sysctl-read)
(allow mach-lookup)
(allow ipc-posix-shm ipc-posix-sem)
(allow iokit-open)
(allow user-preference-read)
(allow pseudo-tty)
(allow file-ioctl)
(allow file-read-metadata)
(allow network-outbound network-inbound network-bind system-socket)
";

/// The profile, and the parameters it names (`R<n>`: read, `W<n>`: read
/// and write), each path resolved as the kernel sees it (`/tmp` is
/// `/private/tmp` there).
pub fn profile(rules: &Rules) -> (String, Vec<(String, OsString)>) {
    let mut text = String::from(BASE);
    let mut params = Vec::new();
    for (prefix, paths, allow) in [
        ("R", &rules.read, "file-read*"),
        ("W", &rules.write, "file-read* file-write*"),
    ] {
        for (n, p) in paths.iter().enumerate() {
            let name = format!("{prefix}{n}");
            text.push_str(&format!("(allow {allow} (subpath (param \"{name}\")))\n"));
            params.push((name, super::real(p).into_os_string()));
        }
    }
    (text, params)
}

/// The arguments of `sandbox-exec` that run `program` confined to `rules`
/// (its own arguments follow).
pub fn arguments(program: &Path, rules: &Rules) -> Vec<OsString> {
    let (text, params) = profile(rules);
    let mut args: Vec<OsString> = vec!["-p".into(), text.into()];
    for (name, path) in params {
        let mut define = OsString::from(format!("{name}="));
        define.push(path);
        args.push("-D".into());
        args.push(define);
    }
    args.push(program.into());
    args
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn the_profile_denies_by_default_and_names_its_folders_only_as_parameters() {
        let t = tempfile::tempdir().unwrap();
        let odd = t.path().join("a \"quoted\") (allow default");
        std::fs::create_dir_all(&odd).unwrap();
        let rules = Rules {
            read: vec![PathBuf::from("/usr"), odd.clone()],
            write: vec![t.path().join("work")],
            ..Rules::default()
        };
        let args = arguments(Path::new("opencode"), &rules);
        let text = args[1].to_string_lossy().into_owned();
        assert!(text.starts_with("(version 1)\n(deny default)\n"), "{text}");
        assert!(!text.contains("(allow default)"), "no path is spliced in");
        assert!(!text.contains("/usr"), "{text}");
        assert!(text.contains("(allow file-read* (subpath (param \"R1\")))"));
        assert!(text.contains("(allow file-read* file-write* (subpath (param \"W0\")))"));
        let rest: Vec<String> = args[2..]
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert_eq!(rest[0..2], ["-D".to_owned(), "R0=/usr".to_owned()]);
        assert_eq!(
            rest[3],
            format!("R1={}", odd.canonicalize().unwrap().display())
        );
        assert_eq!(rest.last().unwrap(), "opencode", "the program comes last");
    }
}
