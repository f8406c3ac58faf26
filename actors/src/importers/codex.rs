//! Codex's rollouts: `~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl` (or
//! `.jsonl.zst`) and `~/.codex/archived_sessions/`, one line per item:
//! `{timestamp, type, payload}` with `session_meta`, `response_item`
//! (messages, reasoning, tool calls and their outputs joined by `call_id`),
//! `event_msg` (turn ends, rollbacks, thread names, token counts),
//! `turn_context` and `compacted`. Names may also be in
//! `~/.codex/session_index.jsonl`.
//!
//! Read line by line like every reader here. Codex items carry no ids of
//! their own, so a node's id is its line in the file (`l<line>`), stable
//! because rollouts are only appended to. A rollback (`thread_rolled_back`)
//! drops the last turns from the line the tool goes on with: the next turn
//! follows the turn before them, so the dropped ones stay, on a branch.

use std::collections::HashMap;
use std::io::BufRead;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::model::{
    decode, parse_time, text_of, Header, ImportedNode, ImportedTurn, LineReader, Skipped,
};
use crate::node::Role;

pub fn session_id(source_id: &str) -> String {
    format!("codex-{source_id}")
}

/// A rollout file: `rollout-….jsonl` or `.jsonl.zst`.
pub fn is_rollout(path: &Path) -> bool {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    name.starts_with("rollout-") && (name.ends_with(".jsonl") || name.ends_with(".jsonl.zst"))
}

/// The file's lines, decompressed when it is a `.zst`.
pub fn open(path: &Path) -> std::io::Result<Box<dyn BufRead + Send>> {
    let file = std::fs::File::open(path)?;
    if path.extension().is_some_and(|e| e == "zst") {
        let decoder = zstd::stream::read::Decoder::new(file)?;
        return Ok(Box::new(std::io::BufReader::new(decoder)));
    }
    Ok(Box::new(std::io::BufReader::new(file)))
}

/// The id a rollout's name ends with (`rollout-<time>-<uuid>.jsonl`).
fn id_from_name(path: &Path) -> String {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let stem = name
        .trim_end_matches(".zst")
        .trim_end_matches(".jsonl")
        .trim_start_matches("rollout-");
    // The uuid is the last 36 characters.
    stem.get(stem.len().saturating_sub(36)..)
        .unwrap_or(stem)
        .to_string()
}

/// The Codex home a rollout lives under (the folder holding `sessions/`
/// or `archived_sessions/`).
fn codex_home(path: &Path) -> Option<PathBuf> {
    path.ancestors()
        .find(|a| {
            a.file_name()
                .is_some_and(|n| n == "sessions" || n == "archived_sessions")
        })
        .and_then(Path::parent)
        .map(Path::to_path_buf)
}

/// A first pass: the first `session_meta` (later ones are copies a fork
/// brought), the last thread name, and the name in `session_index.jsonl`.
pub fn header(path: &Path) -> std::io::Result<(Header, bool)> {
    let mut h = Header::default();
    let mut id = None;
    let mut name = None;
    for line in open(path)?.split(b'\n') {
        let line = line?;
        let wanted = |needle: &[u8]| line.windows(needle.len()).any(|w| w == needle);
        if id.is_some() && !wanted(b"thread_name") {
            continue;
        }
        let Ok(rec) = serde_json::from_slice::<Value>(&line) else {
            continue;
        };
        let p = &rec["payload"];
        match rec["type"].as_str() {
            Some("session_meta") if id.is_none() => {
                id = p["id"].as_str().map(str::to_string);
                h.cwd = p["cwd"].as_str().map(PathBuf::from);
                h.created_at = p["timestamp"]
                    .as_str()
                    .or(rec["timestamp"].as_str())
                    .and_then(parse_time);
                // A sub-agent (a spawned thread) names its parent thread;
                // a fork its origin, up to which line of the origin's
                // file it goes on from (`history_base`, or the ordinal).
                h.parent_session = p
                    .pointer("/source/subagent/thread_spawn/parent_thread_id")
                    .and_then(Value::as_str)
                    .or(p["parent_thread_id"].as_str())
                    .map(session_id);
                if let Some(origin) = p["forked_from_id"].as_str() {
                    let end = p
                        .pointer("/history_base/end_ordinal_exclusive")
                        .or(p.get("forked_from_ordinal_exclusive"))
                        .and_then(Value::as_u64);
                    let node = end.map(|n| format!("l{n}")).unwrap_or_default();
                    h.forked_from = Some((session_id(origin), node));
                }
            }
            Some("event_msg") if p["type"] == "thread_name_updated" => {
                name = p["thread_name"]
                    .as_str()
                    .or(p["name"].as_str())
                    .map(str::to_string)
                    .or(name);
            }
            _ => {}
        }
    }
    h.source_id = id.unwrap_or_else(|| id_from_name(path));
    h.session_id = session_id(&h.source_id);
    if name.is_none() {
        name = codex_home(path).and_then(|home| index_name(&home, &h.source_id));
    }
    h.title = name.map(|t| t.trim().to_string()).filter(|t| !t.is_empty());
    h.user_titled = h.title.is_some();
    let archived = path
        .ancestors()
        .any(|a| a.file_name().is_some_and(|n| n == "archived_sessions"));
    Ok((h, archived))
}

