//! The tools tool mode offers and how they go over the wire: each tool's
//! JSON schema, the registry with `web_search`, `delegate` and the MCP
//! tools the capabilities allow, the provider's native form, and a call
//! read back from any of the shapes models write.

use serde_json::{json, Value as Json};

use super::table::{self, Needs, Offer};
use crate::agent::brain::Run;

/// One tool: its name, what it does, and its arguments as a JSON schema.
#[derive(Debug, Clone)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    pub parameters: Json,
}

/// A tool with its arguments' JSON schema; `params` are `(name, JSON
/// type, description)`, a type ending in `?` optional.
pub(crate) fn spec(name: &str, description: &str, params: &[(&str, &str, &str)]) -> ToolSpec {
    let mut properties = serde_json::Map::new();
    let mut required = Vec::new();
    for (pname, ptype, doc) in params {
        let (ptype, optional) = match ptype.strip_suffix('?') {
            Some(t) => (t, true),
            None => (*ptype, false),
        };
        let schema = if ptype == "array" {
            json!({"type": "array", "items": {"type": "string"}, "description": doc})
        } else {
            json!({"type": ptype, "description": doc})
        };
        properties.insert((*pname).to_owned(), schema);
        if !optional {
            required.push(*pname);
        }
    }
    ToolSpec {
        name: name.to_owned(),
        description: description.to_owned(),
        parameters: json!({"type": "object", "properties": properties, "required": required}),
    }
}

/// A tool of the table with its schema.
fn spec_of(t: &table::Tool) -> ToolSpec {
    spec(t.name, t.doc, t.params)
}

/// The tools every agent is offered in tool mode, with their schemas.
pub fn registry() -> Vec<ToolSpec> {
    table::offered(Offer::Agent).map(spec_of).collect()
}

/// The chat's way to answer.
pub(super) fn reply_spec() -> ToolSpec {
    spec_of(&table::REPLY)
}

/// The tool offered when `needs` is allowed.
fn spec_if(needs: Needs) -> Option<ToolSpec> {
    table::offered(Offer::AgentIf(needs)).next().map(spec_of)
}

/// The tools `job` is offered: the registry, `web_search` when an
/// endpoint is configured and its host allowed, and the MCP tools the
/// capabilities allow (servers no pattern reaches are not started).
/// Returns the tools and the MCP tool names among them.
pub(super) async fn offered(run: &Run<'_>) -> (Vec<ToolSpec>, Vec<String>) {
    let (services, caps, cancel, progress) = (run.services, &run.caps, run.cancel, run.progress);
    let mut tools = registry();
    let web_search = services
        .web_search_url
        .as_deref()
        .and_then(|u| reqwest::Url::parse(u).ok())
        .is_some_and(|url| {
            caps.check_endpoint(url.host_str().unwrap_or(""), url.port())
                .is_ok()
        });
    let peer = services.a2a_peers.values().any(|p| {
        reqwest::Url::parse(&p.url).is_ok_and(|u| {
            caps.check_endpoint(u.host_str().unwrap_or(""), u.port())
                .is_ok()
        })
    });
    let allowed = [
        (Needs::Env, caps.may_read_env()),
        (Needs::Snapshot, caps.check_snapshot().is_ok()),
        (Needs::Rollback, caps.check_rollback().is_ok()),
        (Needs::WebSearch, web_search),
        (Needs::Peer, peer),
    ];
    for (needs, _) in allowed.into_iter().filter(|(_, allowed)| *allowed) {
        let Some(mut s) = spec_if(needs) else {
            continue;
        };
        if needs == Needs::Peer {
            let names: Vec<&str> = services.a2a_peers.keys().map(String::as_str).collect();
            s.description = format!("{} Agents: {}.", s.description, names.join(", "));
        }
        tools.push(s);
    }
    let (mcp, errors) = services
        .mcp
        .tools(|server| caps.may_use_mcp_server(server), cancel)
        .await;
    for e in errors {
        progress(format!("MCP: {e}"));
    }
    let mut names = Vec::new();
    for t in mcp.into_iter().filter(|t| caps.check_mcp(&t.name).is_ok()) {
        names.push(t.name.clone());
        tools.push(ToolSpec {
            description: if t.description.is_empty() {
                format!("The MCP tool {}.", t.name)
            } else {
                t.description
            },
            name: t.name,
            parameters: t.input_schema,
        });
    }
    (tools, names)
}

/// Native tool names allow no dots: `server.tool` goes out as `server__tool`.
pub(super) fn wire_name(name: &str) -> String {
    name.replace('.', "__")
}

/// The tools in OpenAI's shape, for native tool calling.
pub(super) fn native_tools(tools: &[ToolSpec]) -> Json {
    Json::Array(
        tools
            .iter()
            .map(|t| {
                json!({"type": "function", "function": {
                    "name": wire_name(&t.name),
                    "description": t.description,
                    "parameters": t.parameters,
                }})
            })
            .collect(),
    )
}

