//! An agent's own home: `HOME` and the `XDG_*` folders of a confined
//! ACP agent point into a folder Chimera keeps for that agent name
//! (`$XDG_DATA_HOME/chimera/agents/<name>/home`, yours alone), never into
//! yours. What it writes there — its settings, hooks, caches, a tool it
//! installs — stays there: nothing the agent leaves runs later in your
//! own shell. Its login comes from your home: the files its kind names
//! ([`super::known`]) are copied in when missing there or older than
//! yours, so logging in again in your shell reaches it, and what it
//! changes in its copy never reaches you.

use std::path::{Path, PathBuf};

use super::known::Known;
use crate::paths::ProjectPath;

/// Where agent `name`'s own home is, under `data` (the user's
/// `$XDG_DATA_HOME`, else `~/.local/share`).
pub fn path(data: &Path, name: &str) -> PathBuf {
    data.join("chimera").join("agents").join(name).join("home")
}

/// The user's data folder: `$XDG_DATA_HOME`, else `~/.local/share`.
pub fn user_data() -> Option<PathBuf> {
    std::env::var_os("XDG_DATA_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/share")))
}

/// Makes agent `name`'s home at `home` (0700) and brings `known`'s seeds
/// over from `user_home` where the user's are newer.
pub fn prepare(
    home: &Path,
    known: Option<&Known>,
    user_home: Option<&Path>,
) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(home)?;
    std::fs::set_permissions(home, std::fs::Permissions::from_mode(0o700))?;
    for dir in [".config", ".cache", ".local/share", ".local/state"] {
        std::fs::create_dir_all(home.join(dir))?;
    }
    let Some(known) = known else {
        return Ok(());
    };
    if let Some(user_home) = user_home {
        seed(home, known, user_home)?;
    }
    for (file, text) in known.made {
        let Ok(rel) = ProjectPath::parse(file) else {
            continue;
        };
        unlink_on_the_way(home, &rel)?;
        if std::fs::symlink_metadata(home.join(file)).is_err() {
            crate::rootfs::write_scratch(home, &rel, text.as_bytes(), 0o600)
                .map_err(std::io::Error::other)?;
        }
    }
    Ok(())
}

/// Copies `known`'s seeds from `user_home` into `home` where the user's
/// are newer.
fn seed(home: &Path, known: &Known, user_home: &Path) -> std::io::Result<()> {
    for seed in known.seeds {
        let from = user_home.join(seed);
        // The user's file itself, not a link's target elsewhere.
        let Ok(meta) = std::fs::symlink_metadata(&from) else {
            continue;
        };
        if !meta.is_file() {
            continue;
        }
        let Ok(rel) = ProjectPath::parse(seed) else {
            continue;
        };
        // The agent may have swapped a folder of its home, or the file,
        // for a link: those go (the links, never what they lead to) before
        // anything of its home is looked at or written.
        unlink_on_the_way(home, &rel)?;
        let theirs = std::fs::symlink_metadata(home.join(seed))
            .ok()
            .filter(|m| m.is_file())
            .and_then(|m| m.modified().ok());
        let newer = theirs.is_none_or(|theirs| meta.modified().is_ok_and(|ours| ours > theirs));
        if newer {
            let data = std::fs::read(&from)?;
            // Through no link, whatever the agent does meanwhile.
            crate::rootfs::write_scratch(home, &rel, &data, 0o600)
                .map_err(std::io::Error::other)?;
        }
    }
    Ok(())
}

/// Removes every link on the way to `rel` under `home` (the links
/// themselves), so that the path holds folders and a file of its own.
fn unlink_on_the_way(home: &Path, rel: &ProjectPath) -> std::io::Result<()> {
    let mut dir = String::new();
    for part in rel.as_str().split('/') {
        let at = home.join(&dir).join(part);
        match std::fs::symlink_metadata(&at) {
            Ok(m) if m.file_type().is_symlink() => {
                crate::rootfs::remove_entry(home, &dir, part).map_err(std::io::Error::other)?;
            }
            Ok(_) => {}
            Err(_) => return Ok(()),
        }
        if !dir.is_empty() {
            dir.push('/');
        }
        dir.push_str(part);
    }
    Ok(())
}

