//! MCP client (Model Context Protocol): the servers in `mcp.servers` — a
//! stdio command or a streamable-HTTP URL — are started on first use, asked
//! for their tools, and called over JSON-RPC. Their tools join the
//! tool-mode registry as `server.tool`; the agent's capabilities decide
//! which it may call, and every call is recorded in the effect log.

pub mod server;
mod transport;

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value as Json;
use tokio_util::sync::CancellationToken;

use transport::Connection;

/// The `mcp` section of the configuration.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct McpConfig {
    /// Servers by name; their tools are called `name.tool`.
    pub servers: BTreeMap<String, ServerConfig>,
    /// Time limit of one request to a server (start-up included), ms.
    pub timeout_ms: u64,
}

impl Default for McpConfig {
    fn default() -> Self {
        Self {
            servers: BTreeMap::new(),
            timeout_ms: 30_000,
        }
    }
}

/// How to reach one server: `command` (started with its stdin and stdout
/// as the channel) or `url` (streamable HTTP).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct ServerConfig {
    /// The program and its arguments (no shell).
    pub command: Vec<String>,
    /// Extra environment variables for the command.
    pub env: BTreeMap<String, String>,
    /// The user's environment variables it is given besides the
    /// launcher's allow-list ([`crate::launch::env`]): its token.
    pub pass_env: Vec<String>,
    /// The server's streamable-HTTP endpoint.
    pub url: Option<String>,
}

/// Why an MCP request failed; the text is what the agent (or user) reads.
#[derive(Debug, Clone, thiserror::Error)]
pub enum McpError {
    #[error("no MCP server `{0}` is configured (mcp.servers)")]
    UnknownServer(String),
    #[error("MCP tool names are `server.tool`; `{0}` is not one")]
    BadName(String),
    #[error("the MCP server `{server}` has no tool `{tool}` (it has: {have})")]
    UnknownTool {
        server: String,
        tool: String,
        have: String,
    },
    #[error("mcp.servers.{server}: {detail}")]
    Config { server: String, detail: String },
    #[error("the MCP server `{server}` could not be started: {detail}")]
    Start { server: String, detail: String },
    #[error("the MCP server `{server}` broke the protocol: {detail}")]
    Protocol { server: String, detail: String },
    #[error("the MCP server `{server}` closed the connection{detail}")]
    Closed { server: String, detail: String },
    #[error("the MCP server `{server}` did not answer within {ms} ms (mcp.timeout_ms)")]
    Timeout { server: String, ms: u64 },
    #[error("the MCP server `{server}` answered with an error: {message}")]
    Remote { server: String, message: String },
    #[error("the tool `{tool}` failed: {message}")]
    Tool { tool: String, message: String },
    #[error("cancelled")]
    Cancelled,
}

/// One tool a server offers.
#[derive(Debug, Clone, PartialEq)]
pub struct McpTool {
    /// `server.tool`.
    pub name: String,
    pub description: String,
    /// The JSON schema of its arguments.
    pub input_schema: Json,
}

struct Server {
    conn: Connection,
    tools: Vec<McpTool>,
}

/// The configured servers, each started once on first use and kept
/// running until the hub is dropped (stdio servers are killed then).
pub struct Hub {
    config: McpConfig,
    root: PathBuf,
    servers: tokio::sync::Mutex<HashMap<String, Arc<Server>>>,
}

impl Hub {
    /// A hub for `config`; stdio servers run in `root`.
    pub fn new(config: McpConfig, root: PathBuf) -> Self {
        Self {
            config,
            root,
            servers: Default::default(),
        }
    }

    /// The configured server names.
    pub fn server_names(&self) -> impl Iterator<Item = &str> {
        self.config.servers.keys().map(String::as_str)
    }

    fn timeout(&self) -> Duration {
        Duration::from_millis(self.config.timeout_ms.max(1))
    }

