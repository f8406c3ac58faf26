//! Claude Code's transcripts: `~/.claude/projects/<escaped cwd>/<session
//! id>.jsonl`, one JSON record per line, linked by `uuid`/`parentUuid`;
//! sub-agents in `<session id>/subagents/agent-<id>.jsonl`.
//!
//! Read line by line: a turn is handed on as soon as the next user prompt
//! shows it is over, so nothing but the ids seen so far is kept between
//! turns. Records that are neither messages nor titles are kept verbatim
//! in the metadata of the node that follows them (`claude_code.records`).

use std::collections::HashMap;
use std::io::BufRead;
use std::path::Path;

use serde_json::{json, Map, Value};

use super::claude_fork;
use super::claude_records::{append_text, command_line, is_command, push_to, record_id};
use super::model::{
    decode, parse_time, text_of, Header, ImportedNode, ImportedTurn, LineReader, Skipped,
};
use crate::ids;
use crate::node::Role;

/// Our session id of a Claude Code conversation, and of a sub-agent's.
pub fn session_id(source_id: &str) -> String {
    format!("claude-code-{source_id}")
}

/// The conversation a file holds: its id and, for a sub-agent's file
/// (`<id>/subagents/agent-<agent>.jsonl`), the parent's id.
pub fn identify(path: &Path) -> Option<(String, Option<String>)> {
    let stem = path.file_stem()?.to_str()?;
    let parent_dir = path.parent()?;
    if parent_dir.file_name()?.to_str()? == "subagents" {
        let parent = parent_dir.parent()?.file_name()?.to_str()?;
        let agent = stem.strip_prefix("agent-").unwrap_or(stem);
        return Some((format!("{parent}-agent-{agent}"), Some(parent.to_string())));
    }
    Some((stem.to_string(), None))
}

/// A first pass over a file: its titles (the user's last `custom-title`,
/// else the last `ai-title`, else the last `summary`), working directory
/// and first time. Only lines that can hold them are parsed.
pub fn header(path: &Path) -> std::io::Result<Header> {
    let (source_id, parent) = identify(path).unwrap_or_default();
    let mut h = Header {
        session_id: session_id(&source_id),
        parent_session: parent.map(|p| session_id(&p)),
        source_id,
        ..Header::default()
    };
    let (mut custom, mut ai, mut summary) = (None, None, None);
    let mut prompts = Vec::new();
    let file = std::io::BufReader::new(std::fs::File::open(path)?);
    for line in file.split(b'\n') {
        let line = line?;
        let wanted = |needle: &[u8]| line.windows(needle.len()).any(|w| w == needle);
        let titled =
            wanted(b"\"custom-title\"") || wanted(b"\"ai-title\"") || wanted(b"\"summary\"");
        let prompt = wanted(b"\"promptId\"") && wanted(b"\"user\"");
        if !titled && !prompt && h.cwd.is_some() && h.created_at.is_some() {
            continue;
        }
        let Ok(rec) = serde_json::from_slice::<Value>(&line) else {
            continue;
        };
        if let Some(p) = claude_fork::prompt_of(&rec) {
            prompts.push(p);
        }
        let text = |k: &str| rec.get(k).and_then(Value::as_str).map(str::to_string);
        match rec.get("type").and_then(Value::as_str) {
            Some("custom-title") => custom = text("customTitle").or(custom),
            Some("ai-title") => ai = text("aiTitle").or(ai),
            Some("summary") => summary = text("summary").or(summary),
            _ => {}
        }
        if h.cwd.is_none() {
            h.cwd = text("cwd").map(Into::into);
        }
        if h.created_at.is_none() {
            h.created_at = text("timestamp").and_then(|t| parse_time(&t));
        }
    }
    // A fork's copy of its parent: its copied turns are the parent's, when
    // the parent's file is there to hold them.
    let (copied, from) = claude_fork::copies(&prompts);
    let parent = prompts
        .first()
        .filter(|_| !copied.is_empty())
        .and_then(|first| claude_fork::parent_file(path, &first.uuid));
    if let Some(parent) = parent {
        h.forked_from = Some((session_id(&parent), from.unwrap_or_default()));
        h.copied = copied;
    }
    let trimmed = |t: Option<String>| t.map(|t| t.trim().to_string()).filter(|t| !t.is_empty());
    h.user_titled = trimmed(custom.clone()).is_some();
    h.title = trimmed(custom).or(trimmed(ai)).or(trimmed(summary));
    Ok(h)
}

