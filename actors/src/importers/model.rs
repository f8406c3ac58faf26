//! What every importer makes of another tool's history: turns of nodes
//! with the tool's own ids and times, ready for the engine's whole-turn
//! write, and the problems met on the way.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::node::Role;
use crate::session::NewNode;

/// The tools whose histories can be imported; `source` of their sessions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Tool {
    ClaudeCode,
    Codex,
    GeminiCli,
    Opencode,
    Aider,
}

impl Tool {
    pub fn as_str(self) -> &'static str {
        match self {
            Tool::ClaudeCode => "claude-code",
            Tool::Codex => "codex",
            Tool::GeminiCli => "gemini-cli",
            Tool::Opencode => "opencode",
            Tool::Aider => "aider",
        }
    }

    pub fn parse(name: &str) -> Option<Tool> {
        match name {
            "claude-code" | "claude" => Some(Tool::ClaudeCode),
            "codex" => Some(Tool::Codex),
            "gemini-cli" | "gemini" => Some(Tool::GeminiCli),
            "opencode" => Some(Tool::Opencode),
            "aider" => Some(Tool::Aider),
            _ => None,
        }
    }

    /// Every tool's name, for messages.
    pub const NAMES: &'static [&'static str] =
        &["claude-code", "codex", "gemini-cli", "opencode", "aider"];
}

/// A tool's reader: one line at a time, each finished turn handed on.
pub trait LineReader {
    /// One line; a turn it shows is over. The file's `last` line may be
    /// cut short by a writer still at work.
    fn push(&mut self, line: &[u8], last: bool) -> Option<ImportedTurn>;

    /// The turn still open at the end of the file, finished or not.
    fn finish(&mut self) -> Option<ImportedTurn>;

    /// Read every line of `reader`, handing each finished turn to `each`
    /// (which stops the reading by returning false); the last turn is
    /// returned, finished or not.
    fn read(
        &mut self,
        reader: impl std::io::BufRead,
        mut each: impl FnMut(ImportedTurn) -> bool,
    ) -> std::io::Result<Option<ImportedTurn>>
    where
        Self: Sized,
    {
        let mut lines = Lines::new(reader);
        let mut next = lines.next_line()?;
        while let Some(line) = next.take() {
            next = lines.next_line()?;
            let last = next.is_none();
            if let Some(done) = self.push(&line, last) {
                if !each(done) {
                    return Ok(None);
                }
            }
        }
        Ok(self.finish())
    }
}

/// The longest line a reader takes: a longer one (a runaway tool output)
/// is skipped without being held in memory whole.
pub const MAX_LINE: usize = 16 << 20;

/// What a line over `MAX_LINE` is handed on as (`decode` skips it).
const TOO_LONG: &[u8] = b"\0\0a line over the limit";

/// A file's lines, each at most `MAX_LINE` bytes: a longer one becomes
/// `TOO_LONG`, its bytes read and dropped as they come.
struct Lines<R> {
    reader: R,
}

impl<R: std::io::BufRead> Lines<R> {
    fn new(reader: R) -> Lines<R> {
        Lines { reader }
    }

    fn next_line(&mut self) -> std::io::Result<Option<Vec<u8>>> {
        let mut line = Vec::new();
        let mut over = false;
        let mut any = false;
        loop {
            let available = match self.reader.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if available.is_empty() {
                break;
            }
            any = true;
            let (take, end) = match available.iter().position(|&b| b == b'\n') {
                Some(i) => (i, true),
                None => (available.len(), false),
            };
            if !over && line.len() + take <= MAX_LINE {
                line.extend_from_slice(&available[..take]);
            } else {
                over = true;
                line = Vec::new();
            }
            self.reader.consume(take + usize::from(end));
            if end {
                break;
            }
        }
        if !any {
            return Ok(None);
        }
        Ok(Some(if over { TOO_LONG.to_vec() } else { line }))
    }
}

