//! How a call's arguments show in the effect and audit logs: a file's
//! content by its size, not its text.

use serde_json::{json, Map, Value};

/// The arguments of a call as the effect log shows them: a file's content
/// by its size, not its text.
pub fn brief(args: &Map<String, Value>) -> String {
    Value::Object(shown(args)).to_string()
}

/// `args` with every long text replaced by its size.
pub fn shown(args: &Map<String, Value>) -> Map<String, Value> {
    args.iter()
        .map(|(k, v)| match v {
            Value::String(s) if s.len() > 120 => (k.clone(), json!(format!("<{} bytes>", s.len()))),
            v => (k.clone(), v.clone()),
        })
        .collect()
}
