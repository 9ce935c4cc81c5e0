//! What an ACP agent is given when it starts ([`crate::launch`]): its
//! confinement (files, network), its own home, and its environment — the
//! allow-list, its kind's login variables, what its options name.

use std::path::{Path, PathBuf};

use super::{home, known};
use crate::agent::AgentError;
use crate::config::ExternalAgent;
use crate::confine::{self, Rules};

/// What agent `name` working in `files` is given: the system's folders,
/// its own install, what its options list, its own home and its folder
/// — never the project or the user's home; the network its options or
/// its kind name. `None` when it runs unconfined by its options.
pub(super) fn policy_for(
    name: &str,
    spec: &ExternalAgent,
    root: &Path,
    (files, tmp, home): (&Path, &Path, &Path),
) -> Result<Option<crate::launch::Policy>, AgentError> {
    if spec.unconfined {
        return Ok(None);
    }
    let option =
        |e: &dyn std::fmt::Display| AgentError::Denied(format!("agents.external.{name}: {e}"));
    if !confine::available() {
        return Err(AgentError::Denied(format!(
            "{}; the agent {name} does not start unconfined unless agents.external.{name}.unconfined = true",
            confine::ConfineError::Unavailable
        )));
    }
    let mut rules = Rules::system();
    if let Some((program, args)) = spec.command.split_first() {
        rules.program(program);
        rules.files_named(args);
    }
    rules
        .read
        .extend(spec.readable().into_iter().filter(|p| p.exists()));
    rules
        .write
        .extend(spec.writable().into_iter().filter(|p| p.exists()));
    rules.write.push(home.to_path_buf());
    rules.write.push(files.to_path_buf());
    rules.write.push(tmp.to_path_buf());
    rules.keep_out(root).map_err(|e| option(&e))?;
    let targets = network_of(name, spec).map_err(|e| option(&e))?;
    let network = if targets.is_empty() {
        crate::launch::Network::Off
    } else {
        crate::launch::Network::Hosts(targets)
    };
    Ok(Some(crate::launch::Policy {
        files: rules,
        network,
    }))
}

/// Where agent `name`'s network may go: its `network` option, or when
/// that is unset, the URLs its `env` names and its kind's provider.
pub fn network_of(
    name: &str,
    spec: &ExternalAgent,
) -> Result<Vec<crate::launch::Target>, crate::config::BadNetworkEntry> {
    let mut targets = spec.targets()?;
    if spec.network.is_none() {
        let hosts = known::known(kind_of(name, spec)).map_or(&[][..], |k| k.hosts);
        targets.extend(hosts.iter().filter_map(|h| {
            let (host, port) = h.rsplit_once(':')?;
            Some(crate::launch::Target {
                host: host.to_owned(),
                port: port.parse().ok()?,
            })
        }));
    }
    let mut seen = std::collections::HashSet::new();
    targets.retain(|t| seen.insert(t.clone()));
    Ok(targets)
}

/// The login method agent `name` is to use when it asks for one: the
/// first of its kind's whose variable it is given (its options' `env`,
/// or yours, passed); `None` when it is given none.
pub(super) fn login_of(name: &str, spec: &ExternalAgent) -> Option<&'static str> {
    let given = |var: &str| {
        spec.env.contains_key(var) || std::env::var_os(var).is_some_and(|v| !v.is_empty())
    };
    known::known(kind_of(name, spec))?
        .logins
        .iter()
        .find(|(_, var)| given(var))
        .map(|(method, _)| *method)
}

/// Which agent `name` is: its `kind`, else its name.
pub(super) fn kind_of<'a>(name: &'a str, spec: &'a ExternalAgent) -> &'a str {
    spec.kind.as_deref().unwrap_or(name)
}

/// Agent `name`'s own home, made and given its login ([`home`]).
pub(super) fn own_home(name: &str, spec: &ExternalAgent) -> Result<PathBuf, AgentError> {
    let data = home::user_data().ok_or_else(|| {
        AgentError::External("no home folder ($HOME) to keep the agent's own home in".into())
    })?;
    let path = home::path(&data, name);
    let user_home = std::env::var_os("HOME").map(PathBuf::from);
    home::prepare(
        &path,
        known::known(kind_of(name, spec)),
        user_home.as_deref(),
    )
    .map_err(|e| {
        AgentError::External(format!(
            "cannot make the agent's home {}: {e}",
            path.display()
        ))
    })?;
    Ok(path)
}

/// The variables agent `name` gets: the user's it names (`pass_env`, its
/// kind's login), then — confined, in `home` — its own home's, its
/// options' `env` over them, and its folders (`TMPDIR`, `PWD` of `tmp`,
/// `files`).
pub(super) fn environment(
    name: &str,
    spec: &ExternalAgent,
    home: Option<&Path>,
    (tmp, files): (&Path, &Path),
) -> (Vec<String>, Vec<(String, String)>) {
    let user_home = std::env::var_os("HOME").map(PathBuf::from);
    let own_home = home
        .map(|home| home::environment(home, user_home.as_deref()))
        .unwrap_or_default();
    let set = own_home
        .into_iter()
        .chain(spec.env.iter().map(|(k, v)| (k.clone(), v.clone())))
        .chain([
            ("TMPDIR".to_string(), tmp.display().to_string()),
            ("PWD".to_string(), files.display().to_string()),
        ])
        .collect();
    let mut pass = spec.pass_env.clone();
    if let Some(k) = known::known(kind_of(name, spec)) {
        pass.extend(k.keys.iter().map(|k| k.to_string()));
    }
    (pass, set)
}
