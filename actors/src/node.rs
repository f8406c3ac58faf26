//! DAG nodes: the events of a conversation, one JSON file each.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Hash)]
#[serde(rename_all = "lowercase")]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum Role {
    User,
    Assistant,
    Tool,
    System,
    Code,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
            Role::System => "system",
            Role::Code => "code",
        }
    }

    /// The letter used in history file names.
    pub fn letter(self) -> char {
        match self {
            Role::User => 'u',
            Role::Assistant => 'a',
            Role::Tool => 't',
            Role::System => 's',
            Role::Code => 'c',
        }
    }

    pub fn from_letter(c: char) -> Option<Role> {
        Some(match c {
            'u' => Role::User,
            'a' => Role::Assistant,
            't' => Role::Tool,
            's' => Role::System,
            'c' => Role::Code,
            _ => return None,
        })
    }

    pub fn parse(s: &str) -> Option<Role> {
        Some(match s {
            "user" => Role::User,
            "assistant" => Role::Assistant,
            "tool" => Role::Tool,
            "system" => Role::System,
            "code" => Role::Code,
            _ => return None,
        })
    }

    /// Tool and code nodes carry a `name` (the tool or code unit).
    pub fn needs_name(self) -> bool {
        matches!(self, Role::Tool | Role::Code)
    }
}

/// One node of the conversation DAG, exactly as stored in `history/`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Node {
    pub id: String,
    pub role: Role,
    #[serde(default)]
    pub content: Value,
    pub predecessor: Option<String>,
    pub caller: Option<String>,
    pub seq: u64,
    pub created_at: f64,
    #[serde(default)]
    pub metadata: Map<String, Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<Value>,
}

impl Node {
    /// Conversational nodes (user/assistant without a caller) form the
    /// main chain and move the head; everything else hangs off it.
    pub fn is_conversational(&self) -> bool {
        self.caller.is_none() && matches!(self.role, Role::User | Role::Assistant)
    }

    /// Plain text of the content, for previews, titles and commit messages.
    pub fn text(&self) -> String {
        content_text(&self.content)
    }
}

/// Render a content value as text: strings as is, arrays of content blocks
/// by their `text` fields, anything else as compact JSON.
pub fn content_text(content: &Value) -> String {
    match content {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| match b {
                Value::String(s) => Some(s.clone()),
                Value::Object(o) => o.get("text").and_then(Value::as_str).map(str::to_owned),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join(" "),
        other => other.to_string(),
    }
}

/// First `max` characters of `text` on one line (newlines become spaces).
pub fn one_line_prefix(text: &str, max: usize) -> String {
    let flat: String = text
        .trim()
        .chars()
        .map(|c| if c == '\n' || c == '\r' { ' ' } else { c })
        .collect();
    flat.chars().take(max).collect()
}

/// Preview rule of the spec: strip, newlines to spaces, over 80 characters
/// becomes the first 77 plus "…". Empty text has no preview.
pub fn preview(text: &str) -> Option<String> {
    let t = text.trim().replace('\n', " ");
    if t.is_empty() {
        return None;
    }
    if t.chars().count() > 80 {
        Some(format!("{}…", t.chars().take(77).collect::<String>()))
    } else {
        Some(t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn preview_truncates_like_the_spec() {
        assert_eq!(preview("  hi\nthere "), Some("hi there".into()));
        let long = "x".repeat(81);
        let p = preview(&long).unwrap();
        assert_eq!(p.chars().count(), 78);
        assert!(p.ends_with('…'));
        assert_eq!(preview(&"y".repeat(80)).unwrap().chars().count(), 80);
        assert_eq!(preview("   "), None);
    }

    #[test]
    fn content_blocks_render_as_text() {
        let c = json!([{"type": "text", "text": "a"}, {"type": "image"}, "b"]);
        assert_eq!(content_text(&c), "a b");
        assert_eq!(content_text(&json!(null)), "");
    }

    #[test]
    fn role_letters_round_trip() {
        for r in [
            Role::User,
            Role::Assistant,
            Role::Tool,
            Role::System,
            Role::Code,
        ] {
            assert_eq!(Role::from_letter(r.letter()), Some(r));
        }
    }
}