/// The thread a `spawn_agent` call started, from its output
/// (`{"agent_id": …}`).
fn spawned_agent(output: &Value) -> Option<String> {
    let parsed;
    let v = match output {
        Value::String(s) => {
            parsed = serde_json::from_str::<Value>(s).ok()?;
            &parsed
        }
        other => other,
    };
    let id = v.get("agent_id")?.as_str()?;
    crate::ids::validate("session id", &session_id(id))
        .ok()
        .map(|()| id.to_string())
}

/// The name `session_index.jsonl` gives a thread (the last one wins).
fn index_name(home: &Path, id: &str) -> Option<String> {
    let file = std::fs::File::open(home.join("session_index.jsonl")).ok()?;
    let mut found = None;
    for line in std::io::BufReader::new(file)
        .split(b'\n')
        .map_while(Result::ok)
    {
        let Ok(v) = serde_json::from_slice::<Value>(&line) else {
            continue;
        };
        if v["id"].as_str() == Some(id) {
            found = ["thread_name", "name", "title"]
                .iter()
                .find_map(|k| v[*k].as_str().map(str::to_string))
                .or(found);
        }
    }
    found
}

struct Open {
    turn: ImportedTurn,
    /// Tool calls of this turn by `call_id`: the node's index.
    calls: HashMap<String, usize>,
}

pub struct Parser {
    file: String,
    line: u64,
    open: Option<Open>,
    notes: Vec<ImportedNode>,
    kept: Vec<Value>,
    pub skipped: Skipped,
    last_at: f64,
    /// Reasoning summaries waiting for the next assistant node.
    reasoning: Vec<String>,
    /// The model of the latest `turn_context`.
    model: Option<String>,
    /// What each turn written so far followed, and its last node.
    turns: Vec<(Option<String>, Option<String>)>,
    /// What the next turn follows (after a rollback: not the last one).
    follows: Option<String>,
    seen_meta: bool,
    /// A turn a rollback closed, handed on with the rollback's line.
    pending_closed: Option<ImportedTurn>,
}

impl Parser {
    pub fn new(file: &Path) -> Parser {
        Parser {
            file: file.display().to_string(),
            line: 0,
            open: None,
            notes: Vec::new(),
            kept: Vec::new(),
            skipped: Skipped::default(),
            last_at: 0.0,
            reasoning: Vec::new(),
            model: None,
            turns: Vec::new(),
            follows: None,
            seen_meta: false,
            pending_closed: None,
        }
    }

    fn skip(&mut self, reason: &str) {
        self.skipped.add(&self.file, self.line, reason);
    }

    fn id(&self) -> String {
        format!("l{}", self.line)
    }

    fn node(&mut self, role: Role, content: Value) -> ImportedNode {
        let mut source = Map::new();
        source.insert("line".into(), self.line.into());
        if !self.kept.is_empty() {
            source.insert(
                "records".into(),
                Value::Array(std::mem::take(&mut self.kept)),
            );
        }
        ImportedNode {
            id: self.id(),
            role,
            content,
            caller: None,
            name: None,
            output: None,
            metadata: Map::new(),
            source,
            at: self.last_at,
        }
    }

    fn flush_kept(&mut self, turn: &mut ImportedTurn) {
        if self.kept.is_empty() {
            return;
        }
        if let Some(last) = turn.nodes.last_mut() {
            let mut all = match last.source.remove("records") {
                Some(Value::Array(a)) => a,
                _ => Vec::new(),
            };
            all.append(&mut self.kept);
            last.source.insert("records".into(), Value::Array(all));
        }
    }

    /// Close the open turn (a next prompt came, or the tool ended it).
    fn close(&mut self) -> Option<ImportedTurn> {
        let mut open = self.open.take()?;
        self.flush_kept(&mut open.turn);
        open.turn.complete = true;
        let last = open.turn.last_conversational();
        self.turns.push((open.turn.follows.clone(), last.clone()));
        self.follows = last;
        Some(open.turn)
    }

