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

use crate::api::client::{Client, ClientError};

/// One tool: name, what it does (for the host's model), its arguments.
struct ToolDef {
    name: &'static str,
    description: &'static str,
    /// `(name, JSON type, description)`; a type ending in `?` is optional.
    params: &'static [(&'static str, &'static str, &'static str)],
}

const PATH: (&str, &str, &str) = ("path", "string", "project path, relative to the root");
const NODE: (&str, &str, &str) = ("id", "string", "a Remora node ID (from `nodes`)");

/// Every tool, in the order hosts list them.
const TOOLS: &[ToolDef] = &[
    ToolDef {
        name: "read_file",
        description: "Read a project file as the human sees it (unsaved editor buffers included), with what you wrote in this session over it.",
        params: &[PATH],
    },
    ToolDef {
        name: "list_dir",
        description: "List a directory of the project (\"\" or no path: the root); directories end in /.",
        params: &[("path", "string?", "directory")],
    },
    ToolDef {
        name: "search_files",
        description: "Project files whose path matches a glob (with * ? or [), else files containing the text.",
        params: &[("pattern", "string", "glob or text")],
    },
    ToolDef {
        name: "write_file",
        description: "Write a whole file into this session's overlay. The human's files do not change: call `propose` when done, and the human reviews the change in the editor.",
        params: &[PATH, ("content", "string", "the complete new content")],
    },
    ToolDef {
        name: "delete_file",
        description: "Delete a file in this session's overlay (proposed like a write).",
        params: &[PATH],
    },
    ToolDef {
        name: "propose",
        description: "Turn what this session wrote into a proposal for the human to review (accept or reject, per hunk). Returns its ID and diff; the next write starts a new proposal.",
        params: &[("summary", "string?", "one line: what the change does")],
    },
    ToolDef {
        name: "proposal_status",
        description: "A proposal's state (completed = waiting for the human, accepted, rejected with feedback, failed) and its diff.",
        params: &[("id", "string", "the proposal's ID (from `propose`)")],
    },
    ToolDef {
        name: "nodes",
        description: "The functions, classes and methods of a file (Remora nodes), with their IDs and lines.",
        params: &[PATH],
    },
    ToolDef {
        name: "node",
        description: "One Remora node with its source.",
        params: &[NODE],
    },
    ToolDef {
        name: "callers",
        description: "The nodes that call a node.",
        params: &[NODE],
    },
    ToolDef {
        name: "callees",
        description: "The nodes a node calls.",
        params: &[NODE],
    },
    ToolDef {
        name: "snapshot",
        description: "Record a snapshot of the project the human can roll back to.",
        params: &[("message", "string?", "what it marks")],
    },
    ToolDef {
        name: "history",
        description: "The project's snapshots, newest last.",
        params: &[],
    },
];

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
        let tools = TOOLS
            .iter()
            .map(|t| {
                let spec = crate::agent::tools::spec(t.name, t.description, t.params);
                let schema = spec.parameters.as_object().cloned().unwrap_or_default();
                Tool::new(t.name, t.description, Arc::new(schema))
            })
            .collect();
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if !TOOLS.iter().any(|t| t.name == request.name) {
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
