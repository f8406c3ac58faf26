//! Gemini CLI's chat recordings: `~/.gemini/tmp/<project hash>/chats/
//! session-<time>-<id>.jsonl`, sub-agents' in `chats/<parent id>/<id>.jsonl`,
//! and the older whole-file `.json`.
//!
//! A `.jsonl` file is an upsert log: a first line of metadata (`sessionId`,
//! `projectHash`, `startTime`, `kind`, `directories`), then message records
//! by `id` (`user`, `gemini` with its `toolCalls`, `thoughts`, `tokens` and
//! `model`, and `info`/`error`/`warning` notes), a record written again in
//! full whenever it changes (a tool's result, the tokens); `{"$set": …}`
//! patches the metadata (`summary` is the title; `messages` replaces the
//! model's context: a compaction) and `{"$rewindTo": id}` takes back that
//! message and everything after it. Read line by line: the open turn's
//! records are kept by id until the next user message closes it. A rewind
//! closes the open turn as it is, and the next turn follows the message
//! before the one rewound to, so the rewound turns stay, on a branch.

use std::collections::{HashMap, HashSet};
use std::io::BufRead;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::model::{decode, parse_time, Header, ImportedNode, ImportedTurn, LineReader, Skipped};
use crate::ids;
use crate::node::Role;

pub fn session_id(source_id: &str) -> String {
    format!("gemini-{source_id}")
}

/// A chat recording: a `.jsonl` (or older `.json`) under a `chats` folder.
pub fn is_chat(path: &Path) -> bool {
    let ext = path.extension().and_then(|e| e.to_str());
    matches!(ext, Some("jsonl" | "json"))
        && path
            .ancestors()
            .skip(1)
            .take(2)
            .any(|a| a.file_name().is_some_and(|n| n == "chats"))
}

/// The older whole-file format.
fn is_legacy(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "json")
}

/// A sub-agent's recording lives in `chats/<parent session id>/`.
fn parent_of(path: &Path) -> Option<String> {
    let dir = path.parent()?;
    if dir.file_name()? == "chats" {
        return None;
    }
    (dir.parent()?.file_name()? == "chats")
        .then(|| dir.file_name()?.to_str().map(str::to_string))
        .flatten()
}

/// The working directory of a conversation: the first of its
/// `directories`, else the `.project_root` Gemini CLI keeps beside its
/// project folder.
fn cwd_of(path: &Path, directories: Option<&Value>) -> Option<PathBuf> {
    if let Some(d) = directories
        .and_then(Value::as_array)
        .and_then(|a| a.first())
        .and_then(Value::as_str)
    {
        return Some(PathBuf::from(d));
    }
    let project = path
        .ancestors()
        .find(|a| a.file_name().is_some_and(|n| n == "chats"))?
        .parent()?;
    let root = std::fs::read_to_string(project.join(".project_root")).ok()?;
    Some(PathBuf::from(root.trim())).filter(|p| p.is_absolute())
}