/// The JSON schema of a reply: one call of one of `tools`, with that
/// tool's arguments (so a constrained server cannot produce wrong types).
pub fn reply_schema(tools: &[ToolSpec]) -> Json {
    let calls: Vec<Json> = tools
        .iter()
        .map(|t| {
            let mut args = t.parameters.clone();
            args["additionalProperties"] = json!(false);
            // Nothing beside them: 1.5B otherwise adds a "result" with
            // the code it was to send apart.
            json!({
                "type": "object",
                "properties": {
                    "tool": {"type": "string", "const": t.name},
                    "args": args
                },
                "required": ["tool", "args"],
                "additionalProperties": false
            })
        })
        .collect();
    json!({"anyOf": calls})
}

/// `name(arg: type, …)` for the prompt: small models copy a schema's
/// shape into their arguments, but not a signature's.
pub(super) fn signature(t: &ToolSpec) -> String {
    let props = t.parameters["properties"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    let required: Vec<&str> = t.parameters["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Json::as_str).collect())
        .unwrap_or_default();
    let args: Vec<String> = props
        .iter()
        .map(|(name, p)| {
            let ty = match p["type"].as_str() {
                Some("array") => "list of strings",
                Some(other) => other,
                None => "value",
            };
            let opt = if required.contains(&name.as_str()) {
                ""
            } else {
                ", optional"
            };
            format!("{name}: {ty}{opt}")
        })
        .collect();
    format!("{}({})", t.name, args.join(", "))
}

/// The tool a JSON call names and its arguments, in any of the shapes
/// models write: `{"tool", "args"}`, the seed's `{"tool_to_use",
/// "parameters"}`, OpenAI's `{"name", "arguments"}`.
pub fn call_parts(v: &Json) -> (Option<&str>, Option<&Json>) {
    let tool = ["tool", "tool_to_use", "name"]
        .iter()
        .find_map(|k| v.get(*k))
        .and_then(Json::as_str);
    let args = ["args", "parameters", "arguments"]
        .iter()
        .find_map(|k| v.get(*k));
    (tool, args)
}

/// The tool call a reply makes, or what is wrong with it, for the model.
pub fn parse_call(reply: &str) -> Result<(String, serde_json::Map<String, Json>), String> {
    let t = reply.trim();
    // A fence inside the object (code in one of its strings) is not one
    // around it.
    let t = match t.find("```").filter(|_| !t.starts_with('{')) {
        Some(start) => {
            let body = &t[start + 3..];
            let body = body.strip_prefix("json").unwrap_or(body);
            body.split("```").next().unwrap_or(body).trim()
        }
        None => t,
    };
    let start = t.find('{').ok_or("Your reply has no JSON object. Answer with exactly one: {\"tool\": name, \"args\": {...}}.")?;
    // A call cut off just before its closing braces (run into blank space
    // under the grammar, or out of tokens) is whole once they are added.
    let closed = |braces: &str| serde_json::from_str::<Json>(&format!("{}{braces}", &t[start..]));
    let closed = || closed("}").or_else(|_| closed("}}")).ok();
    let v: Json = match t.rfind('}') {
        None => closed().ok_or("Your JSON object is not closed.")?,
        Some(end) => match serde_json::from_str(&t[start..=end]) {
            Ok(v) => v,
            Err(e) => closed().ok_or_else(|| format!("Your reply is not valid JSON ({e}). Answer with exactly one object: {{\"tool\": name, \"args\": {{...}}}}."))?,
        },
    };
    let (tool, args) = call_parts(&v);
    let tool = tool
        .ok_or("Your JSON object has no \"tool\" naming the tool to call.")?
        .to_owned();
    Ok((tool, args_object(args)?))
}

/// The path of a write call whose JSON was cut before its end (the reply
/// ran into a loop or out of tokens inside the code): read from the
/// reply's start, `{"tool": "write_file", "args": {"path": "a.py", …`.
pub(super) fn cut_write_path(reply: &str) -> Option<String> {
    let string_after = |key: &str| -> Option<String> {
        let at = reply.find(&format!("\"{key}\""))? + key.len() + 2;
        let rest = reply[at..].trim_start().strip_prefix(':')?.trim_start();
        let body = rest.strip_prefix('"')?;
        let end = body
            .char_indices()
            .scan(false, |escaped, (i, c)| {
                let end = c == '"' && !*escaped;
                *escaped = c == '\\' && !*escaped;
                Some((i, end))
            })
            .find(|&(_, end)| end)?
            .0;
        serde_json::from_str(&format!("\"{}\"", &body[..end])).ok()
    };
    let tool = string_after("tool")?;
    super::WRITE_TOOLS
        .contains(&tool.as_str())
        .then(|| string_after("path"))?
}

/// A call's arguments as an object: given as one, as JSON text, or absent.
pub(super) fn args_object(args: Option<&Json>) -> Result<serde_json::Map<String, Json>, String> {
    let wrong = || "\"args\" must be a JSON object of argument names to values.".to_owned();
    match args {
        None | Some(Json::Null) => Ok(serde_json::Map::new()),
        Some(Json::Object(m)) => Ok(m.clone()),
        Some(Json::String(s)) => match serde_json::from_str(s) {
            Ok(Json::Object(m)) => Ok(m),
            _ => Err(wrong()),
        },
        Some(_) => Err(wrong()),
    }
}