/// A line as a JSON record: `Ok(None)` for a blank line, `Err` with the
/// reason it is skipped (a cut `last` line is a writer still at work).
pub fn decode(line: &[u8], last: bool) -> Result<Option<Value>, &'static str> {
    if line == TOO_LONG {
        return Err("a line over 16 MiB");
    }
    if line.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    match serde_json::from_slice(line) {
        Ok(v @ Value::Object(_)) => Ok(Some(v)),
        Ok(_) => Err("not a JSON object"),
        Err(_) if last => Err("an unfinished last line"),
        Err(_) => Err("not JSON"),
    }
}

/// What a reader hands on: a turn, or (in a file holding several
/// conversations) the start of the next one.
#[derive(Debug)]
pub enum Read {
    Begin(Header),
    Turn(ImportedTurn),
}

/// One node of an imported turn.
#[derive(Debug, Clone)]
pub struct ImportedNode {
    pub id: String,
    pub role: Role,
    pub content: Value,
    pub caller: Option<String>,
    pub name: Option<String>,
    pub output: Option<Value>,
    pub metadata: Map<String, Value>,
    /// What the tool wrote beside the message, kept as it was: stored in
    /// the node's metadata as `imported`, with the tool's name.
    pub source: Map<String, Value>,
    /// The tool's time of the node, in seconds since the epoch.
    pub at: f64,
}

impl ImportedNode {
    /// A node with `content`, nothing else set yet.
    pub fn new(id: impl Into<String>, role: Role, content: Value, at: f64) -> ImportedNode {
        ImportedNode {
            id: id.into(),
            role,
            content,
            caller: None,
            name: None,
            output: None,
            metadata: Map::new(),
            source: Map::new(),
            at,
        }
    }

    pub fn into_new_node(self, tool: Tool, predecessor: Option<String>) -> NewNode {
        let mut metadata = self.metadata;
        let mut source = self.source;
        source.insert("tool".into(), Value::String(tool.as_str().into()));
        metadata.insert("imported".into(), Value::Object(source));
        NewNode {
            id: Some(self.id),
            role: self.role,
            content: self.content,
            predecessor,
            caller: self.caller,
            metadata,
            name: self.name,
            output: self.output,
            at: Some(self.at),
        }
    }
}

/// One turn: system notes, the user's message, then everything up to the
/// next user message.
#[derive(Debug, Clone)]
pub struct ImportedTurn {
    /// The node this turn's user message follows, as our node id (None:
    /// the conversation's first turn, or a root of its own).
    pub follows: Option<String>,
    pub nodes: Vec<ImportedNode>,
    /// When the turn ended (its last record), seconds since the epoch.
    pub ended_at: f64,
    /// The turn is known to be over (a later user message, the tool's end
    /// of turn, or a file the tool no longer writes).
    pub complete: bool,
}

impl ImportedTurn {
    /// The user message's id (a turn always has one).
    /// The last user or assistant node: what the next turn follows.
    pub fn last_conversational(&self) -> Option<String> {
        self.nodes
            .iter()
            .rev()
            .find(|n| matches!(n.role, Role::User | Role::Assistant))
            .map(|n| n.id.clone())
    }

    pub fn user_id(&self) -> Option<&str> {
        self.nodes
            .iter()
            .find(|n| n.role == Role::User)
            .map(|n| n.id.as_str())
    }
}

/// What a first pass over a file finds before any turn is written.
#[derive(Debug, Clone, Default)]
pub struct Header {
    /// The tool's own id of the conversation.
    pub source_id: String,
    /// Our session id (stable: the tool and its id).
    pub session_id: String,
    pub title: Option<String>,
    /// The title was set by the user in the tool (locks it here too).
    pub user_titled: bool,
    pub cwd: Option<PathBuf>,
    pub created_at: Option<f64>,
    /// A sub-agent's conversation: the session of the one that started it.
    pub parent_session: Option<String>,
    /// The tool archived it.
    pub archived: bool,
    /// A fork's copy of its parent: the prompts (node ids) of the turns
    /// it copied, left to the parent's session.
    pub copied: std::collections::HashSet<String>,
    /// A fork the tool made: the session it was forked from and the node
    /// it goes on from (the session's `fork_of`).
    pub forked_from: Option<(String, String)>,
}