/// A first pass: the metadata line and the `$set` patches (the last
/// `summary` is the title), and the first message's time.
pub fn header(path: &Path) -> std::io::Result<Header> {
    let mut meta = Map::new();
    let mut first_at = None;
    let absorb = |patch: &Map<String, Value>, meta: &mut Map<String, Value>| {
        for (k, v) in patch {
            if k != "messages" {
                meta.insert(k.clone(), v.clone());
            }
        }
    };
    if is_legacy(path) {
        let file = std::io::BufReader::new(std::fs::File::open(path)?);
        if let Ok(Value::Object(whole)) = serde_json::from_reader::<_, Value>(file) {
            absorb(&whole, &mut meta);
        }
    } else {
        for line in std::io::BufReader::new(std::fs::File::open(path)?).split(b'\n') {
            let line = line?;
            let wanted = |needle: &[u8]| line.windows(needle.len()).any(|w| w == needle);
            if first_at.is_some() && !wanted(b"\"$set\"") && !wanted(b"\"sessionId\"") {
                continue;
            }
            let Ok(Value::Object(rec)) = serde_json::from_slice::<Value>(&line) else {
                continue;
            };
            match rec.get("$set") {
                Some(Value::Object(patch)) => absorb(patch, &mut meta),
                _ if rec.contains_key("id") && first_at.is_none() => {
                    first_at = rec
                        .get("timestamp")
                        .and_then(Value::as_str)
                        .and_then(parse_time);
                }
                _ if rec.contains_key("id") => {}
                // Every start and resume writes the metadata line again:
                // the conversation started at the first one.
                _ if rec.contains_key("sessionId") => {
                    let start = meta.get("startTime").cloned();
                    absorb(&rec, &mut meta);
                    if let Some(start) = start {
                        meta.insert("startTime".into(), start);
                    }
                }
                _ => {}
            }
        }
    }
    let text = |k: &str| meta.get(k).and_then(Value::as_str).map(str::to_string);
    let source_id = text("sessionId")
        .filter(|s| ids::validate("session id", &session_id(s)).is_ok())
        .or_else(|| {
            path.file_stem()
                .and_then(|s| s.to_str())
                .map(str::to_string)
        })
        .unwrap_or_default();
    Ok(Header {
        session_id: session_id(&source_id),
        source_id,
        title: text("summary")
            .map(|t| t.trim().to_string())
            .filter(|t| !t.is_empty()),
        user_titled: false,
        cwd: cwd_of(path, meta.get("directories")),
        created_at: text("startTime").and_then(|t| parse_time(&t)).or(first_at),
        parent_session: parent_of(path).map(|p| session_id(&p)),
        archived: false,
        ..Header::default()
    })
}

/// The text of a Gemini content (`PartListUnion`): a string, a part, or a
/// list of either.
fn text_of(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .map(text_of)
            .filter(|t| !t.is_empty())
            .collect::<Vec<_>>()
            .join("\n\n"),
        Value::Object(part) => part
            .get("text")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        _ => String::new(),
    }
}

/// The turn being read: its records by id, in order of first sight.
#[derive(Default)]
struct Open {
    follows: Option<String>,
    order: Vec<String>,
    records: HashMap<String, (Value, u64)>,
    /// The `user` records holding only tool results (`functionResponse`
    /// parts): the results sent back to the model, by record id.
    responses: Vec<(String, Value)>,
    ended_at: f64,
}

pub struct Parser {
    file: String,
    line: u64,
    open: Option<Open>,
    /// Notes before the first user message, for the first turn.
    notes: Vec<(Value, u64)>,
    pub skipped: Skipped,
    /// The conversational messages of the line the tool goes on with, in
    /// order: what a rewind cuts back.
    line_ids: Vec<String>,
    /// What the next turn follows.
    follows: Option<String>,
    /// The ids of turns already handed on (a record of one written again
    /// later cannot change a turn already written).
    closed: std::collections::HashSet<String>,
    seen_meta: bool,
    /// Every record id read so far.
    seen: HashSet<String>,
    last_at: f64,
}

impl Parser {
    pub fn new(file: &Path) -> Parser {
        Parser {
            file: file.display().to_string(),
            line: 0,
            open: None,
            notes: Vec::new(),
            skipped: Skipped::default(),
            line_ids: Vec::new(),
            follows: None,
            closed: Default::default(),
            seen_meta: false,
            seen: HashSet::new(),
            last_at: 0.0,
        }
    }

    fn skip(&mut self, reason: &str) {
        self.skipped.add(&self.file, self.line, reason);
    }