    fn item(&mut self, p: Value, rec: Value) -> Option<ImportedTurn> {
        match p["type"].as_str() {
            Some("message") => {
                let text = text_of(&p["content"]);
                match p["role"].as_str() {
                    Some("user") if !is_context(&text) => return self.prompt(text, &p),
                    Some("assistant") => self.reply(text),
                    _ => self.note(text, "context", rec),
                }
            }
            Some("reasoning") => {
                let summary = text_of(&p["summary"]);
                if !summary.is_empty() {
                    self.reasoning.push(summary);
                }
            }
            Some("function_call" | "custom_tool_call" | "local_shell_call") => self.call(&p),
            Some("function_call_output" | "custom_tool_call_output") => self.output(&p),
            _ => self.kept.push(rec),
        }
        None
    }

    fn prompt(&mut self, text: String, p: &Value) -> Option<ImportedTurn> {
        let finished = self.close();
        let mut node = self.node(Role::User, Value::String(text));
        let images: Vec<Value> = p["content"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|b| b["type"] != "input_text")
            .cloned()
            .collect();
        if !images.is_empty() {
            node.source.insert("blocks".into(), Value::Array(images));
        }
        let mut nodes = std::mem::take(&mut self.notes);
        nodes.push(node);
        self.open = Some(Open {
            turn: ImportedTurn {
                follows: self.follows.clone(),
                nodes,
                ended_at: self.last_at,
                complete: false,
            },
            calls: HashMap::new(),
        });
        finished
    }

    fn reply(&mut self, text: String) {
        if self.open.is_none() {
            self.skip("a reply before any prompt");
            return;
        }
        let mut node = self.node(Role::Assistant, Value::String(text));
        if let Some(m) = &self.model {
            node.metadata
                .insert("model".into(), Value::String(m.clone()));
        }
        if !self.reasoning.is_empty() {
            node.source.insert(
                "reasoning".into(),
                Value::String(std::mem::take(&mut self.reasoning).join("\n\n")),
            );
        }
        if let Some(o) = self.open.as_mut() {
            o.turn.nodes.push(node);
            o.turn.ended_at = self.last_at;
        }
    }

    /// A tool call, called by the turn's last assistant node (an empty one
    /// is made when the model called a tool before saying anything).
    fn call(&mut self, p: &Value) {
        if self.open.is_none() {
            self.skip("a tool call before any prompt");
            return;
        }
        let has_reply = self
            .open
            .as_ref()
            .is_some_and(|o| o.turn.nodes.iter().any(|n| n.role == Role::Assistant));
        if !has_reply {
            self.reply(String::new());
            if let Some(o) = self.open.as_mut() {
                if let Some(n) = o.turn.nodes.last_mut() {
                    n.id = format!("l{}-a", self.line);
                }
            }
        }
        let call_id = p["call_id"]
            .as_str()
            .or(p["id"].as_str())
            .unwrap_or("")
            .to_string();
        let name = p["name"]
            .as_str()
            .filter(|s| !s.is_empty())
            .unwrap_or(if p["type"] == "local_shell_call" {
                "local_shell"
            } else {
                "tool"
            })
            .to_string();
        // Arguments arrive as a JSON string: stored parsed when they parse.
        let content = match (&p["arguments"], &p["input"], &p["action"]) {
            (Value::String(a), _, _) => serde_json::from_str(a).unwrap_or(Value::String(a.clone())),
            (_, Value::Null, action) if !action.is_null() => action.clone(),
            (_, input, _) => input.clone(),
        };
        let mut node = self.node(Role::Tool, content);
        node.name = Some(name);
        node.source
            .insert("call_id".into(), Value::String(call_id.clone()));
        if let Some(o) = self.open.as_mut() {
            node.caller = o
                .turn
                .nodes
                .iter()
                .rev()
                .find(|n| n.role == Role::Assistant)
                .map(|n| n.id.clone());
            o.turn.nodes.push(node);
            o.calls.insert(call_id, o.turn.nodes.len() - 1);
            o.turn.ended_at = self.last_at;
        }
    }

