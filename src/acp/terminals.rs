//! An ACP agent's terminals: only commands its capabilities allow (a
//! shell line by the programs it runs, [`crate::shell_line`]), run in
//! the agent's own folder under the agent's confinement (so what they
//! change is read back with the turn, and nothing outside is reached),
//! killed at `agents.command_timeout_ms` or when the agent asks; each one
//! an effect of kind `command`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_client_protocol::v1::schema::{CreateTerminalRequest, TerminalExitStatus};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::requests::Refused;
use super::{Place, Route};
use crate::command::Ran;

/// How a terminal's command ended (`None` while it runs).
type Outcome = Option<Arc<Result<Ran, crate::command::CommandError>>>;

struct Terminal {
    session: String,
    ended: watch::Receiver<Outcome>,
    kill: CancellationToken,
}

/// The terminals of every session of one agent process.
pub struct Terminals {
    place: Place,
    next: AtomicU64,
    open: Mutex<HashMap<String, Terminal>>,
}

impl Terminals {
    pub(crate) fn new(place: Place) -> Self {
        Terminals {
            place,
            next: AtomicU64::new(0),
            open: Mutex::new(HashMap::new()),
        }
    }

    /// Starts `req`'s command for `route` if its capabilities allow it;
    /// the terminal's ID.
    pub fn create(
        &self,
        route: Arc<Route>,
        req: &CreateTerminalRequest,
        limit: Duration,
    ) -> Result<String, Refused> {
        let (argv, line) = command_of(req);
        let judged = match &line {
            Some(line) if route.human_allowed(line) => Ok(()),
            Some(line) => route.caps.check_line(line),
            None => route.caps.check_command(&argv),
        };
        if let Err(denied) = judged {
            route.store.effect_record(
                "command",
                Some(&route.agent_id),
                &argv.join(" "),
                &format!("refused: {denied}"),
                0,
            );
            return Err(denied.into());
        }
        let id = format!("term-{}", self.next.fetch_add(1, Ordering::Relaxed) + 1);
        let (tx, rx) = watch::channel(None);
        let kill = CancellationToken::new();
        let stop = kill.clone();
        (route.progress)(format!("running {}", argv.join(" ")));
        let place = self.place.clone();
        tokio::task::spawn_blocking(move || {
            let ran = crate::command::run_confined(
                &argv,
                &place.dir,
                place.confined.as_ref(),
                limit,
                &move || stop.is_cancelled(),
            );
            let output = match &ran {
                Ok(r) => {
                    route.note_refusals(&format!("{}\n{}", r.stdout, r.stderr));
                    r.describe()
                }
                Err(e) => format!("error: {e}"),
            };
            let ms = ran.as_ref().map_or(0, |r| r.duration.as_millis() as i64);
            route.store.effect_record(
                "command",
                Some(&route.agent_id),
                &argv.join(" "),
                &output,
                ms,
            );
            // Nobody waits for this terminal's output any more.
            let _ = tx.send(Some(Arc::new(ran)));
        });
        if let Ok(mut open) = self.open.lock() {
            open.insert(
                id.clone(),
                Terminal {
                    session: req.session_id.0.to_string(),
                    ended: rx,
                    kill,
                },
            );
        }
        Ok(id)
    }

    fn get(
        &self,
        session: &str,
        id: &str,
    ) -> Result<(watch::Receiver<Outcome>, CancellationToken), Refused> {
        let open = self.open.lock().map_err(|_| Refused::Dropped)?;
        match open.get(id) {
            Some(t) if t.session == session => Ok((t.ended.clone(), t.kill.clone())),
            _ => Err(Refused::NoTerminal(id.to_owned())),
        }
    }

    /// Its output so far (all of it once it ended) and how it ended.
    pub fn output(
        &self,
        session: &str,
        id: &str,
    ) -> Result<(String, Option<TerminalExitStatus>), Refused> {
        let (ended, _) = self.get(session, id)?;
        let outcome = ended.borrow().clone();
        Ok(match outcome {
            None => (String::new(), None),
            Some(result) => match &*result {
                Ok(ran) => (format!("{}{}", ran.stdout, ran.stderr), Some(status(ran))),
                Err(e) => (
                    e.to_string(),
                    Some(TerminalExitStatus::new().exit_code(127u32)),
                ),
            },
        })
    }