    /// One record of the file (a line, or a message of an older `.json`).
    pub fn record(&mut self, rec: Value) -> Option<ImportedTurn> {
        let Value::Object(map) = &rec else {
            self.skip("not a JSON object");
            return None;
        };
        if let Some(at) = map
            .get("timestamp")
            .and_then(Value::as_str)
            .and_then(parse_time)
        {
            self.last_at = at;
        }
        if let Some(target) = map.get("$rewindTo").and_then(Value::as_str) {
            return self.rewind(target.to_string());
        }
        if let Some(patch) = map.get("$set") {
            // Every start and resume loads the conversation as the model's
            // context (`messages`): only a set holding messages of its own
            // replaced it (a compression).
            if patch
                .get("messages")
                .is_some_and(|m| self.replaces_context(m))
            {
                let n = patch["messages"].as_array().map_or(0, Vec::len);
                let mut note = serde_json::json!({
                    "id": format!("l{}", self.line),
                    "type": "compaction",
                    "content": format!("The model's context was replaced ({n} messages)."),
                });
                note["at"] = self.last_at.into();
                self.add(note);
            }
            return None;
        }
        let Some(id) = map.get("id").and_then(Value::as_str).map(str::to_string) else {
            if map.contains_key("sessionId") {
                // The metadata line: the file's first, and again at every
                // start or resume.
                self.seen_meta = true;
            } else {
                self.skip("an unknown record");
            }
            return None;
        };
        self.seen.insert(id.clone());
        if ids::validate("node id", &id).is_err() {
            self.skip("a message id that cannot be a node id");
            return None;
        }
        if map.get("type").and_then(Value::as_str) == Some("user") {
            if is_tool_response(map.get("content")) {
                self.response(id, rec);
                return None;
            }
            return self.user(id, rec);
        }
        self.add(rec);
        None
    }

    /// A message of the open turn, new or written again.
    fn add(&mut self, rec: Value) {
        let id = rec["id"].as_str().unwrap_or_default().to_string();
        if self.closed.contains(&id) {
            self.skip("a change to a turn already over");
            return;
        }
        let Some(open) = self.open.as_mut() else {
            if rec["type"] == "gemini" {
                self.skip("a reply before any prompt");
            } else {
                self.notes.push((rec, self.line));
            }
            return;
        };
        if !open.records.contains_key(&id) {
            open.order.push(id.clone());
            if rec["type"] == "gemini" {
                self.line_ids.push(id.clone());
            }
        }
        open.records.insert(id, (rec, self.line));
        open.ended_at = self.last_at;
    }

    /// Whether a `$set` of `messages` replaced the model's context (a
    /// compression) rather than loading the conversation at a start or a
    /// resume: it holds messages that are not this file's records (nor
    /// their `<id>_response` copies, nor the session's opening context).
    fn replaces_context(&self, messages: &Value) -> bool {
        messages.as_array().into_iter().flatten().any(|m| {
            let Some(id) = m.get("id").and_then(Value::as_str) else {
                return false;
            };
            let own = |i: &str| self.seen.contains(i);
            let opening = text_of(m.get("content").unwrap_or(&Value::Null))
                .trim_start()
                .starts_with("<session_context>");
            !(own(id) || id.strip_suffix("_response").is_some_and(own) || opening)
        })
    }

    /// A `user` record holding only tool results: part of the open turn
    /// (the results are the calls' own, kept with them).
    fn response(&mut self, id: String, rec: Value) {
        if self.closed.contains(&id) {
            return;
        }
        let Some(open) = self.open.as_mut() else {
            self.skip("a tool result before any prompt");
            return;
        };
        match open.responses.iter_mut().find(|(i, _)| *i == id) {
            Some(r) => r.1 = rec,
            None => open.responses.push((id, rec)),
        }
        open.ended_at = self.last_at;
    }

    fn user(&mut self, id: String, rec: Value) -> Option<ImportedTurn> {
        if let Some(open) = self.open.as_mut() {
            if open.order.first() == Some(&id) {
                open.records.insert(id, (rec, self.line));
                return None;
            }
        }
        if self.closed.contains(&id) {
            self.skip("a change to a turn already over");
            return None;
        }
        let done = self.close();
        let mut open = Open {
            follows: self.follows.clone(),
            ended_at: self.last_at,
            ..Open::default()
        };
        open.order.push(id.clone());
        open.records.insert(id.clone(), (rec, self.line));
        self.line_ids.push(id);
        self.open = Some(open);
        done
    }

