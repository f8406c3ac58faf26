//! opencode's newer message store, `session_message` (written by the v2
//! session API of `opencode serve` since 1.18, and the layout meant to
//! replace `message` and `part`): one row per message, in `seq` order,
//! `type` and `id` in columns and the rest in `data`. A `user` row holds
//! the prompt's `text`; an `assistant` row is one model step whose
//! `content` holds `text`, `reasoning` and `tool` items (a tool's state
//! going pending, running, completed or error), with `finish` and
//! `time.completed` once the step ended; the other types (`compaction`,
//! `system`, `synthetic`, `shell`, `agent-switched`, `model-switched`) are
//! notes. Each row is handed to the same turn builder as the older
//! layout, as the message and parts it stands for.

use serde_json::{json, Map, Value};

/// A `session_message` row as the older layout's message and parts.
pub fn as_message(id: &str, kind: &str, data: Value) -> (Value, Vec<Value>) {
    let Value::Object(mut d) = data else {
        return (json!({"id": id, "role": "system"}), Vec::new());
    };
    match kind {
        "user" => {
            let text = d.remove("text").unwrap_or(Value::Null);
            let mut parts = vec![json!({"id": format!("{id}-text"), "type": "text", "text": text})];
            if let Some(Value::Array(files)) = d.remove("files") {
                parts.extend(files.into_iter().map(|mut f| {
                    if let Value::Object(m) = &mut f {
                        m.insert("type".into(), "file".into());
                    }
                    f
                }));
            }
            (message(id, "user", d), parts)
        }
        "assistant" => {
            let content = match d.remove("content") {
                Some(Value::Array(c)) => c,
                _ => Vec::new(),
            };
            if let Some(model) = d.get("model").cloned() {
                d.insert("modelID".into(), model["id"].clone());
                d.insert("providerID".into(), model["providerID"].clone());
            }
            let parts = content.into_iter().map(|item| part(id, item)).collect();
            (message(id, "assistant", d), parts)
        }
        other => {
            let text = note_text(other, &d);
            d.insert("kind".into(), Value::String(other.into()));
            d.insert("text".into(), Value::String(text));
            (message(id, "system", d), Vec::new())
        }
    }
}

fn message(id: &str, role: &str, mut d: Map<String, Value>) -> Value {
    d.insert("id".into(), Value::String(id.into()));
    d.insert("role".into(), Value::String(role.into()));
    Value::Object(d)
}

/// A content item of an assistant row as the older layout's part.
fn part(message: &str, item: Value) -> Value {
    let Value::Object(mut m) = item else {
        return item;
    };
    if m.get("type").and_then(Value::as_str) != Some("tool") {
        // Text ids repeat between messages (`text-0`): made unique.
        if let Some(Value::String(pid)) = m.get("id") {
            let unique = format!("{message}-{pid}");
            m.insert("id".into(), Value::String(unique));
        }
        return Value::Object(m);
    }
    let name = m.remove("name").unwrap_or(Value::Null);
    let call = m.get("id").cloned().unwrap_or(Value::Null);
    m.insert("tool".into(), name);
    m.insert("callID".into(), call);
    if let Some(Value::Object(state)) = m.get_mut("state") {
        // A finished call has a result, if only an empty one.
        let done = state.get("status").and_then(Value::as_str) == Some("completed");
        let output = state
            .get("content")
            .map(super::model::text_of)
            .filter(|t| done || !t.is_empty());
        if let Some(out) = output {
            state.insert("output".into(), Value::String(out));
        }
        if let Some(e) = state.get("error").cloned() {
            let message = e.get("message").cloned().unwrap_or(e);
            state.insert("error".into(), message);
        }
        if let Some(start) = m.get("time").and_then(|t| t.get("created")).cloned() {
            if let Some(Value::Object(state)) = m.get_mut("state") {
                state.insert("time".into(), json!({"start": start}));
            }
        }
    }
    Value::Object(m)
}

/// What a note row says, in words.
fn note_text(kind: &str, d: &Map<String, Value>) -> String {
    let s = |k: &str| d.get(k).and_then(Value::as_str).unwrap_or_default();
    match kind {
        "compaction" => match s("summary") {
            "" => "The conversation was compacted.".into(),
            summary => format!("The conversation was compacted: {summary}"),
        },
        "shell" => format!("$ {}\n{}", s("command"), s("output")),
        "agent-switched" => format!("Agent: {}", s("agent")),
        "model-switched" => match d.get("model") {
            Some(Value::Object(m)) => format!(
                "Model: {}",
                m.get("id").and_then(Value::as_str).unwrap_or_default()
            ),
            _ => format!("Model: {}", s("model")),
        },
        _ => s("text").to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_become_the_messages_and_parts_they_stand_for() {
        let (info, parts) = as_message(
            "msg_1",
            "user",
            json!({"time": {"created": 1_796_614_408_257_i64}, "text": "List the files"}),
        );
        assert_eq!(info["role"], "user");
        assert_eq!(parts[0]["text"], "List the files");
        let (info, parts) = as_message(
            "msg_2",
            "assistant",
            json!({"time": {"created": 1, "completed": 2}, "finish": "tool-calls",
                "model": {"id": "m", "providerID": "p"},
                "content": [{"type": "text", "id": "text-0", "text": "Listing."},
                    {"type": "tool", "id": "call_1", "name": "bash",
                     "time": {"created": 5},
                     "state": {"status": "completed", "input": {"command": "ls"},
                        "content": [{"type": "text", "text": "a.txt"}]}}]}),
        );
        assert_eq!(info["modelID"], "m");
        assert_eq!(info["finish"], "tool-calls");
        assert_eq!(parts[0]["id"], "msg_2-text-0");
        assert_eq!(parts[1]["tool"], "bash");
        assert_eq!(parts[1]["state"]["output"], "a.txt");
        let (info, _) = as_message("msg_3", "compaction", json!({"summary": "s"}));
        assert_eq!(info["role"], "system");
        assert_eq!(info["kind"], "compaction");
    }
}