    /// Waits until the command ended; how it did.
    pub async fn wait(&self, session: &str, id: &str) -> Result<TerminalExitStatus, Refused> {
        let (mut ended, _) = self.get(session, id)?;
        let outcome = ended
            .wait_for(Option::is_some)
            .await
            .map_err(|_| Refused::Dropped)?
            .clone();
        Ok(match outcome.as_deref() {
            Some(Ok(ran)) => status(ran),
            _ => TerminalExitStatus::new().exit_code(127u32),
        })
    }

    pub fn kill(&self, session: &str, id: &str) -> Result<(), Refused> {
        self.get(session, id)?.1.cancel();
        Ok(())
    }

    /// Kills the command if it still runs and forgets the terminal.
    pub fn release(&self, session: &str, id: &str) -> Result<(), Refused> {
        self.kill(session, id)?;
        if let Ok(mut open) = self.open.lock() {
            open.remove(id);
        }
        Ok(())
    }
}

/// The shells whose `-c LINE` is a line to judge by what it runs.
const SHELLS: &[&str] = &["sh", "bash", "dash", "zsh"];

/// What `req` runs, and the shell line it is when it is one: a whole line
/// as its command with no arguments (Claude Code sends its `Bash` so, as
/// Zed runs it through a shell) runs as `sh -c LINE`; a shell given
/// `-c LINE` runs as given.
fn command_of(req: &CreateTerminalRequest) -> (Vec<String>, Option<String>) {
    let command = &req.command;
    if req.args.is_empty() && !is_plain_program(command) {
        let argv = vec!["sh".to_owned(), "-c".to_owned(), command.clone()];
        return (argv, Some(command.clone()));
    }
    let mut argv = vec![command.clone()];
    argv.extend(req.args.iter().cloned());
    let shell = SHELLS.contains(&command.rsplit('/').next().unwrap_or(command));
    let line = match req.args.as_slice() {
        [flag, line, ..] if shell && matches!(flag.as_str(), "-c" | "-lc" | "-ic") => {
            Some(line.clone())
        }
        _ => None,
    };
    (argv, line)
}

/// Whether `command` names one program and nothing a shell would read.
fn is_plain_program(command: &str) -> bool {
    !command.is_empty()
        && command
            .chars()
            .all(|c| c.is_alphanumeric() || "-_./+@%:,=".contains(c))
}

fn status(ran: &Ran) -> TerminalExitStatus {
    match ran.status {
        Some(code) => TerminalExitStatus::new().exit_code(code as u32),
        None => TerminalExitStatus::new().signal("SIGKILL".to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn create(command: &str, args: &[&str]) -> CreateTerminalRequest {
        serde_json::from_value(serde_json::json!({
            "sessionId": "s", "command": command, "args": args,
        }))
        .unwrap()
    }

    #[test]
    fn a_whole_line_runs_through_sh_and_is_judged_as_a_line() {
        let (argv, line) = command_of(&create("ls -la | wc -l", &[]));
        assert_eq!(argv, ["sh", "-c", "ls -la | wc -l"]);
        assert_eq!(line.as_deref(), Some("ls -la | wc -l"));
        let (argv, line) = command_of(&create("/bin/bash", &["-lc", "make test"]));
        assert_eq!(argv, ["/bin/bash", "-lc", "make test"]);
        assert_eq!(line.as_deref(), Some("make test"));
        // A program with its arguments is judged as one, never through sh.
        let (argv, line) = command_of(&create("python3", &["-c", "print(1)"]));
        assert_eq!(argv, ["python3", "-c", "print(1)"]);
        assert_eq!(line, None);
        assert_eq!(
            command_of(&create("pytest", &[])),
            (vec!["pytest".to_owned()], None)
        );
    }
}
