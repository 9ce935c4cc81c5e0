//! The ACP connection with one agent process: its requests (files,
//! terminals, permissions) answered through the route of the session they
//! name, and Chimera's commands (new session, prompt, cancel) sent to it.

use std::sync::Arc;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    AuthenticateRequest, CancelNotification, ClientCapabilities, ContentBlock,
    CreateTerminalRequest, CreateTerminalResponse, ErrorCode, FileSystemCapabilities,
    InitializeRequest, KillTerminalRequest, KillTerminalResponse, NewSessionRequest,
    NewSessionResponse, PromptRequest, ReadTextFileRequest, ReadTextFileResponse,
    ReleaseTerminalRequest, ReleaseTerminalResponse, RequestPermissionRequest,
    RequestPermissionResponse, SessionId, SessionNotification, SetSessionModeRequest, TerminalId,
    TerminalOutputRequest, TerminalOutputResponse, TextContent, WaitForTerminalExitRequest,
    WaitForTerminalExitResponse, WriteTextFileRequest, WriteTextFileResponse,
};
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::Agent;
use tokio::sync::mpsc;

use super::requests::Refused;
use super::terminals::Terminals;
use super::{Command, Place, Route, Routes};

/// Why a request to the agent got no answer.
#[derive(Debug, thiserror::Error)]
pub(super) enum NoAnswer {
    /// Its output ended: the process exited or closed it.
    #[error("it went away")]
    Gone,
    /// It wants a login that no variable it was given provides.
    #[error("it needs a login")]
    NeedsLogin,
    /// It answered with an error.
    #[error("{0}")]
    Error(String),
}

impl NoAnswer {
    /// An error answer said with what was asked (`what`: "its login …").
    fn about(self, what: &str) -> NoAnswer {
        match self {
            NoAnswer::Error(e) => NoAnswer::Error(format!("{what} failed: {e}")),
            other => other,
        }
    }
}

impl From<agent_client_protocol::Error> for NoAnswer {
    fn from(e: agent_client_protocol::Error) -> Self {
        if agent_client_protocol::is_incoming_transport_closed(&e) {
            NoAnswer::Gone
        } else {
            NoAnswer::Error(e.to_string())
        }
    }
}

pub(super) fn route_of(routes: &Routes, session: &SessionId) -> Option<Arc<Route>> {
    routes.lock().ok()?.get(&*session.0).cloned()
}

/// A request refused, with why (said to the agent).
fn refused(why: &Refused) -> agent_client_protocol::Error {
    agent_client_protocol::Error::invalid_params().data(why.to_string())
}

fn no_session(session: &SessionId) -> agent_client_protocol::Error {
    agent_client_protocol::Error::invalid_params()
        .data(format!("no task of Chimera's runs in session {session}"))
}

/// Speaks ACP with the agent until it goes or `commands` closes.
pub(super) async fn connect<T>(
    transport: T,
    routes: Routes,
    place: Place,
    commands: mpsc::UnboundedReceiver<Command>,
) -> Result<(), agent_client_protocol::Error>
where
    T: agent_client_protocol::ConnectTo<agent_client_protocol::Client> + 'static,
{
    use agent_client_protocol::{on_receive_notification, on_receive_request};
    let peer = Arc::new(Peer {
        routes,
        terminals: Terminals::new(place),
    });
    let p = || peer.clone();
    agent_client_protocol::Client
        .v1()
        .name("chimera")
        .on_receive_notification(
            {
                let p = p();
                async move |n: SessionNotification, _cx| p.update(n)
            },
            on_receive_notification!(),
        )
        .on_receive_request(
            {
                let p = p();
                async move |req: ReadTextFileRequest, responder, _cx| p.read(req, responder)
            },
            on_receive_request!(),
        )
        .on_receive_request(
            {
                let p = p();
                async move |req: WriteTextFileRequest, responder, _cx| p.write(req, responder)
            },
            on_receive_request!(),
        )
        .on_receive_request(
            {
                let p = p();
                async move |req: RequestPermissionRequest, responder, cx| {
                    let route = route_of(&p.routes, &req.session_id);
                    // The human may take a while: not the connection's
                    // other messages.
                    cx.spawn(permission(route, req, responder))
                }
            },
            on_receive_request!(),
        )
        .on_receive_request(
            {
                let p = p();
                async move |req: CreateTerminalRequest, responder, _cx| p.create(req, responder)
            },
            on_receive_request!(),
        )
        .on_receive_request(
            {
                let p = p();
                async move |req: TerminalOutputRequest, responder, _cx| p.output(req, responder)
            },
            on_receive_request!(),
        )
        .on_receive_request(
            {
                let p = p();
                async move |req: WaitForTerminalExitRequest, responder, cx| {
                    // Waiting must not hold up the connection's other messages.
                    cx.spawn(p.clone().wait(req, responder))
                }
            },
            on_receive_request!(),
        )
        .on_receive_request(
            {
                let p = p();
                async move |req: KillTerminalRequest, responder, _cx| p.kill(req, responder)
            },
            on_receive_request!(),
        )
        .on_receive_request(
            {
                let p = p();
                async move |req: ReleaseTerminalRequest, responder, _cx| p.release(req, responder)
            },
            on_receive_request!(),
        )
        .connect_with(transport, async move |cx: ConnectionTo<Agent>| {
            serve(cx, commands).await
        })
        .await
}