    /// `$rewindTo`: the open turn is handed on as it is, and what comes
    /// next follows the message before `target` (the tool's own reading:
    /// an unknown target takes back everything).
    fn rewind(&mut self, target: String) -> Option<ImportedTurn> {
        let done = self.close();
        match self.line_ids.iter().position(|i| *i == target) {
            Some(at) => {
                self.line_ids.truncate(at);
                self.follows = self.line_ids.last().cloned();
            }
            None => {
                self.line_ids.clear();
                self.follows = None;
            }
        }
        done
    }

    fn close(&mut self) -> Option<ImportedTurn> {
        let open = self.open.take()?;
        let mut turn = self.build(open);
        turn.complete = true;
        self.follows = turn.last_conversational();
        Some(turn)
    }

    fn build(&mut self, mut open: Open) -> ImportedTurn {
        let mut nodes: Vec<ImportedNode> = std::mem::take(&mut self.notes)
            .into_iter()
            .map(|(rec, line)| note(rec, line))
            .collect();
        for id in &open.order {
            self.closed.insert(id.clone());
            let Some((rec, line)) = open.records.remove(id) else {
                continue;
            };
            match rec["type"].as_str() {
                Some("user") => nodes.push(message(Role::User, rec, line)),
                Some("gemini") => reply(rec, line, &mut nodes),
                _ => nodes.push(note(rec, line)),
            }
        }
        for (id, rec) in std::mem::take(&mut open.responses) {
            self.closed.insert(id);
            attach_response(rec, &mut nodes);
        }
        ImportedTurn {
            follows: open.follows,
            nodes,
            ended_at: open.ended_at,
            complete: false,
        }
    }
}

/// A content of `functionResponse` parts only: tool results.
fn is_tool_response(content: Option<&Value>) -> bool {
    content.and_then(Value::as_array).is_some_and(|parts| {
        !parts.is_empty() && parts.iter().all(|p| p.get("functionResponse").is_some())
    })
}

/// A record of tool results goes to the tool nodes of its calls (by the
/// call's id): their output when the call holds none, and the record kept
/// as it was. One matching no call is kept on the turn's last node.
fn attach_response(rec: Value, nodes: &mut [ImportedNode]) {
    let calls: Vec<String> = rec["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p.pointer("/functionResponse/id").and_then(Value::as_str))
        .map(str::to_string)
        .collect();
    let tool = nodes.iter_mut().rev().find(|n| {
        n.role == Role::Tool
            && n.source
                .get("id")
                .and_then(Value::as_str)
                .is_some_and(|id| calls.iter().any(|c| c == id))
    });
    if let Some(tool) = tool {
        if tool.output.is_none() {
            let response = rec["content"]
                .as_array()
                .and_then(|p| p.first())
                .and_then(|p| p.pointer("/functionResponse/response"))
                .cloned();
            tool.output = response;
        }
        tool.source.insert("response_record".into(), rec);
        return;
    }
    if let Some(last) = nodes.last_mut() {
        match last
            .source
            .entry("records")
            .or_insert_with(|| Value::Array(Vec::new()))
        {
            Value::Array(a) => a.push(rec),
            other => *other = Value::Array(vec![rec]),
        }
    }
}

/// A message as a node: its text as content, the rest of the record kept.
fn message(role: Role, rec: Value, line: u64) -> ImportedNode {
    let Value::Object(mut source) = rec else {
        return ImportedNode::new(format!("l{line}"), role, Value::String(String::new()), 0.0);
    };
    let id = source
        .remove("id")
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| format!("l{line}"));
    // A note made here (a compaction) carries the time of the record
    // before it.
    let made_at = source.remove("at").and_then(|v| v.as_f64());
    let at = source
        .get("timestamp")
        .and_then(Value::as_str)
        .and_then(parse_time)
        .or(made_at)
        .unwrap_or(0.0);
    let content = source.remove("content").unwrap_or(Value::Null);
    let text = text_of(&content);
    if !content.is_string() && !content.is_null() {
        source.insert("content".into(), content);
    }
    source.insert("line".into(), line.into());
    let mut node = ImportedNode::new(id, role, Value::String(text), at);
    node.source = source;
    node
}

