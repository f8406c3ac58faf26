//! Small readings of Claude Code's records: a record's node id, the
//! markup of slash commands, the pieces of an assistant message.

use serde_json::{Map, Value};

use crate::ids;

/// The markup Claude Code writes for a slash command run in the tool and
/// for its output.
pub fn is_command(text: &str) -> bool {
    let t = text.trim_start();
    [
        "<command-name>",
        "<command-message>",
        "<local-command-stdout>",
        "<local-command-stderr>",
    ]
    .iter()
    .any(|tag| t.starts_with(tag))
}

/// `/name args` of a command's markup.
pub fn command_line(text: &str) -> Option<String> {
    let inner = |tag: &str| {
        let open = format!("<{tag}>");
        let close = format!("</{tag}>");
        let (_, rest) = text.split_once(open.as_str())?;
        let (inside, _) = rest.split_once(close.as_str())?;
        Some(inside.trim().to_string())
    };
    let name = inner("command-name")?;
    let args = inner("command-args").unwrap_or_default();
    Some(if args.is_empty() {
        name
    } else {
        format!("{name} {args}")
    })
}

/// A record's id as a node id (its `uuid`; else one made from the line).
pub fn record_id(rec: &Value, line: u64) -> String {
    match rec.get("uuid").and_then(Value::as_str) {
        Some(u) if ids::validate("node id", u).is_ok() => u.to_string(),
        _ => format!("line-{line}"),
    }
}

pub fn push_to(meta: &mut Map<String, Value>, key: &str, v: Value) {
    match meta.entry(key).or_insert_with(|| Value::Array(Vec::new())) {
        Value::Array(a) => a.push(v),
        other => *other = Value::Array(vec![v]),
    }
}

pub fn append_text(content: &mut Value, t: &str) {
    if t.is_empty() {
        return;
    }
    match content {
        Value::String(s) if !s.is_empty() => {
            s.push_str("\n\n");
            s.push_str(t);
        }
        other => *other = Value::String(t.to_string()),
    }
}