/// What the agent's requests reach: the routes of its sessions, and the
/// terminals it opened.
struct Peer {
    routes: Routes,
    terminals: Terminals,
}

type Responder<T> = agent_client_protocol::v1::Responder<T>;

/// Answers a request with `result`, a refusal said to the agent.
fn answer<T: agent_client_protocol::JsonRpcResponse>(
    responder: Responder<T>,
    result: Result<T, Refused>,
) -> Result<(), agent_client_protocol::Error> {
    match result {
        Ok(response) => responder.respond(response),
        Err(why) => responder.respond_with_error(refused(&why)),
    }
}

impl Peer {
    /// What the agent did in a session, for that session's run.
    fn update(&self, n: SessionNotification) -> Result<(), agent_client_protocol::Error> {
        if let Some(route) = route_of(&self.routes, &n.session_id) {
            route.update(&n.update);
        }
        Ok(())
    }

    fn kill(
        &self,
        req: KillTerminalRequest,
        responder: Responder<KillTerminalResponse>,
    ) -> Result<(), agent_client_protocol::Error> {
        let killed = self.terminals.kill(&req.session_id.0, &req.terminal_id.0);
        answer(responder, killed.map(|()| KillTerminalResponse::new()))
    }

    fn release(
        &self,
        req: ReleaseTerminalRequest,
        responder: Responder<ReleaseTerminalResponse>,
    ) -> Result<(), agent_client_protocol::Error> {
        let released = self
            .terminals
            .release(&req.session_id.0, &req.terminal_id.0);
        answer(responder, released.map(|()| ReleaseTerminalResponse::new()))
    }

    fn read(
        &self,
        req: ReadTextFileRequest,
        responder: Responder<ReadTextFileResponse>,
    ) -> Result<(), agent_client_protocol::Error> {
        let Some(route) = route_of(&self.routes, &req.session_id) else {
            return responder.respond_with_error(no_session(&req.session_id));
        };
        answer(responder, route.read(&req).map(ReadTextFileResponse::new))
    }

    fn write(
        &self,
        req: WriteTextFileRequest,
        responder: Responder<WriteTextFileResponse>,
    ) -> Result<(), agent_client_protocol::Error> {
        let Some(route) = route_of(&self.routes, &req.session_id) else {
            return responder.respond_with_error(no_session(&req.session_id));
        };
        answer(
            responder,
            route.write(&req).map(|()| WriteTextFileResponse::new()),
        )
    }

    fn create(
        &self,
        req: CreateTerminalRequest,
        responder: Responder<CreateTerminalResponse>,
    ) -> Result<(), agent_client_protocol::Error> {
        let Some(route) = route_of(&self.routes, &req.session_id) else {
            return responder.respond_with_error(no_session(&req.session_id));
        };
        let limit = route.command_timeout;
        let made = self.terminals.create(route, &req, limit);
        answer(
            responder,
            made.map(|id| CreateTerminalResponse::new(TerminalId::new(id))),
        )
    }

    fn output(
        &self,
        req: TerminalOutputRequest,
        responder: Responder<TerminalOutputResponse>,
    ) -> Result<(), agent_client_protocol::Error> {
        let output = self.terminals.output(&req.session_id.0, &req.terminal_id.0);
        answer(
            responder,
            output.map(|(output, status)| {
                TerminalOutputResponse::new(output, false).exit_status(status)
            }),
        )
    }

