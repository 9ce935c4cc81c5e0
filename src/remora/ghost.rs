//! Ghost nodes (seed 001, phase 4): a node the human asks for from the UI
//! before it exists. It is placed in the scope at the cursor — a method in
//! the class there, a function or class in the file after the definition
//! the cursor is in — and its agent writes it; until it is accepted it is
//! in no file and no index.

use super::topology::Topology;
use super::{Node, NodeStatus, NodeType};

/// Where a ghost node goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    /// The node itself: status [`NodeStatus::Ghost`], a fresh ID, the line
    /// it will start on.
    pub ghost: Node,
    /// The class or file it goes in.
    pub parent: Node,
    /// The sibling it goes after (`None`: at the end of `parent`).
    pub after: Option<Node>,
}

/// Why a ghost node cannot be placed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GhostError {
    #[error("`{0}` is not a name: use letters, digits and _ (not first a digit)")]
    BadName(String),
    #[error("a new node is a function, class or method, not {0:?}")]
    BadKind(String),
    #[error("{0} has no Remora nodes: it must be a file of the project, saved, in a language Chimera reads (:help chimera-languages)")]
    NotIndexed(String),
    #[error("a method goes in a class: put the cursor inside one, or ask for a function")]
    NoClass,
    #[error("`{name}` already exists in {scope}: choose another name, or chat with it")]
    Exists { name: String, scope: String },
}

/// The ghost `kind` node `name` at 1-based `line` of `path`.
pub fn place(
    topology: &Topology,
    path: &str,
    line: usize,
    kind: &str,
    name: &str,
) -> Result<Placement, GhostError> {
    let node_type = match NodeType::parse(kind) {
        Some(t @ (NodeType::Function | NodeType::Class | NodeType::Method)) => t,
        _ => return Err(GhostError::BadKind(kind.to_owned())),
    };
    let valid = name
        .chars()
        .next()
        .is_some_and(|c| c.is_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_alphanumeric() || c == '_');
    if !valid {
        return Err(GhostError::BadName(name.to_owned()));
    }
    let nodes = topology.nodes_in(path);
    let file = nodes
        .first()
        .cloned()
        .ok_or_else(|| GhostError::NotIndexed(path.to_owned()))?;
    let parent_of = |n: Node| n.parent_id.as_deref().and_then(|p| topology.node(p));
    let parent = match node_type {
        NodeType::Method => {
            let mut at = topology.node_at(path, line);
            while let Some(n) = at.take_if(|n| n.node_type != NodeType::Class) {
                at = parent_of(n);
            }
            at.ok_or(GhostError::NoClass)?
        }
        _ => file,
    };
    let children: Vec<&Node> = nodes
        .iter()
        .filter(|n| n.parent_id.as_deref() == Some(parent.id.as_str()))
        .collect();
    if children.iter().any(|n| n.name == name) {
        return Err(GhostError::Exists {
            name: name.to_owned(),
            scope: if parent.node_type == NodeType::File {
                parent.file_path.clone()
            } else {
                format!("{} `{}`", parent.node_type.as_str(), parent.name)
            },
        });
    }
    // After the sibling the cursor is in, else the last one above it.
    let after = children
        .iter()
        .filter(|n| n.start_line <= line)
        .max_by_key(|n| n.start_line)
        .map(|n| (*n).clone());
    let start = after.as_ref().map_or(parent.end_line, |a| a.end_line + 1);
    let qualname = if parent.node_type == NodeType::File {
        name.to_owned()
    } else {
        format!("{}.{name}", parent.qualname)
    };
    Ok(Placement {
        ghost: Node {
            id: super::ids::fresh_unused(|id| topology.node(id).is_some()),
            node_type,
            name: name.to_owned(),
            qualname,
            parent_id: Some(parent.id.clone()),
            file_path: path.to_owned(),
            start_line: start,
            end_line: start,
            status: NodeStatus::Ghost,
            source_hash: String::new(),
        },
        parent: parent.clone(),
        after,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::remora::index::Indexer;
    use crate::store::Store;

    const SRC: &str = "import os\n\n\nclass Config:\n    def load(self):\n        return 1\n\n    def save(self):\n        return 2\n\n\ndef helper():\n    return 3\n";

    fn topology() -> Indexer {
        let st = Store::open_in_memory(std::path::Path::new("/p")).unwrap();
        let mut ix = Indexer::default();
        ix.index_text(&st, "m.py", SRC).unwrap();
        ix
    }

    #[test]
    fn a_ghost_goes_in_the_scope_at_the_cursor() {
        let ix = topology();
        let t = ix.topology();
        // A method, from inside `load`: in Config, after load.
        let p = place(t, "m.py", 6, "method", "reset").unwrap();
        assert_eq!(p.parent.name, "Config");
        assert_eq!(p.after.as_ref().unwrap().name, "load");
        assert_eq!(p.ghost.qualname, "Config.reset");
        assert_eq!(p.ghost.status, NodeStatus::Ghost);
        assert_eq!(p.ghost.start_line, 7);
        assert!(p.ghost.id.starts_with("rm_") && t.node(&p.ghost.id).is_none());
        // A function from inside a method: in the file, after the class.
        let p = place(t, "m.py", 6, "function", "parse").unwrap();
        assert_eq!(p.parent.node_type, NodeType::File);
        assert_eq!(p.after.as_ref().unwrap().name, "Config");
        // Above every definition: no sibling before it, so at the end.
        let p = place(t, "m.py", 1, "class", "Settings").unwrap();
        assert!(p.after.is_none());
    }

    #[test]
    fn bad_requests_say_what_to_do() {
        let ix = topology();
        let t = ix.topology();
        let err = |kind: &str, name: &str, line: usize| {
            place(t, "m.py", line, kind, name).unwrap_err().to_string()
        };
        assert!(err("method", "reset", 13).contains("goes in a class"));
        assert!(err("function", "helper", 13).contains("already exists in m.py"));
        assert!(err("method", "save", 5).contains("already exists in class `Config`"));
        assert!(err("function", "2fast", 1).contains("not a name"));
        assert!(err("function", "a-b", 1).contains("not a name"));
        assert!(err("file", "x", 1).contains("not \"file\""));
        assert!(place(t, "other.py", 1, "function", "f")
            .unwrap_err()
            .to_string()
            .contains("has no Remora nodes"));
    }
}