/// The turn being read.
struct Open {
    turn: ImportedTurn,
    /// The assistant node the current message's records go to:
    /// (the message's id, the node's index).
    assistant: Option<(String, usize)>,
    /// Tool calls of this turn by their `tool_use` id: the node's index.
    tools: HashMap<String, usize>,
}

/// The parser's state between lines.
pub struct Parser {
    file: String,
    line: u64,
    /// Every record id seen: the node it became part of (for the records
    /// that follow it).
    alias: HashMap<String, String>,
    open: Option<Open>,
    /// System notes waiting for the next user message.
    notes: Vec<ImportedNode>,
    /// Records kept verbatim until the next node.
    kept: Vec<Value>,
    pub skipped: Skipped,
    /// The last record's time.
    last_at: f64,
    /// A sub-agent's own file: its records are all on the side chain.
    subagent_file: bool,
}

impl Parser {
    pub fn new(file: &Path) -> Parser {
        Parser {
            file: file.display().to_string(),
            line: 0,
            alias: HashMap::new(),
            open: None,
            notes: Vec::new(),
            kept: Vec::new(),
            skipped: Skipped::default(),
            last_at: 0.0,
            subagent_file: identify(file).is_some_and(|(_, parent)| parent.is_some()),
        }
    }

    fn skip(&mut self, reason: &str) {
        self.skipped.add(&self.file, self.line, reason);
    }

    fn at(&self) -> f64 {
        self.last_at
    }

    /// Records kept so far go to the metadata of `node`.
    fn take_kept(&mut self, node: &mut ImportedNode) {
        if !self.kept.is_empty() {
            let records = std::mem::take(&mut self.kept);
            node.source.insert("records".into(), Value::Array(records));
        }
    }

    fn attach_kept(&mut self, turn: &mut ImportedTurn) {
        if let Some(last) = turn.nodes.last_mut() {
            let records = std::mem::take(&mut self.kept);
            if !records.is_empty() {
                let meta = &mut last.source;
                let mut all = match meta.remove("records") {
                    Some(Value::Array(a)) => a,
                    _ => Vec::new(),
                };
                all.extend(records);
                meta.insert("records".into(), Value::Array(all));
            }
        }
    }

    /// The node a record's parent became part of.
    fn parent_of(&self, rec: &Value) -> Option<String> {
        let key = rec
            .get("parentUuid")
            .and_then(Value::as_str)
            .or_else(|| rec.get("logicalParentUuid").and_then(Value::as_str))?;
        self.alias.get(key).cloned()
    }

    fn user(&mut self, rec: Value) -> Option<ImportedTurn> {
        let content = rec
            .pointer("/message/content")
            .cloned()
            .unwrap_or(Value::Null);
        let blocks = content.as_array();
        let results = blocks.is_some_and(|b| {
            !b.is_empty()
                && b.iter()
                    .all(|x| x.get("type").and_then(Value::as_str) == Some("tool_result"))
        });
        if results {
            self.tool_results(&rec);
            return None;
        }
        let flag = |k: &str| rec.get(k).and_then(Value::as_bool).unwrap_or(false);
        // A slash command run in the tool (`/compact`, `/model`) and its
        // output: notes between turns, unless the model answers it.
        if !flag("isMeta") && is_command(&text_of(&content)) {
            let text = text_of(&content);
            return self.between(&rec, text, "command");
        }
        if flag("isMeta") || flag("isCompactSummary") {
            let kind = if flag("isCompactSummary") {
                "compaction_summary"
            } else {
                "meta"
            };
            let text = text_of(&content);
            self.note(&rec, text, kind);
            return None;
        }
        // A prompt: the turn before it is over.
        let finished = self.close_open();
        let id = record_id(&rec, self.line);
        let mut node = self.node(&rec, &id, Role::User, Value::String(text_of(&content)));
        if let Some(blocks) = blocks {
            let other: Vec<Value> = blocks
                .iter()
                .filter(|b| b.get("type").and_then(Value::as_str) != Some("text"))
                .cloned()
                .collect();
            if !other.is_empty() {
                node.source.insert("blocks".into(), Value::Array(other));
            }
        }
        self.take_kept(&mut node);
        let follows = self.parent_of(&rec);
        self.alias.insert(id.clone(), id.clone());
        let mut nodes = std::mem::take(&mut self.notes);
        nodes.push(node);
        self.open_turn(follows, nodes);
        finished
    }