    async fn wait(
        self: Arc<Self>,
        req: WaitForTerminalExitRequest,
        responder: Responder<WaitForTerminalExitResponse>,
    ) -> Result<(), agent_client_protocol::Error> {
        let status = self
            .terminals
            .wait(&req.session_id.0, &req.terminal_id.0)
            .await;
        answer(responder, status.map(WaitForTerminalExitResponse::new))
    }
}

/// The human's answer to the agent's request for a permission (cancelled
/// when no task of Chimera's runs in its session).
async fn permission(
    route: Option<Arc<Route>>,
    req: RequestPermissionRequest,
    responder: Responder<RequestPermissionResponse>,
) -> Result<(), agent_client_protocol::Error> {
    let outcome = match route {
        Some(route) => route.permission(&req).await,
        None => agent_client_protocol::v1::schema::RequestPermissionOutcome::Cancelled,
    };
    responder.respond(RequestPermissionResponse::new(outcome))
}

/// Initializes the connection, then runs Chimera's `commands` on it
/// until they close.
async fn serve(
    cx: ConnectionTo<Agent>,
    mut commands: mpsc::UnboundedReceiver<Command>,
) -> Result<(), agent_client_protocol::Error> {
    let fs = FileSystemCapabilities::new()
        .read_text_file(true)
        .write_text_file(true);
    cx.send_request(
        InitializeRequest::new(ProtocolVersion::V1)
            .client_capabilities(ClientCapabilities::new().fs(fs).terminal(true)),
    )
    .block_task()
    .await?;
    while let Some(command) = commands.recv().await {
        match command {
            Command::NewSession {
                cwd,
                mode,
                login,
                reply,
            } => {
                let made = match new_session(&cx, cwd, login).await {
                    Ok(made) => put_in_mode(&cx, made, mode).await,
                    Err(e) => Err(e),
                };
                // The task that asked was cancelled meanwhile.
                reply.send(made).ok();
            }
            Command::Prompt {
                session,
                text,
                reply,
            } => {
                // A turn takes long; other sessions go on meanwhile.
                let cx = cx.clone();
                tokio::spawn(async move {
                    let prompt = PromptRequest::new(
                        session,
                        vec![ContentBlock::Text(TextContent::new(text))],
                    );
                    let done = cx
                        .send_request(prompt)
                        .block_task()
                        .await
                        .map(|r| r.stop_reason)
                        .map_err(NoAnswer::from);
                    reply.send(done).ok();
                });
            }
            Command::Cancel { session } => {
                // A connection gone ends the turn anyway.
                cx.send_notification(CancelNotification::new(session)).ok();
            }
        }
    }
    // The process was let go: the connection stays until it is ended (a
    // last `session/cancel` still reaches it).
    std::future::pending::<()>().await;
    Ok(())
}

/// A new session in `cwd`; when the agent asks to be logged in first,
/// logged in by `login` (a method that reads a variable it was given),
/// then asked again once.
async fn new_session(
    cx: &ConnectionTo<Agent>,
    cwd: std::path::PathBuf,
    login: Option<&'static str>,
) -> Result<NewSessionResponse, NoAnswer> {
    let ask = || {
        cx.send_request(NewSessionRequest::new(cwd.clone()))
            .block_task()
    };
    match ask().await {
        Err(e) if e.code == ErrorCode::AuthRequired => {
            let Some(method) = login else {
                return Err(NoAnswer::NeedsLogin);
            };
            cx.send_request(AuthenticateRequest::new(method))
                .block_task()
                .await
                .map_err(|e| NoAnswer::from(e).about(&format!("its login {method:?}")))?;
            ask().await.map_err(NoAnswer::from)
        }
        other => other.map_err(NoAnswer::from),
    }
}

/// Puts a new session in `mode` when the agent offers it and is in
/// another; its id.
async fn put_in_mode(
    cx: &ConnectionTo<Agent>,
    made: NewSessionResponse,
    mode: Option<&'static str>,
) -> Result<SessionId, NoAnswer> {
    let offered = made.modes.as_ref().filter(|m| {
        mode.is_some_and(|want| {
            m.current_mode_id.0.as_ref() != want
                && m.available_modes.iter().any(|a| a.id.0.as_ref() == want)
        })
    });
    if let (Some(_), Some(want)) = (offered, mode) {
        cx.send_request(SetSessionModeRequest::new(made.session_id.clone(), want))
            .block_task()
            .await
            .map_err(|e| NoAnswer::from(e).about(&format!("session mode {want:?}")))?;
    }
    Ok(made.session_id)
}
