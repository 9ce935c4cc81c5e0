//! `chimera serve`, `chimera a2a` and `chimera mcp`: this project served
//! to other programs, or another agent reached from the shell.

use super::*;

/// `chimera a2a`: this project served as an A2A agent, or another agent
/// reached from the shell.
pub(super) async fn a2a(s: &mut Session, action: A2aAction) -> Result<i32, Failure> {
    use crate::a2a;
    let http = crate::http::http_client();
    let token = |given: Option<String>| given.or_else(|| std::env::var("A2A_TOKEN").ok());
    let failed = |e: a2a::A2aError| Failure::Failed(e.to_string());
    let endpoint = |card: &Value| card["url"].as_str().unwrap_or_default().to_owned();
    match action {
        A2aAction::Serve { port } => serve(s, port).await,
        A2aAction::Discover { url } => {
            let card = a2a::discover(&http, &url).await.map_err(failed)?;
            output::a2a_card(&card, s.json);
            Ok(exit::OK)
        }
        A2aAction::Delegate {
            url,
            text,
            token: given,
            no_wait,
        } => {
            let card = a2a::discover(&http, &url).await.map_err(failed)?;
            let text = text.join(" ");
            let started = Instant::now();
            let sent = a2a::send(
                &http,
                &endpoint(&card),
                token(given).as_deref(),
                &text,
                !no_wait,
            )
            .await;
            let said = match &sent {
                Ok(t) => format!(
                    "{} {}",
                    t["id"].as_str().unwrap_or("-"),
                    t["status"]["state"].as_str().unwrap_or("-")
                ),
                Err(e) => format!("error: {e}"),
            };
            if let Ok(store) = Store::open(&s.root) {
                let what = format!(
                    "delegate to {} ({url}): {text}",
                    card["name"].as_str().unwrap_or("?")
                );
                store.effect_record(
                    "a2a",
                    None,
                    &what,
                    &said,
                    started.elapsed().as_millis() as i64,
                );
            }
            output::a2a_task(&sent.map_err(failed)?, s.json);
            Ok(exit::OK)
        }
        A2aAction::Status {
            url,
            task,
            token: given,
        } => {
            let card = a2a::discover(&http, &url).await.map_err(failed)?;
            let got = a2a::status(&http, &endpoint(&card), token(given).as_deref(), &task)
                .await
                .map_err(failed)?;
            output::a2a_task(&got, s.json);
            Ok(exit::OK)
        }
    }
}

/// `chimera serve`: a core with the HTTP API on, until Ctrl-C.
pub(super) async fn serve(s: &mut Session, port: Option<u16>) -> Result<i32, Failure> {
    if s.remote.alive().await {
        return Err(Failure::Failed(format!(
            "a core already serves {} (Neovim, or another `chimera serve`); its API, if on, is in .chimera/api.json",
            s.root.display()
        )));
    }
    let api = &mut s.loaded.config.api;
    api.enabled = true;
    if let Some(p) = port {
        api.port = p;
    }
    // A taken port is said at once, not after the core gave up on it.
    if api.port != 0 {
        if let Err(e) = std::net::TcpListener::bind(("127.0.0.1", api.port)) {
            return Err(Failure::Failed(format!(
                "cannot listen on 127.0.0.1:{}: {e}; pick another --port (or 0 for any free one)",
                api.port
            )));
        }
    }
    let client = s.server().await?;
    if !s.served_here(&client).await {
        return Err(Failure::Failed(format!(
            "another core started serving {} meanwhile",
            s.root.display()
        )));
    }
    // The API is announced once it listens (or the core said why not).
    let deadline = Instant::now() + START_LIMIT;
    let info = loop {
        match crate::api::http::read_info(&s.root) {
            Some(i) if i.pid == std::process::id() => break i,
            _ if Instant::now() >= deadline => {
                return Err(Failure::Failed(
                    "the HTTP API did not start (see the message above)".into(),
                ))
            }
            _ => tokio::time::sleep(Duration::from_millis(20)).await,
        }
    };
    if s.json {
        out!(
            "{}",
            json!({ "root": s.root, "port": info.port, "dashboard": info.login_url(crate::api::login::PRINTED) })
        );
    } else {
        out!(
            "Dashboard: {} (logs in once, within 10 minutes; then {})",
            info.login_url(crate::api::login::PRINTED),
            info.dashboard_url()
        );
        out!(
            "API:       http://127.0.0.1:{}/ (token in {})",
            info.port,
            crate::api::http::info_path(&s.root).display()
        );
        eprintln!("chimera: serving {} (Ctrl-C stops)", s.root.display());
    }
    stopped().await;
    Ok(exit::OK)
}