    /// The open turn, over: handed on with the records kept so far.
    fn close_open(&mut self) -> Option<ImportedTurn> {
        self.open.take().map(|mut o| {
            self.attach_kept(&mut o.turn);
            o.turn.complete = true;
            o.turn
        })
    }

    /// A turn opens with `nodes` (its notes, then its prompt).
    fn open_turn(&mut self, follows: Option<String>, nodes: Vec<ImportedNode>) {
        self.open = Some(Open {
            turn: ImportedTurn {
                follows,
                nodes,
                ended_at: self.at(),
                complete: false,
            },
            assistant: None,
            tools: HashMap::new(),
        });
    }

    fn tool_results(&mut self, rec: &Value) {
        let Some(open) = self.open.as_mut() else {
            self.skipped
                .add(&self.file, self.line, "a tool result before any prompt");
            return;
        };
        let blocks = rec
            .pointer("/message/content")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let mut found = None;
        for b in &blocks {
            let call = b.get("tool_use_id").and_then(Value::as_str).unwrap_or("");
            let Some(&i) = open.tools.get(call) else {
                self.skipped
                    .add(&self.file, self.line, "a tool result without its call");
                continue;
            };
            let node = &mut open.turn.nodes[i];
            node.output = Some(match b.get("content") {
                Some(Value::String(s)) => Value::String(s.clone()),
                Some(c @ Value::Array(_)) => Value::String(text_of(c)),
                _ => Value::String(String::new()),
            });
            let meta = &mut node.source;
            if b.get("is_error").and_then(Value::as_bool) == Some(true) {
                meta.insert("is_error".into(), Value::Bool(true));
            }
            if let Some(Value::Array(parts)) = b.get("content") {
                if parts
                    .iter()
                    .any(|p| p.get("type").and_then(Value::as_str) != Some("text"))
                {
                    meta.insert("result_blocks".into(), Value::Array(parts.clone()));
                }
            }
            if let Some(r) = rec.get("toolUseResult") {
                meta.insert("tool_use_result".into(), r.clone());
                if let Some(agent) = r.get("agentId").and_then(Value::as_str) {
                    let parent = rec.get("sessionId").and_then(Value::as_str).unwrap_or("");
                    meta.insert(
                        "subagent_session".into(),
                        Value::String(session_id(&format!("{parent}-agent-{agent}"))),
                    );
                }
            }
            found = node.caller.clone();
        }
        open.turn.ended_at = self.last_at;
        if let (Some(id), Some(caller)) = (rec.get("uuid").and_then(Value::as_str), found) {
            self.alias.insert(id.to_string(), caller);
        }
    }