fn note(rec: Value, line: u64) -> ImportedNode {
    let kind = rec["type"].as_str().unwrap_or("note").to_string();
    let mut node = message(Role::System, rec, line);
    node.source.insert("kind".into(), Value::String(kind));
    node
}

/// A reply: the assistant node (model, tokens, thoughts), then a tool node
/// per call with its result.
fn reply(rec: Value, line: u64, nodes: &mut Vec<ImportedNode>) {
    let mut node = message(Role::Assistant, rec, line);
    if let Some(m) = node.source.remove("model").filter(Value::is_string) {
        node.metadata.insert("model".into(), m);
    }
    if let Some(t) = node.source.remove("tokens").filter(|t| !t.is_null()) {
        node.metadata.insert("usage".into(), t);
    }
    let calls = match node.source.remove("toolCalls") {
        Some(Value::Array(calls)) => calls,
        _ => Vec::new(),
    };
    let (caller, at) = (node.id.clone(), node.at);
    nodes.push(node);
    for (n, call) in calls.into_iter().enumerate() {
        let Value::Object(mut source) = call else {
            continue;
        };
        let name = source
            .remove("name")
            .and_then(|v| v.as_str().map(str::to_string))
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| "tool".into());
        let args = source.remove("args").unwrap_or(Value::Null);
        // A call that ran a sub-agent names the sub-agent's session.
        if let Some(agent) = source.get("agentId").and_then(Value::as_str) {
            let sub = Value::String(session_id(agent));
            source.insert("subagent_session".into(), sub);
        }
        let output = source.remove("result").filter(|r| !r.is_null());
        let when = source
            .get("timestamp")
            .and_then(Value::as_str)
            .and_then(parse_time)
            .unwrap_or(at);
        let mut tool = ImportedNode::new(format!("{caller}.{n}"), Role::Tool, args, when);
        tool.caller = Some(caller.clone());
        tool.name = Some(name);
        tool.output = output;
        tool.source = source;
        nodes.push(tool);
    }
}

impl LineReader for Parser {
    fn push(&mut self, line: &[u8], last: bool) -> Option<ImportedTurn> {
        self.line += 1;
        match decode(line, last) {
            Ok(Some(rec)) => self.record(rec),
            Ok(None) => None,
            Err(reason) => {
                self.skip(reason);
                None
            }
        }
    }

    fn finish(&mut self) -> Option<ImportedTurn> {
        let open = self.open.take()?;
        Some(self.build(open))
    }
}

/// Read an older whole-file recording: its `messages`, in order.
pub fn read_legacy(
    parser: &mut Parser,
    path: &Path,
    mut each: impl FnMut(ImportedTurn) -> bool,
) -> std::io::Result<Option<ImportedTurn>> {
    let file = std::io::BufReader::new(std::fs::File::open(path)?);
    let whole: Value = match serde_json::from_reader(file) {
        Ok(v) => v,
        Err(_) => {
            parser.skip("not a Gemini CLI recording");
            return Ok(None);
        }
    };
    let Some(messages) = whole.get("messages").and_then(Value::as_array) else {
        parser.skip("not a Gemini CLI recording");
        return Ok(None);
    };
    for m in messages {
        parser.line += 1;
        if let Some(done) = parser.record(m.clone()) {
            if !each(done) {
                return Ok(None);
            }
        }
    }
    Ok(parser.finish())
}

#[cfg(test)]
#[path = "gemini_tests.rs"]
mod tests;