    fn output(&mut self, p: &Value) {
        let call_id = p["call_id"].as_str().unwrap_or("");
        let at = self.last_at;
        let Some(i) = self
            .open
            .as_ref()
            .and_then(|o| o.calls.get(call_id).copied())
        else {
            self.skip("a tool output without its call");
            return;
        };
        if let Some(o) = self.open.as_mut() {
            let node = &mut o.turn.nodes[i];
            node.output = Some(match &p["output"] {
                Value::String(s) => Value::String(s.clone()),
                Value::Null => Value::String(String::new()),
                other => other.clone(),
            });
            // A spawned agent's thread is a session of its own: the call
            // names it (and the agent's session names this one).
            if let Some(agent) = spawned_agent(&p["output"]) {
                let sub = Value::String(session_id(&agent));
                node.source.insert("subagent_session".into(), sub);
            }
            o.turn.ended_at = at;
        }
    }

    fn event(&mut self, p: Value, rec: Value) {
        match p["type"].as_str() {
            Some("task_complete" | "turn_complete") => {
                if let Some(o) = self.open.as_mut() {
                    o.turn.complete = true;
                }
            }
            Some("turn_aborted") => {
                if let Some(o) = self.open.as_mut() {
                    o.turn.complete = true;
                    if let Some(last) = o.turn.nodes.last_mut() {
                        last.source.insert("aborted".into(), p["reason"].clone());
                    }
                }
            }
            Some("thread_rolled_back") => {
                // The last `num_turns` turns are dropped from the line the
                // tool goes on with: the next turn follows what they did.
                let drop = p["num_turns"].as_u64().unwrap_or(0) as usize;
                self.pending_closed = self.close();
                if drop > 0 && drop <= self.turns.len() {
                    let cut = self.turns.len() - drop;
                    self.follows = self.turns[cut].0.clone();
                    self.turns.truncate(cut);
                }
                self.kept.push(rec);
            }
            Some("token_count") => {
                if let Some(o) = self.open.as_mut() {
                    if let Some(a) = o
                        .turn
                        .nodes
                        .iter_mut()
                        .rev()
                        .find(|n| n.role == Role::Assistant)
                    {
                        a.metadata.insert("usage".into(), p["info"].clone());
                    }
                }
            }
            // The same as the response items beside them.
            Some("user_message" | "agent_message" | "agent_reasoning" | "thread_name_updated") => {}
            _ => self.kept.push(rec),
        }
    }

    fn note(&mut self, text: String, kind: &str, rec: Value) {
        let mut node = self.node(Role::System, Value::String(text));
        node.source
            .insert("kind".into(), Value::String(kind.into()));
        if kind == "compaction" {
            node.source.insert("record".into(), rec);
        }
        match self.open.as_mut() {
            Some(o) => {
                o.turn.nodes.push(node);
                o.turn.ended_at = self.last_at;
            }
            None => self.notes.push(node),
        }
    }
}

impl LineReader for Parser {
    fn push(&mut self, line: &[u8], last: bool) -> Option<ImportedTurn> {
        self.line += 1;
        let rec = match decode(line, last) {
            Ok(Some(rec)) => rec,
            Ok(None) => return None,
            Err(reason) => {
                self.skip(reason);
                return None;
            }
        };
        if let Some(t) = rec["timestamp"].as_str().and_then(parse_time) {
            self.last_at = t;
        }
        let payload = rec.get("payload").cloned().unwrap_or(Value::Null);
        match rec["type"].as_str() {
            Some("response_item") => self.item(payload, rec),
            Some("event_msg") => {
                self.event(payload, rec);
                self.pending_closed.take()
            }
            Some("turn_context") => {
                self.model = payload["model"]
                    .as_str()
                    .map(str::to_string)
                    .or(self.model.take());
                self.kept.push(rec);
                None
            }
            Some("compacted") => {
                let text = payload["message"].as_str().unwrap_or("").to_string();
                self.note(text, "compaction", rec);
                None
            }
            Some("session_meta") if !self.seen_meta => {
                self.seen_meta = true;
                None
            }
            _ => {
                self.kept.push(rec);
                None
            }
        }
    }

    fn finish(&mut self) -> Option<ImportedTurn> {
        let mut open = self.open.take()?;
        self.flush_kept(&mut open.turn);
        Some(open.turn)
    }
}

/// Text Codex injects as a user message (the environment, AGENTS.md): a
/// system note, not a prompt.
fn is_context(text: &str) -> bool {
    let t = text.trim_start();
    t.starts_with("<environment_context>")
        || t.starts_with("<user_instructions>")
        || t.starts_with("# AGENTS.md instructions")
        || t.starts_with("<turn_aborted>")
        || t.starts_with("<subagent_notification>")
}

#[cfg(test)]
#[path = "codex_tests.rs"]
mod tests;