    fn assistant(&mut self, rec: Value) {
        let at = self.at();
        let line = self.line;
        if self.open.is_none() && !self.command_prompt() {
            self.skip("a reply before any prompt");
            return;
        }
        let message_id = rec
            .pointer("/message/id")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let record = record_id(&rec, line);
        // A message Claude Code wrote as several records (one per block)
        // is one assistant node.
        let same = self.open.as_ref().and_then(|o| {
            o.assistant
                .as_ref()
                .filter(|(m, _)| !m.is_empty() && *m == message_id)
                .map(|(_, i)| *i)
        });
        let index = match same {
            Some(i) => i,
            None => {
                let mut node =
                    self.node(&rec, &record, Role::Assistant, Value::String(String::new()));
                self.take_kept(&mut node);
                let Some(open) = self.open.as_mut() else {
                    return;
                };
                open.turn.nodes.push(node);
                let i = open.turn.nodes.len() - 1;
                open.assistant = Some((message_id, i));
                i
            }
        };
        let Some(open) = self.open.as_mut() else {
            return;
        };
        let caller = open.turn.nodes[index].id.clone();
        let blocks = match rec.pointer("/message/content") {
            Some(Value::Array(b)) => b.clone(),
            Some(Value::String(s)) => vec![json!({"type": "text", "text": s})],
            _ => Vec::new(),
        };
        let mut calls = Vec::new();
        {
            let node = &mut open.turn.nodes[index];
            for b in &blocks {
                match b.get("type").and_then(Value::as_str) {
                    Some("text") => {
                        let t = b.get("text").and_then(Value::as_str).unwrap_or("");
                        append_text(&mut node.content, t);
                    }
                    Some("thinking") => {
                        let t = b.get("thinking").and_then(Value::as_str).unwrap_or("");
                        let meta = &mut node.source;
                        let mut all = meta
                            .remove("thinking")
                            .and_then(|v| v.as_str().map(str::to_string))
                            .unwrap_or_default();
                        if !all.is_empty() {
                            all.push_str("\n\n");
                        }
                        all.push_str(t);
                        meta.insert("thinking".into(), Value::String(all));
                    }
                    Some("tool_use") => calls.push(b.clone()),
                    _ => push_to(&mut node.source, "blocks", b.clone()),
                }
            }
            if let Some(m) = rec.pointer("/message/model").and_then(Value::as_str) {
                node.metadata
                    .insert("model".into(), Value::String(m.to_string()));
            }
            if let Some(u) = rec.pointer("/message/usage") {
                node.metadata.insert("usage".into(), u.clone());
            }
            if let Some(s) = rec.pointer("/message/stop_reason").filter(|s| !s.is_null()) {
                node.source.insert("stop_reason".into(), s.clone());
            }
        }
        for (n, call) in calls.into_iter().enumerate() {
            let given = call.get("id").and_then(Value::as_str).unwrap_or("");
            let id = if ids::validate("node id", given).is_ok() {
                given.to_string()
            } else {
                format!("{record}-tool-{n}")
            };
            let name = call
                .get("name")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .unwrap_or("tool");
            let mut source = Map::new();
            source.insert("tool_use_id".into(), Value::String(given.into()));
            open.turn.nodes.push(ImportedNode {
                id,
                role: Role::Tool,
                content: call.get("input").cloned().unwrap_or(Value::Null),
                caller: Some(caller.clone()),
                name: Some(name.to_string()),
                output: None,
                metadata: Map::new(),
                source,
                at,
            });
            open.tools
                .insert(given.to_string(), open.turn.nodes.len() - 1);
        }
        let stop = rec.pointer("/message/stop_reason").and_then(Value::as_str);
        open.turn.complete = matches!(
            stop,
            Some("end_turn" | "stop_sequence" | "max_tokens" | "refusal")
        );
        open.turn.ended_at = at;
        self.alias.insert(record, caller);
    }

    fn system(&mut self, rec: Value) -> Option<ImportedTurn> {
        let subtype = rec.get("subtype").and_then(Value::as_str).unwrap_or("");
        // The end of a turn Claude Code measured: the turn is over.
        if matches!(subtype, "turn_duration" | "stop_hook_summary") {
            if let Some(o) = self.open.as_mut() {
                o.turn.complete = true;
            }
            self.alias_to_parent(&rec);
            self.kept.push(rec);
            return None;
        }
        let text = match rec.get("content") {
            Some(Value::String(s)) => s.clone(),
            Some(other) => text_of(other),
            None => String::new(),
        };
        if subtype == "compact_boundary" {
            // A compaction comes between turns: the one before is over,
            // and the boundary goes with the next.
            return self.between(&rec, text, "compaction");
        }
        self.note(&rec, text, "system");
        None
    }