/// Ctrl-C, or a polite kill: either way the core stops cleanly (and takes
/// `.chimera/api.json` with it).
async fn stopped() {
    use tokio::signal::unix::{signal, SignalKind};
    match signal(SignalKind::terminate()) {
        Ok(mut term) => {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
        }
        Err(_) => {
            // No signal handler here: the server runs until the process is killed.
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

/// `chimera mcp serve`: an MCP host on stdin/stdout, its session in the
/// project's core (Neovim's when it has the project open), until the host
/// closes stdin.
async fn mcp_serve(s: &mut Session, preset: Option<String>) -> Result<i32, Failure> {
    if let Some(p) = &preset {
        crate::capabilities::Capabilities::new(&s.loaded.config.capabilities, Some(p))
            .map_err(|e| Failure::Usage(format!("--preset: {e}")))?;
    }
    let bridge = crate::mcp::server::Bridge::new(s.server().await?, preset);
    let running = rmcp::ServiceExt::serve(bridge.clone(), rmcp::transport::stdio())
        .await
        .map_err(|e| Failure::Failed(format!("the MCP host's handshake failed: {e}")))?;
    let ended = running.waiting().await;
    bridge.close().await;
    match ended {
        Ok(_) => Ok(exit::OK),
        Err(e) => Err(Failure::Failed(format!("the MCP session stopped: {e}"))),
    }
}

/// `chimera mcp list|call`: the configured MCP servers, called by the human
/// (no capabilities between them: the person at the shell decides).
pub(super) async fn mcp(s: &mut Session, action: McpAction) -> Result<i32, Failure> {
    let call = match action {
        McpAction::Serve { preset } => return mcp_serve(s, preset).await,
        McpAction::List => None,
        McpAction::Call { tool, args } => Some((tool, args)),
    };
    let services = crate::agent::Services::new(&s.loaded.config, s.root.clone());
    let cancel = tokio_util::sync::CancellationToken::new();
    if s.loaded.config.mcp.servers.is_empty() {
        return Err(Failure::Usage(
            "no MCP servers are configured (mcp.servers in .chimera/config.json or setup{})".into(),
        ));
    }
    match call {
        None => {
            let (tools, errors) = services.mcp.tools(|_| true, &cancel).await;
            output::mcp_tools(&tools, s.json);
            for e in &errors {
                eprintln!("chimera: {e}");
            }
            Ok(if errors.is_empty() {
                exit::OK
            } else {
                exit::FAILED
            })
        }
        Some((tool, args)) => {
            let args: Value = serde_json::from_str(&args)
                .map_err(|e| Failure::Usage(format!("ARGS must be a JSON object: {e}")))?;
            if !args.is_object() {
                return Err(Failure::Usage(format!(
                    "ARGS must be a JSON object, not {args}"
                )));
            }
            let started = Instant::now();
            let called = services.mcp.call(&tool, args.clone(), &cancel).await;
            let said = match &called {
                Ok(text) => text.clone(),
                Err(e) => format!("error: {e}"),
            };
            // An MCP call may act on the world: it is an effect like an agent's.
            if let Ok(store) = Store::open(&s.root) {
                store.effect_record(
                    "mcp",
                    None,
                    &format!("{tool} {args}"),
                    &said,
                    started.elapsed().as_millis() as i64,
                );
            }
            let text = called.map_err(|e| Failure::Failed(e.to_string()))?;
            if s.json {
                out!("{}", json!({ "tool": tool, "output": text }));
            } else {
                out!("{text}");
            }
            Ok(exit::OK)
        }
    }
}
