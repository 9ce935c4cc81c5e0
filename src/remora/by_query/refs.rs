//! What a file's nodes reference, read with its language's queries: the
//! names its imports bind, and the calls each node makes.

use super::*;

/// What a name stands for in the file, from its imports.
#[derive(Debug, Clone)]
pub(super) enum Binding {
    /// The whole module (`local m = require("m")`, Go's `store`).
    Module(String),
    /// One name of a module (`import { f } from "./m"`, `use crate::m::f`).
    From { module: String, name: String },
}

/// One shared target per distinct value, so that a file's references are
/// told apart by address: a call made a hundred times is one target, and
/// the same reference twice is the same pair of node and address.
#[derive(Default)]
pub(super) struct Targets(HashSet<Arc<Target>>);

impl Targets {
    pub(super) fn get(&mut self, t: Target) -> Arc<Target> {
        if let Some(known) = self.0.get(&t) {
            return Arc::clone(known);
        }
        let t = Arc::new(t);
        self.0.insert(Arc::clone(&t));
        t
    }
}

/// Adds an `Imports` reference of the file per import; returns the names
/// they bind.
pub(super) fn imports(
    lang: &Language,
    path: &str,
    matched: &[Import],
    targets: &mut Targets,
    refs: &mut Vec<RawRef>,
) -> HashMap<String, Binding> {
    let mut bindings = HashMap::new();
    let style = lang.modules;
    for import in matched {
        if let Some(sub) = &import.submodule {
            let module = style.key_of_submodule(path, sub);
            refs.push(RawRef {
                from: 0,
                kind: EdgeKind::Imports,
                target: targets.get(Target::Module { module }),
            });
            continue;
        }
        let Some(spec) = import.module.as_deref() else {
            continue;
        };
        let Some(module) = style.key_of_import(path, spec) else {
            continue;
        };
        let target = match &import.name {
            Some(name) => {
                bindings.insert(
                    name.clone(),
                    Binding::From {
                        module: module.clone(),
                        name: name.clone(),
                    },
                );
                Target::InModule {
                    module: module.clone(),
                    name: name.clone(),
                }
            }
            None => Target::Module {
                module: module.clone(),
            },
        };
        if let Some(alias) = import.alias.clone().or_else(|| style.default_alias(spec)) {
            bindings.insert(alias, Binding::Module(module));
        }
        refs.push(RawRef {
            from: 0,
            kind: EdgeKind::Imports,
            target: targets.get(target),
        });
    }
    bindings
}

/// Adds a `Calls` reference per call the file can resolve: to its own
/// top-level definitions, its own types' methods, and names its imports bind.
pub(super) fn calls(
    matched: &[Call],
    nodes: &[RawNode],
    bindings: &HashMap<String, Binding>,
    package: Option<String>,
    targets: &mut Targets,
    refs: &mut Vec<RawRef>,
) {
    let top = super::super::extracted::top_level(nodes);
    let mut owners = Owners::new(nodes);
    // What a call resolves to depends on its scope and name alone, but
    // for `self.f()` (the type around it): each is resolved once.
    let mut resolved: HashMap<(Option<&str>, &str), Option<Arc<Target>>> = HashMap::new();
    for call in matched {
        let from = owners.at(call.name.0);
        let name = call.name_text.as_str();
        let target = match call.scope.as_deref() {
            Some("self" | "this" | "Self") => {
                let Some(class) = class_of(nodes, from) else {
                    continue;
                };
                targets.get(Target::Method {
                    class,
                    name: name.to_owned(),
                })
            }
            scope => {
                let target = resolved.entry((scope, name)).or_insert_with(|| {
                    let t = resolve(scope, name, &top, bindings, package.as_deref())?;
                    Some(targets.get(t))
                });
                match target {
                    Some(t) => Arc::clone(t),
                    None => continue,
                }
            }
        };
        refs.push(RawRef {
            from,
            kind: EdgeKind::Calls,
            target,
        });
    }
}

/// What a call of `name` in `scope` (none, a type, an imported name)
/// refers to, if the file can tell; never `self`'s.
fn resolve(
    scope: Option<&str>,
    name: &str,
    top: &HashMap<&str, NodeType>,
    bindings: &HashMap<String, Binding>,
    package: Option<&str>,
) -> Option<Target> {
    let name = name.to_owned();
    Some(match scope {
        None => match (top.contains_key(name.as_str()), bindings.get(&name)) {
            (true, _) => Target::Local { name },
            (false, Some(Binding::From { module, name })) => Target::InModule {
                module: module.clone(),
                name: name.clone(),
            },
            (false, None) => Target::InModule {
                module: package?.to_owned(),
                name,
            },
            _ => return None,
        },
        Some(scope) if top.get(scope) == Some(&NodeType::Class) => Target::Method {
            class: scope.to_owned(),
            name,
        },
        Some(scope) => match bindings.get(scope)? {
            Binding::Module(module) => Target::InModule {
                module: module.clone(),
                name,
            },
            // `Store::new()` with `Store` imported: a method of it.
            Binding::From {
                module,
                name: bound,
            } => Target::InModule {
                module: module.clone(),
                name: format!("{bound}.{name}"),
            },
        },
    })
}

/// The node a match captured under the capture index `want`.
pub(super) fn capture<'t>(m: &QueryMatch<'_, 't>, want: Option<u32>) -> Option<TsNode<'t>> {
    m.captures
        .iter()
        .find(|c| Some(c.index) == want)
        .map(|c| c.node)
}

/// The innermost node holding a byte, asked in increasing byte order: one
/// sweep over the nodes (in source order) for all the calls of a file.
struct Owners<'n> {
    nodes: &'n [RawNode],
    /// Node indices by start.
    order: Vec<usize>,
    next: usize,
    /// The nodes open at the last byte asked, innermost last.
    open: Vec<usize>,
}

impl<'n> Owners<'n> {
    fn new(nodes: &'n [RawNode]) -> Self {
        let mut order: Vec<usize> = (1..nodes.len()).collect();
        order.sort_by_key(|&i| (nodes[i].start_byte, std::cmp::Reverse(nodes[i].end_byte)));
        Self {
            nodes,
            order,
            next: 0,
            open: Vec::new(),
        }
    }

    /// The innermost node whose span holds byte `at` (0: the file); `at`
    /// never less than the last one asked.
    fn at(&mut self, at: usize) -> usize {
        let nodes = self.nodes;
        while let Some(&i) = self
            .order
            .get(self.next)
            .filter(|&&i| nodes[i].start_byte <= at)
        {
            self.open
                .retain(|&j| nodes[j].end_byte > nodes[i].start_byte);
            self.open.push(i);
            self.next += 1;
        }
        self.open.retain(|&j| nodes[j].end_byte > at);
        self.open
            .iter()
            .rev()
            .copied()
            .min_by_key(|&j| nodes[j].end_byte - nodes[j].start_byte)
            .unwrap_or(0)
    }
}

/// The qualified name of the type `self` means inside node `i`: the parent
/// of the nearest method around it.
pub(super) fn class_of(nodes: &[RawNode], mut i: usize) -> Option<String> {
    loop {
        let n = &nodes[i];
        if n.node_type == NodeType::Method {
            return n
                .qualname
                .rsplit_once('.')
                .map(|(class, _)| class.to_owned());
        }
        i = n.parent?;
        if i == 0 {
            return None;
        }
    }
}
