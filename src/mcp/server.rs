//! Chimera as an MCP server (`chimera mcp serve`, and `/mcp` on the HTTP
//! API): Chimera's own tools for any MCP host, over the official SDK
//! (rmcp). The host's session is a session of the project's core (see
//! [`crate::api::sessions`]), opened at its first call: this module only
//! describes the tools and carries each call there and its answer back.

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    InitializeResult, ListToolsResult, PaginatedRequestParams, ServerCapabilities, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler};
use serde_json::{json, Map, Value};
use tokio::sync::OnceCell;

use crate::agent::tools::table;
use crate::api::client::{Client, ClientError};

/// One MCP host's connection: its tools go to the core `core` reaches,
/// under `preset`. Its clones share the session, which ends when the last
/// of them is dropped (an HTTP host's session closed or expired) or at
/// [`Bridge::close`].
#[derive(Clone)]
pub struct Bridge {
    core: Client,
    preset: Option<String>,
    /// The core's session, opened at the first call (when the host's name
    /// is known).
    session: Arc<OnceCell<Opened>>,
}

/// A session opened in the core.
struct Opened {
    core: Client,
    id: String,
    closed: std::sync::atomic::AtomicBool,
}

impl Opened {
    async fn close(&self) {
        if !self.closed.swap(true, std::sync::atomic::Ordering::SeqCst) {
            // The core may be gone already; its sessions end with it.
            let _ = self
                .core
                .call("DELETE", &format!("/sessions/{}", self.id), None)
                .await;
        }
    }
}

impl Drop for Opened {
    fn drop(&mut self) {
        if self.closed.load(std::sync::atomic::Ordering::SeqCst) {
            return;
        }
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            let (core, id) = (self.core.clone(), self.id.clone());
            rt.spawn(async move {
                // As in `close`: a core that is gone has no session to end.
                let _ = core.call("DELETE", &format!("/sessions/{id}"), None).await;
            });
        }
    }
}

impl Bridge {
    pub fn new(core: Client, preset: Option<String>) -> Self {
        Self {
            core,
            preset,
            session: Arc::new(OnceCell::new()),
        }
    }

    async fn session(&self, client: &str) -> Result<&String, ClientError> {
        let opened = self
            .session
            .get_or_try_init(|| async {
                let opened = self
                    .core
                    .call(
                        "POST",
                        "/sessions",
                        Some(json!({ "client": client, "preset": self.preset })),
                    )
                    .await?;
                Ok::<_, ClientError>(Opened {
                    core: self.core.clone(),
                    id: opened["session"].as_str().unwrap_or_default().to_owned(),
                    closed: Default::default(),
                })
            })
            .await?;
        Ok(&opened.id)
    }

    /// Calls `tool` with `args` in this host's session: the result as
    /// text, or the core's refusal (which the host's model reads).
    pub async fn call(
        &self,
        client: &str,
        tool: &str,
        args: Map<String, Value>,
    ) -> Result<String, String> {
        let session = self.session(client).await.map_err(say)?;
        let mut body = json!({ "tool": tool, "args": args });
        // Refused here: the core would refuse it unread, and the socket
        // close can beat its answer. The core is told, with the contents
        // by their size, so the refusal is in the effect log too.
        let size = body.to_string().len() as u64;
        if size > crate::api::client::BODY_LIMIT {
            body = json!({
                "tool": tool,
                "args": crate::brief::shown(&args),
                "refused": format!(
                    "the call is {size} bytes; at most {} are taken (files up to sync.max_file_bytes)",
                    crate::api::client::BODY_LIMIT
                ),
            });
        }
        let answer = self
            .core
            .call("POST", &format!("/sessions/{session}/call"), Some(body))
            .await
            .map_err(say)?;
        Ok(match &answer["result"] {
            Value::String(s) => s.clone(),
            other => serde_json::to_string_pretty(other).unwrap_or_default(),
        })
    }

    /// Ends the session: what it wrote and did not propose is dropped.
    pub async fn close(&self) {
        if let Some(opened) = self.session.get() {
            opened.close().await;
        }
    }
}

/// `/mcp` of the HTTP API: the same tools over MCP's streamable HTTP, one
/// session per host, each reaching the core through `api` in-process.
pub fn http_service(
    api: axum::Router,
    stop: tokio_util::sync::CancellationToken,
) -> rmcp::transport::streamable_http_server::StreamableHttpService<
    Bridge,
    rmcp::transport::streamable_http_server::session::local::LocalSessionManager,
> {
    use rmcp::transport::streamable_http_server::{
        session::local::LocalSessionManager, StreamableHttpServerConfig, StreamableHttpService,
    };
    StreamableHttpService::new(
        move || Ok(Bridge::new(Client::local(api.clone()), None)),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default().with_cancellation_token(stop),
    )
}

/// What the host's model is told when a call did not go through.
fn say(e: ClientError) -> String {
    match e {
        ClientError::Api { message, .. } => message,
        e => format!("Chimera's core could not be reached: {e}"),
    }
}

impl ServerHandler for Bridge {
    fn get_info(&self) -> InitializeResult {
        InitializeResult::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("chimera", crate::VERSION))
            .with_instructions(
                "Chimera: read the project as the human sees it; write_file and delete_file go into \
                 your own overlay, never the human's files; call propose when done and the human \
                 reviews your change in the editor. proposal_status tells you the verdict.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        // The JSON schemas are made as tool mode makes its own.
        let tools = table::for_mcp()
            .map(|(t, doc)| {
                let spec = crate::agent::tools::spec(t.name, doc, t.params);
                let schema = spec.parameters.as_object().cloned().unwrap_or_default();
                Tool::new(t.name, doc, Arc::new(schema))
            })
            .collect();
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if !table::for_mcp().any(|(t, _)| t.name == request.name) {
            return Err(ErrorData::invalid_params(
                format!("no tool `{}`; tools/list names them", request.name),
                None,
            ));
        }
        let client = context
            .peer
            .peer_info()
            .map(|i| i.client_info.name.clone())
            .unwrap_or_default();
        let args = request.arguments.unwrap_or_default();
        let result = match self.call(&client, &request.name, args).await {
            Ok(text) => CallToolResult::success(vec![ContentBlock::text(text)]),
            Err(message) => CallToolResult::error(vec![ContentBlock::text(message)]),
        };
        Ok(result.into())
    }
}
