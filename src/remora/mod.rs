//! Remora: every file, class, function and method in a language Chimera
//! reads ([`crate::lang`]) is a node with a
//! stable ID (`rm_` + 8 characters), a place in the topology (containment,
//! calls, imports, inheritance) and, later, an agent of its own.
//!
//! - [`ids`]: the ID format, fresh IDs, and the ID comments in source.
//! - [`extract`]: one tree-sitter pass over a file: its nodes, the names it
//!   references, and the ID comments already there (Python's own walker;
//!   [`by_query`] for the other languages, from their queries).
//! - [`inject`]: writing IDs into source as trailing comments, byte-exactly.
//! - [`topology`]: the in-memory graph (petgraph), ID matching across edits,
//!   and reference resolution between files.
//! - [`index`]: keeps the topology and the store in step with the files.
//! - [`events`]: the seed's event types and subscriptions (triggers).
//! - [`chain`]: activation chains: cycle, depth and cooldown checks.
//! - [`extensions`]: extension nodes: prompts, workspaces and tools by match.
//! - [`ghost`]: where a node the human asks for from the UI goes.

pub mod by_query;
pub mod chain;
pub mod events;
pub mod extensions;
pub mod extract;
pub mod extracted;
pub mod ghost;
pub mod ids;
pub mod index;
pub mod inject;
pub mod shared;
pub mod topology;

use serde::{Deserialize, Serialize};

/// What a node is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum NodeType {
    File,
    Class,
    Function,
    /// A function defined directly in a class body (decorated or not).
    Method,
}

impl NodeType {
    pub fn as_str(self) -> &'static str {
        match self {
            NodeType::File => "file",
            NodeType::Class => "class",
            NodeType::Function => "function",
            NodeType::Method => "method",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "file" => NodeType::File,
            "class" => NodeType::Class,
            "function" => NodeType::Function,
            "method" => NodeType::Method,
            _ => return None,
        })
    }
}

/// How two nodes are related.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum EdgeKind {
    /// Containment: file → top-level definitions, class → methods, …
    ParentOf,
    /// A function, method, class body or module calls another node.
    Calls,
    /// A file imports another file of the project.
    Imports,
    /// A class derives from another class of the project.
    Inherits,
}

impl EdgeKind {
    pub fn as_str(self) -> &'static str {
        match self {
            EdgeKind::ParentOf => "parent_of",
            EdgeKind::Calls => "calls",
            EdgeKind::Imports => "imports",
            EdgeKind::Inherits => "inherits",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "parent_of" => EdgeKind::ParentOf,
            "calls" => EdgeKind::Calls,
            "imports" => EdgeKind::Imports,
            "inherits" => EdgeKind::Inherits,
            _ => return None,
        })
    }
}

/// Whether a node still exists in its file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NodeStatus {
    Active,
    /// Its definition is gone (deleted or renamed); kept for history and for
    /// agents that still refer to it.
    Orphaned,
    /// Asked for and not written yet ([`ghost`]): in no file, never stored.
    Ghost,
}

impl NodeStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            NodeStatus::Active => "active",
            NodeStatus::Orphaned => "orphaned",
            NodeStatus::Ghost => "ghost",
        }
    }
}

/// One node as the store and the editor see it (the seed's fields, plus the
/// parent and the qualified name used to match it across edits).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Node {
    pub id: String,
    pub node_type: NodeType,
    pub name: String,
    /// Dotted path of names from the file down, e.g. `Config.load`; the
    /// file's own node has its path here.
    pub qualname: String,
    pub parent_id: Option<String>,
    /// Project-relative, `/`-separated.
    pub file_path: String,
    /// 1-based, inclusive; decorators included.
    pub start_line: usize,
    pub end_line: usize,
    pub status: NodeStatus,
    /// blake3 of the node's text, to tell when its body changed.
    pub source_hash: String,
}

impl Node {
    /// The name of what it belongs to: the name before its own in its
    /// qualified name (`Store` of `Store.add`, `Inner` of `Outer.Inner.m`).
    pub fn parent_name(&self) -> Option<&str> {
        parent_name(&self.qualname, &self.name)
    }
}

/// The name before `name` in `qualname` ([`Node::parent_name`]).
pub fn parent_name<'a>(qualname: &'a str, name: &str) -> Option<&'a str> {
    let up = qualname.strip_suffix(name)?.strip_suffix('.')?;
    Some(up.rsplit('.').next().unwrap_or(up))
}

/// A directed edge between two nodes.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Edge {
    pub from: String,
    pub to: String,
    pub kind: EdgeKind,
}

/// Whether `path` is a file Remora indexes: one in a language it reads.
pub fn is_indexed(path: &str) -> bool {
    crate::lang::for_path(path).is_some()
}

#[cfg(test)]
mod by_query_tests;
#[cfg(test)]
mod tests;