    /// The tools of every server `wanted` says yes to, starting those not
    /// yet running. A server that cannot start is reported, not fatal.
    pub async fn tools(
        &self,
        wanted: impl Fn(&str) -> bool,
        cancel: &CancellationToken,
    ) -> (Vec<McpTool>, Vec<McpError>) {
        let mut tools = Vec::new();
        let mut errors = Vec::new();
        for name in self.config.servers.keys().filter(|n| wanted(n)) {
            match self.server(name, cancel).await {
                Ok(s) => tools.extend(s.tools.iter().cloned()),
                Err(e) => errors.push(e),
            }
        }
        (tools, errors)
    }

    /// Calls `server.tool` with `args`; the tool's text output, or why not.
    pub async fn call(
        &self,
        full_name: &str,
        args: Json,
        cancel: &CancellationToken,
    ) -> Result<String, McpError> {
        let (server_name, tool) = full_name
            .split_once('.')
            .filter(|(s, t)| !s.is_empty() && !t.is_empty())
            .ok_or_else(|| McpError::BadName(full_name.to_owned()))?;
        let server = self.server(server_name, cancel).await?;
        if !server.tools.iter().any(|t| t.name == full_name) {
            return Err(McpError::UnknownTool {
                server: server_name.to_owned(),
                tool: tool.to_owned(),
                have: server
                    .tools
                    .iter()
                    .map(|t| t.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            });
        }
        let result = self
            .bounded(server_name, cancel, server.conn.call(tool, args))
            .await;
        let result = match result {
            Err(e @ McpError::Closed { .. }) => {
                // Started again on the next call.
                self.servers.lock().await.remove(server_name);
                return Err(e);
            }
            other => other?,
        };
        let result = serde_json::to_value(&result).unwrap_or_default();
        let text = content_text(&result);
        if result["isError"].as_bool() == Some(true) {
            return Err(McpError::Tool {
                tool: full_name.to_owned(),
                message: text,
            });
        }
        Ok(text)
    }

    /// Runs one request under the time limit and the agent's cancellation.
    async fn bounded<T>(
        &self,
        server: &str,
        cancel: &CancellationToken,
        fut: impl std::future::Future<Output = Result<T, McpError>>,
    ) -> Result<T, McpError> {
        tokio::select! {
            _ = cancel.cancelled() => Err(McpError::Cancelled),
            r = tokio::time::timeout(self.timeout(), fut) => r.unwrap_or_else(|_| Err(McpError::Timeout {
                server: server.to_owned(),
                ms: self.config.timeout_ms,
            })),
        }
    }

    /// The running server `name`, started (initialize, tools/list) if need be.
    async fn server(
        &self,
        name: &str,
        cancel: &CancellationToken,
    ) -> Result<Arc<Server>, McpError> {
        let mut servers = self.servers.lock().await;
        if let Some(s) = servers.get(name) {
            return Ok(s.clone());
        }
        let config = self
            .config
            .servers
            .get(name)
            .ok_or_else(|| McpError::UnknownServer(name.to_owned()))?;
        let started = self.bounded(name, cancel, self.start(name, config)).await?;
        let server = Arc::new(started);
        servers.insert(name.to_owned(), server.clone());
        Ok(server)
    }

    async fn start(&self, name: &str, config: &ServerConfig) -> Result<Server, McpError> {
        let conn = Connection::open(name, config, &self.root).await?;
        let tools = conn
            .tools()
            .await?
            .into_iter()
            .map(|t| McpTool {
                name: format!("{name}.{}", t.name),
                description: t.description.as_deref().unwrap_or("").to_owned(),
                input_schema: Json::Object((*t.input_schema).clone()),
            })
            .collect();
        Ok(Server { conn, tools })
    }
}

/// The text of a `tools/call` result: its text items, others named.
fn content_text(result: &Json) -> String {
    let parts: Vec<String> = result["content"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|item| match item["type"].as_str() {
            Some("text") => item["text"].as_str().unwrap_or("").to_owned(),
            Some(other) => format!("[{other} content]"),
            None => item.to_string(),
        })
        .collect();
    if parts.is_empty() {
        match result.get("structuredContent") {
            Some(v) => v.to_string(),
            None => String::new(),
        }
    } else {
        parts.join("\n")
    }
}

#[cfg(test)]
mod tests;