    /// A note that comes between turns: the open turn is over (handed
    /// on), the note waits for the next prompt.
    fn between(&mut self, rec: &Value, text: String, kind: &str) -> Option<ImportedTurn> {
        let finished = self.close_open();
        self.note(rec, text, kind);
        finished
    }

    /// A reply with no turn open: the slash command just before it was
    /// sent to the model (a custom command), so it is the turn's prompt.
    fn command_prompt(&mut self) -> bool {
        let Some(at) = self.notes.iter().rposition(|n| {
            n.source.get("kind").and_then(Value::as_str) == Some("command")
                && n.content
                    .as_str()
                    .is_some_and(|t| command_line(t).is_some())
        }) else {
            return false;
        };
        let mut nodes = std::mem::take(&mut self.notes);
        let rest = nodes.split_off(at + 1);
        let mut prompt = nodes.pop().unwrap_or_else(|| rest[0].clone());
        prompt.role = Role::User;
        prompt.content = Value::String(
            prompt
                .content
                .as_str()
                .and_then(command_line)
                .unwrap_or_default(),
        );
        let follows = prompt
            .source
            .get("parentUuid")
            .and_then(Value::as_str)
            .and_then(|p| self.alias.get(p).cloned());
        self.alias.insert(prompt.id.clone(), prompt.id.clone());
        nodes.push(prompt);
        nodes.extend(rest);
        self.open_turn(follows, nodes);
        true
    }

    /// A system note (a runtime message, a compaction, a meta message):
    /// inside the open turn, or before the next prompt. It does not move
    /// the conversation: what follows it follows its parent.
    fn note(&mut self, rec: &Value, text: String, kind: &str) {
        let id = record_id(rec, self.line);
        let mut node = self.node(rec, &id, Role::System, Value::String(text));
        node.source
            .insert("kind".into(), Value::String(kind.into()));
        self.take_kept(&mut node);
        self.alias_to_parent(rec);
        match self.open.as_mut() {
            Some(o) => {
                o.turn.nodes.push(node);
                o.turn.ended_at = self.last_at;
            }
            None => self.notes.push(node),
        }
    }

    /// A record that is not a step of the conversation stands for the
    /// node it follows.
    fn alias_to_parent(&mut self, rec: &Value) {
        if let (Some(parent), Some(uuid)) =
            (self.parent_of(rec), rec.get("uuid").and_then(Value::as_str))
        {
            self.alias.insert(uuid.to_string(), parent);
        }
    }

    fn node(&self, rec: &Value, id: &str, role: Role, content: Value) -> ImportedNode {
        let mut source = Map::new();
        for k in [
            "uuid",
            "parentUuid",
            "timestamp",
            "cwd",
            "gitBranch",
            "version",
            "subtype",
            "level",
            "isSidechain",
            "agentId",
            "userType",
            "permissionMode",
        ] {
            if let Some(v) = rec.get(k).filter(|v| !v.is_null()) {
                source.insert(k.into(), v.clone());
            }
        }
        ImportedNode {
            id: id.to_string(),
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
        if let Some(t) = rec
            .get("timestamp")
            .and_then(Value::as_str)
            .and_then(parse_time)
        {
            self.last_at = t;
        }
        // An older Claude Code wrote a sub-agent's records into the main
        // file, on the side chain: kept, not mixed into the conversation.
        if !self.subagent_file && rec.get("isSidechain").and_then(Value::as_bool) == Some(true) {
            self.kept.push(rec);
            return None;
        }
        match rec.get("type").and_then(Value::as_str) {
            Some("user") => self.user(rec),
            Some("assistant") => {
                self.assistant(rec);
                None
            }
            Some("system") => self.system(rec),
            // Titles: read by `header`.
            Some("summary" | "custom-title" | "ai-title" | "agent-name") => None,
            _ => {
                self.kept.push(rec);
                None
            }
        }
    }

    /// The turn still open at the end of the file, finished when the
    /// assistant's last message ended the turn.
    fn finish(&mut self) -> Option<ImportedTurn> {
        let mut open = self.open.take()?;
        self.attach_kept(&mut open.turn);
        Some(open.turn)
    }
}

#[cfg(test)]
#[path = "claude_code_tests.rs"]
mod tests;