/// The variables that put an agent in `home`: `HOME`, the `XDG_*`
/// folders, and the toolchains that find themselves through `HOME`
/// (pyenv, rustup, cargo, nvm) still found where the user has them.
pub fn environment(home: &Path, user_home: Option<&Path>) -> Vec<(String, String)> {
    let at = |rel: &str| home.join(rel).display().to_string();
    let mut env = vec![
        ("HOME".to_string(), home.display().to_string()),
        ("XDG_CONFIG_HOME".to_string(), at(".config")),
        ("XDG_CACHE_HOME".to_string(), at(".cache")),
        ("XDG_DATA_HOME".to_string(), at(".local/share")),
        ("XDG_STATE_HOME".to_string(), at(".local/state")),
    ];
    if let Some(user_home) = user_home {
        for (var, dir) in [
            ("PYENV_ROOT", ".pyenv"),
            ("RUSTUP_HOME", ".rustup"),
            ("CARGO_HOME", ".cargo"),
            ("NVM_DIR", ".nvm"),
        ] {
            let real = user_home.join(dir);
            if std::env::var_os(var).is_none() && real.is_dir() {
                env.push((var.to_string(), real.display().to_string()));
            }
        }
    }
    env
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_login_is_copied_in_and_what_the_agent_writes_stays_in_its_home() {
        let t = tempfile::tempdir().unwrap();
        let user = t.path().join("user");
        std::fs::create_dir_all(user.join(".claude")).unwrap();
        std::fs::write(user.join(".claude.json"), "{\"login\":1}").unwrap();
        std::fs::write(user.join(".claude/settings.json"), "{}").unwrap();
        let home = path(&t.path().join("data"), "claude");
        let known = crate::acp::known::known("claude");
        prepare(&home, known, Some(&user)).unwrap();
        assert_eq!(
            std::fs::read_to_string(home.join(".claude.json")).unwrap(),
            "{\"login\":1}"
        );
        // The agent plants a hook in its settings: the user's stay.
        std::fs::write(home.join(".claude/settings.json"), "{\"hooks\":1}").unwrap();
        prepare(&home, known, Some(&user)).unwrap();
        assert_eq!(
            std::fs::read_to_string(user.join(".claude/settings.json")).unwrap(),
            "{}"
        );
        assert_eq!(
            std::fs::read_to_string(home.join(".claude/settings.json")).unwrap(),
            "{\"hooks\":1}",
            "its own copy is newer than the user's: kept"
        );
        // A link the agent left where a seed goes is replaced, not written through.
        std::fs::write(user.join("victim"), "mine").unwrap();
        std::fs::remove_file(home.join(".claude.json")).unwrap();
        std::os::unix::fs::symlink(user.join("victim"), home.join(".claude.json")).unwrap();
        prepare(&home, known, Some(&user)).unwrap();
        assert_eq!(
            std::fs::read_to_string(user.join("victim")).unwrap(),
            "mine"
        );
        assert!(std::fs::symlink_metadata(home.join(".claude.json"))
            .unwrap()
            .is_file());
        assert_eq!(
            std::fs::read_to_string(home.join(".claude.json")).unwrap(),
            "{\"login\":1}"
        );
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&home).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
    }

    #[test]
    fn what_an_agent_cannot_start_without_is_made_when_the_user_has_none() {
        let t = tempfile::tempdir().unwrap();
        let user = t.path().join("fresh-user");
        std::fs::create_dir_all(&user).unwrap();
        let home = path(&t.path().join("data"), "claude");
        let known = crate::acp::known::known("claude");
        prepare(&home, known, Some(&user)).unwrap();
        assert_eq!(
            std::fs::read_to_string(home.join(".claude.json")).unwrap(),
            "{}\n"
        );
        // What the agent wrote there since is its own: kept.
        std::fs::write(home.join(".claude.json"), "{\"userID\":1}").unwrap();
        prepare(&home, known, None).unwrap();
        assert_eq!(
            std::fs::read_to_string(home.join(".claude.json")).unwrap(),
            "{\"userID\":1}"
        );
        // A link in its place is replaced, never written through.
        std::fs::write(user.join("victim"), "mine").unwrap();
        std::fs::remove_file(home.join(".claude.json")).unwrap();
        std::os::unix::fs::symlink(user.join("victim"), home.join(".claude.json")).unwrap();
        prepare(&home, known, None).unwrap();
        assert_eq!(
            std::fs::read_to_string(user.join("victim")).unwrap(),
            "mine"
        );
        assert_eq!(
            std::fs::read_to_string(home.join(".claude.json")).unwrap(),
            "{}\n"
        );
    }

    #[test]
    fn a_folder_of_its_home_the_agent_swapped_for_a_link_is_never_written_through() {
        let t = tempfile::tempdir().unwrap();
        let user = t.path().join("user");
        std::fs::create_dir_all(user.join(".claude")).unwrap();
        std::fs::write(user.join(".claude/settings.json"), "{\"mine\":1}").unwrap();
        std::fs::write(user.join(".claude/.credentials.json"), "login").unwrap();
        let elsewhere = t.path().join("elsewhere");
        std::fs::create_dir_all(&elsewhere).unwrap();
        std::fs::write(elsewhere.join("settings.json"), "keep").unwrap();
        let home = path(&t.path().join("data"), "claude");
        let known = crate::acp::known::known("claude");
        prepare(&home, known, Some(&user)).unwrap();
        // The agent replaces its `.claude` by a link to the user's own, or
        // to any other folder.
        for target in [user.join(".claude"), elsewhere.clone()] {
            std::fs::remove_dir_all(home.join(".claude")).ok();
            std::fs::remove_file(home.join(".claude")).ok();
            std::os::unix::fs::symlink(&target, home.join(".claude")).unwrap();
            std::thread::sleep(std::time::Duration::from_millis(20));
            // The user logs in again: newer seeds.
            std::fs::write(user.join(".claude/.credentials.json"), "login again").unwrap();
            prepare(&home, known, Some(&user)).unwrap();
            assert_eq!(
                std::fs::read_to_string(user.join(".claude/settings.json")).unwrap(),
                "{\"mine\":1}"
            );
            assert_eq!(
                std::fs::read_to_string(elsewhere.join("settings.json")).unwrap(),
                "keep"
            );
            assert!(!elsewhere.join(".credentials.json").exists());
            let own = std::fs::symlink_metadata(home.join(".claude")).unwrap();
            assert!(
                own.is_dir(),
                "the link is gone, a folder of its own in its place"
            );
            assert_eq!(
                std::fs::read_to_string(home.join(".claude/.credentials.json")).unwrap(),
                "login again"
            );
        }
    }
}