/// Why lines were skipped, counted, with the first few places.
#[derive(Debug, Clone, Default, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Skipped {
    pub by_reason: BTreeMap<String, u64>,
    /// The first problems met: file, line, reason.
    pub first: Vec<Problem>,
}

#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Problem {
    pub file: String,
    pub line: u64,
    pub reason: String,
}

impl Skipped {
    const KEPT: usize = 50;

    pub fn add(&mut self, file: &str, line: u64, reason: &str) {
        *self.by_reason.entry(reason.to_string()).or_default() += 1;
        if self.first.len() < Self::KEPT {
            self.first.push(Problem {
                file: file.to_string(),
                line,
                reason: reason.to_string(),
            });
        }
    }

    pub fn merge(&mut self, other: Skipped) {
        for (k, v) in other.by_reason {
            *self.by_reason.entry(k).or_default() += v;
        }
        for p in other.first {
            if self.first.len() < Self::KEPT {
                self.first.push(p);
            }
        }
    }

    pub fn total(&self) -> u64 {
        self.by_reason.values().sum()
    }
}

/// The text of a message's content: a string, or its text blocks joined.
pub fn text_of(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| match b {
                Value::String(s) => Some(s.as_str()),
                _ => b.get("text").and_then(Value::as_str),
            })
            .collect::<Vec<_>>()
            .join("\n\n"),
        _ => String::new(),
    }
}

/// Seconds since the epoch of an RFC 3339 time as the tools write it
/// (`2025-06-01T10:00:00.123Z`, or with an offset).
pub fn parse_time(s: &str) -> Option<f64> {
    let t = time::OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339).ok()?;
    Some(t.unix_timestamp() as f64 + f64::from(t.nanosecond()) / 1e9)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_over_the_limit_is_skipped_without_being_kept() {
        let long = vec![b'x'; MAX_LINE + 10];
        let mut text = b"{\"a\":1}\n".to_vec();
        text.extend_from_slice(&long);
        text.extend_from_slice(b"\n{\"b\":2}");
        // A small buffer: the long line arrives in many pieces.
        let reader = std::io::BufReader::with_capacity(4096, &text[..]);
        let mut lines = Lines::new(reader);
        let mut got = Vec::new();
        while let Some(l) = lines.next_line().unwrap() {
            got.push(l);
        }
        assert_eq!(got.len(), 3);
        assert_eq!(
            decode(&got[0], false),
            Ok(Some(serde_json::json!({"a": 1})))
        );
        assert_eq!(decode(&got[1], false), Err("a line over 16 MiB"));
        assert_eq!(decode(&got[2], true), Ok(Some(serde_json::json!({"b": 2}))));
        // A file ending with a newline has no empty last line.
        let mut lines = Lines::new(&b"{}\n"[..]);
        assert!(lines.next_line().unwrap().is_some());
        assert!(lines.next_line().unwrap().is_none());
    }

    #[test]
    fn times_as_the_tools_write_them() {
        assert_eq!(parse_time("1970-01-01T00:00:00Z"), Some(0.0));
        assert_eq!(
            parse_time("2025-06-01T10:00:00.250Z"),
            Some(1_748_772_000.25)
        );
        assert_eq!(
            parse_time("2025-06-01T12:00:00+02:00"),
            Some(1_748_772_000.0)
        );
        assert_eq!(parse_time("2024-02-29T00:00:00Z"), Some(1_709_164_800.0));
        assert_eq!(parse_time("yesterday"), None);
        assert_eq!(parse_time("2025-13-01T00:00:00Z"), None);
        assert_eq!(parse_time("2025-06-01T10:00:0é"), None);
        assert_eq!(parse_time("2025-06-01T10:00:00.5é"), None);
    }
}
