//! opencode's sessions: its SQLite database
//! (`~/.local/share/opencode/opencode.db`, or under `$XDG_DATA_HOME`) with
//! the tables `session`, `message` and `part` (a message's and a part's
//! fields in a JSON `data` column), and the older JSON tree
//! (`storage/session/<project>/<id>.json`, `storage/message/<session>/
//! <id>.json`, `storage/part/<message>/<id>.json`) holding the same
//! records one per file.
//!
//! The database is opened read-only (its `-wal` is read too, so what
//! opencode wrote a moment ago is seen) and holds every session: the reader
//! hands on each as `Read::Begin` and then its turns, a session's messages
//! and parts read together (one session in memory at a time). A turn is a
//! user message and the assistant messages after it; an assistant
//! message's parts become its node (text, reasoning, token counts) and a
//! tool node per tool part (input, output or error, called by it).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::model::{Header, ImportedNode, ImportedTurn, Read, Skipped};
use super::opencode_v2;
use crate::ids;
use crate::node::Role;

pub const DATABASE: &str = "opencode.db";

pub fn session_id(source_id: &str) -> String {
    format!("opencode-{source_id}")
}

/// The database, or a session file of the older JSON tree.
pub fn is_store(path: &Path) -> bool {
    if path.file_name().is_some_and(|n| n == DATABASE) {
        return true;
    }
    path.extension().is_some_and(|e| e == "json") && storage_of(path, "session").is_some()
}

fn is_database(path: &Path) -> bool {
    path.file_name().is_some_and(|n| n == DATABASE)
}

/// The `storage` folder of a file under `storage/<kind>/…/`.
fn storage_of(path: &Path, kind: &str) -> Option<PathBuf> {
    let dir = path.parent()?.parent()?;
    (dir.file_name()? == kind && dir.parent()?.file_name()? == "storage")
        .then(|| dir.parent().map(Path::to_path_buf))
        .flatten()
}

/// The file's header: for the database, its own id (each session comes
/// with its own `Read::Begin`); for a session file, that session's.
pub fn header(path: &Path) -> std::io::Result<Header> {
    if is_database(path) {
        return Ok(Header {
            session_id: "opencode".into(),
            source_id: "opencode".into(),
            ..Header::default()
        });
    }
    let info: Value = serde_json::from_slice(&std::fs::read(path)?).unwrap_or(Value::Null);
    Ok(session_header(&info, &info))
}

/// A session's header from its record (`time` holds `created` and
/// `archived` in the JSON tree; the database's columns are given as the
/// same shape).
fn session_header(info: &Value, time: &Value) -> Header {
    let s = |k: &str| info.get(k).and_then(Value::as_str).map(str::to_string);
    let source_id = s("id").unwrap_or_default();
    let millis = |v: &Value| v.as_f64().map(|t| t / 1000.0);
    Header {
        session_id: session_id(&source_id),
        source_id,
        title: s("title")
            .map(|t| t.trim().to_string())
            .filter(|t| !t.is_empty()),
        user_titled: false,
        cwd: s("directory").map(PathBuf::from),
        created_at: time.get("created").and_then(millis),
        parent_session: s("parentID").map(|p| session_id(&p)),
        archived: time.get("archived").is_some_and(|a| !a.is_null()),
        ..Header::default()
    }
}

/// The database's record kinds with their counts: `message/<role>` and
/// `part/<type>` (read-only).
pub fn record_kinds(path: &Path) -> Result<Vec<(String, u64)>, rusqlite::Error> {
    use rusqlite::OpenFlags;
    let db = rusqlite::Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    db.busy_timeout(std::time::Duration::from_secs(5))?;
    let mut out = Vec::new();
    let has_v2: bool = db.query_row(
        "SELECT count(*) > 0 FROM sqlite_master WHERE type = 'table' AND name = 'session_message'",
        [],
        |r| r.get(0),
    )?;
    if has_v2 {
        let mut stmt = db.prepare("SELECT type, count(*) FROM session_message GROUP BY 1")?;
        let rows = stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))?;
        for row in rows {
            let (kind, n) = row?;
            out.push((format!("session_message/{kind}"), n.max(0) as u64));
        }
    }
    for (table, key) in [("message", "$.role"), ("part", "$.type")] {
        let sql = format!(
            "SELECT coalesce(json_extract(data, '{key}'), '(none)'), count(*) \
             FROM {table} GROUP BY 1"
        );
        let mut stmt = db.prepare(&sql)?;
        let rows = stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))?;
        for row in rows {
            let (kind, n) = row?;
            out.push((format!("{table}/{kind}"), n.max(0) as u64));
        }
    }
    Ok(out)
}

/// Read every session of the database at `path` (read-only).
pub fn read_database(
    path: &Path,
    skipped: &mut Skipped,
    mut each: impl FnMut(Read) -> bool,
) -> Result<(), rusqlite::Error> {
    use rusqlite::OpenFlags;
    let db = rusqlite::Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    db.busy_timeout(std::time::Duration::from_secs(5))?;
    let mut sessions = db.prepare(
        "SELECT id, parent_id, directory, title, time_created, time_archived \
         FROM session ORDER BY time_created, id",
    )?;
    let mut messages = db.prepare(
        "SELECT id, time_created, data FROM message WHERE session_id = ?1 \
         ORDER BY time_created, id",
    )?;
    let mut parts =
        db.prepare("SELECT message_id, id, data FROM part WHERE session_id = ?1 ORDER BY id")?;
    let has_v2: bool = db.query_row(
        "SELECT count(*) > 0 FROM sqlite_master WHERE type = 'table' AND name = 'session_message'",
        [],
        |r| r.get(0),
    )?;
    let mut rows_v2 = if has_v2 {
        Some(db.prepare(
            "SELECT id, type, data FROM session_message WHERE session_id = ?1 ORDER BY seq",
        )?)
    } else {
        None
    };
    let rows = sessions.query_map([], |r| {
        let info = serde_json::json!({
            "id": r.get::<_, String>(0)?,
            "parentID": r.get::<_, Option<String>>(1)?,
            "directory": r.get::<_, Option<String>>(2)?,
            "title": r.get::<_, Option<String>>(3)?,
        });
        let time = serde_json::json!({
            "created": r.get::<_, Option<i64>>(4)?,
            "archived": r.get::<_, Option<i64>>(5)?,
        });
        Ok((info, time))
    })?;
    let file = path.display().to_string();
    for row in rows {
        let (info, time) = row?;
        let header = session_header(&info, &time);
        if ids::validate("session id", &header.session_id).is_err() {
            skipped.add(&file, 0, "a session id that cannot be ours");
            continue;
        }
        let sid = header.source_id.clone();
        if !each(Read::Begin(header)) {
            return Ok(());
        }
        let mut by_message: HashMap<String, Vec<Value>> = HashMap::new();
        for p in parts.query_map([&sid], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
            ))
        })? {
            let (mid, pid, data) = p?;
            match serde_json::from_str::<Value>(&data) {
                Ok(Value::Object(mut m)) => {
                    m.insert("id".into(), Value::String(pid));
                    by_message.entry(mid).or_default().push(Value::Object(m));
                }
                _ => skipped.add(&file, 0, "a part that is not a JSON object"),
            }
        }
        let mut session = Session::new(&file);
        for m in messages.query_map([&sid], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, Option<i64>>(1)?,
                r.get::<_, String>(2)?,
            ))
        })? {
            let (mid, created, data) = m?;
            let Ok(Value::Object(mut info)) = serde_json::from_str::<Value>(&data) else {
                skipped.add(&file, 0, "a message that is not a JSON object");
                continue;
            };
            info.insert("id".into(), Value::String(mid.clone()));
            let has_time = info.get("time").and_then(|t| t.get("created")).is_some();
            if let (false, Some(c)) = (has_time, created) {
                let time = info
                    .entry("time")
                    .or_insert_with(|| Value::Object(Map::new()));
                if let Value::Object(t) = time {
                    t.insert("created".into(), c.into());
                }
            }
            let parts = by_message.remove(&mid).unwrap_or_default();
            if let Some(turn) = session.message(Value::Object(info), parts) {
                if !each(Read::Turn(turn)) {
                    return Ok(());
                }
            }
        }
        // The newer layout's rows (a session is written in one layout).
        if let Some(rows) = rows_v2.as_mut() {
            for r in rows.query_map([&sid], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                ))
            })? {
                let (mid, kind, data) = r?;
                let Ok(data) = serde_json::from_str::<Value>(&data) else {
                    skipped.add(&file, 0, "a session_message row that is not JSON");
                    continue;
                };
                let (info, parts) = opencode_v2::as_message(&mid, &kind, data);
                if let Some(turn) = session.message(info, parts) {
                    if !each(Read::Turn(turn)) {
                        return Ok(());
                    }
                }
            }
        }
        skipped.merge(std::mem::take(&mut session.skipped));
        if let Some(last) = session.finish() {
            if !each(Read::Turn(last)) {
                return Ok(());
            }
        }
    }
    Ok(())
}

/// Read one session of the older JSON tree: its messages and their parts.
pub fn read_tree(
    path: &Path,
    skipped: &mut Skipped,
    mut each: impl FnMut(Read) -> bool,
) -> std::io::Result<Option<ImportedTurn>> {
    let storage = storage_of(path, "session").unwrap_or_default();
    let info: Value = serde_json::from_slice(&std::fs::read(path)?).unwrap_or(Value::Null);
    let Some(sid) = info.get("id").and_then(Value::as_str) else {
        skipped.add(&path.display().to_string(), 0, "not an opencode session");
        return Ok(None);
    };
    let mut messages = read_dir_json(&storage.join("message").join(sid), skipped);
    messages.sort_by(|a, b| {
        let t = |v: &Value| {
            v.pointer("/time/created")
                .and_then(Value::as_f64)
                .unwrap_or(0.0)
        };
        t(a).total_cmp(&t(b))
            .then_with(|| a["id"].as_str().cmp(&b["id"].as_str()))
    });
    let mut session = Session::new(&path.display().to_string());
    for m in messages {
        let Some(mid) = m.get("id").and_then(Value::as_str).map(str::to_string) else {
            continue;
        };
        let mut parts = read_dir_json(&storage.join("part").join(&mid), skipped);
        parts.sort_by(|a, b| a["id"].as_str().cmp(&b["id"].as_str()));
        if let Some(turn) = session.message(m, parts) {
            if !each(Read::Turn(turn)) {
                return Ok(None);
            }
        }
    }
    skipped.merge(std::mem::take(&mut session.skipped));
    Ok(session.finish())
}

/// The JSON objects of a folder's `.json` files (none when it is missing).
fn read_dir_json(dir: &Path, skipped: &mut Skipped) -> Vec<Value> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in entries.flatten() {
        let p = e.path();
        if p.extension().is_none_or(|x| x != "json") {
            continue;
        }
        match std::fs::read(&p).map(|b| serde_json::from_slice::<Value>(&b)) {
            Ok(Ok(v @ Value::Object(_))) => out.push(v),
            _ => skipped.add(&p.display().to_string(), 0, "not a JSON object"),
        }
    }
    out
}

/// One session's messages becoming turns.
struct Session {
    file: String,
    open: Option<ImportedTurn>,
    /// The open turn's last assistant message finished.
    done: bool,
    follows: Option<String>,
    skipped: Skipped,
}

impl Session {
    fn new(file: &str) -> Session {
        Session {
            file: file.to_string(),
            open: None,
            done: false,
            follows: None,
            skipped: Skipped::default(),
        }
    }

    /// One message with its parts; the turn it closes.
    fn message(&mut self, info: Value, parts: Vec<Value>) -> Option<ImportedTurn> {
        let id = info["id"].as_str().unwrap_or_default().to_string();
        if ids::validate("node id", &id).is_err() {
            self.skipped
                .add(&self.file, 0, "a message id that cannot be a node id");
            return None;
        }
        let at = info
            .pointer("/time/created")
            .and_then(Value::as_f64)
            .map_or(0.0, |t| t / 1000.0);
        match info["role"].as_str() {
            Some("user") => {
                let closed = self.close();
                let mut nodes = Vec::new();
                let mut user = node(&id, Role::User, at);
                let (text, rest) = split_parts(parts);
                user.content = Value::String(text);
                if !rest.is_empty() {
                    user.source.insert("parts".into(), Value::Array(rest));
                }
                keep_info(&mut user, info);
                nodes.push(user);
                self.open = Some(ImportedTurn {
                    follows: self.follows.clone(),
                    nodes,
                    ended_at: at,
                    complete: false,
                });
                self.done = false;
                closed
            }
            Some("assistant") => {
                let Some(turn) = self.open.as_mut() else {
                    self.skipped.add(&self.file, 0, "a reply before any prompt");
                    return None;
                };
                let finished = info.pointer("/time/completed").and_then(Value::as_f64);
                // A step that ended in tool calls goes on in the next
                // message (created just after): the turn is not over.
                let more = info.get("finish").and_then(Value::as_str) == Some("tool-calls");
                let mut reply = node(&id, Role::Assistant, at);
                if let Some(m) = info.get("modelID").filter(|m| m.is_string()) {
                    reply.metadata.insert("model".into(), m.clone());
                }
                if let Some(t) = info.get("tokens").filter(|t| t.is_object()) {
                    reply.metadata.insert("usage".into(), t.clone());
                }
                let mut texts = Vec::new();
                let mut tools = Vec::new();
                let mut pending = false;
                for part in parts {
                    match part["type"].as_str() {
                        Some("text") if part["synthetic"] != true => {
                            texts.push(part["text"].as_str().unwrap_or("").to_string())
                        }
                        Some("reasoning") => {
                            push_to(&mut reply.source, "reasoning", part["text"].clone())
                        }
                        Some("tool") => {
                            let status = part.pointer("/state/status").and_then(Value::as_str);
                            pending |= matches!(status, Some("pending" | "running"));
                            tools.push(tool_node(&id, part, at));
                        }
                        Some("compaction") => {
                            let mut n = node(part["id"].as_str().unwrap_or(&id), Role::System, at);
                            n.content = Value::String("The conversation was compacted.".into());
                            n.source
                                .insert("kind".into(), Value::String("compaction".into()));
                            n.source.insert("part".into(), part);
                            tools.push(n);
                        }
                        _ => push_to(&mut reply.source, "parts", part),
                    }
                }
                reply.content = Value::String(texts.join("\n\n"));
                keep_info(&mut reply, info);
                turn.nodes.push(reply);
                turn.nodes.extend(tools);
                turn.ended_at = finished.map_or(at, |t| t / 1000.0).max(turn.ended_at);
                self.done = finished.is_some() && !pending && !more;
                None
            }
            // A note of the newer layout (`opencode_v2`): in the turn it
            // comes in.
            Some("system") => {
                let Some(turn) = self.open.as_mut() else {
                    self.skipped.add(&self.file, 0, "a note before any prompt");
                    return None;
                };
                let mut n = node(&id, Role::System, at);
                n.content = info.get("text").cloned().unwrap_or(Value::Null);
                let kind = info.get("kind").cloned().unwrap_or(Value::Null);
                n.source.insert("kind".into(), kind);
                keep_info(&mut n, info);
                turn.nodes.push(n);
                turn.ended_at = turn.ended_at.max(at);
                None
            }
            _ => {
                self.skipped
                    .add(&self.file, 0, "a message of an unknown role");
                None
            }
        }
    }

    fn close(&mut self) -> Option<ImportedTurn> {
        let mut turn = self.open.take()?;
        turn.complete = true;
        self.follows = turn.last_conversational();
        Some(turn)
    }

    /// The last turn: over when its last reply finished.
    fn finish(&mut self) -> Option<ImportedTurn> {
        let mut turn = self.open.take()?;
        turn.complete = self.done;
        Some(turn)
    }
}

fn node(id: &str, role: Role, at: f64) -> ImportedNode {
    ImportedNode::new(id, role, Value::String(String::new()), at)
}

/// A user message's text (its parts that are not synthetic), and the
/// other parts (files, synthetic text) kept.
fn split_parts(parts: Vec<Value>) -> (String, Vec<Value>) {
    let mut texts = Vec::new();
    let mut rest = Vec::new();
    for p in parts {
        if p["type"] == "text" && p["synthetic"] != true {
            texts.push(p["text"].as_str().unwrap_or("").to_string());
        } else {
            rest.push(p);
        }
    }
    (texts.join("\n\n"), rest)
}

/// What the message record holds beside what the node took.
fn keep_info(n: &mut ImportedNode, mut info: Value) {
    if let Value::Object(m) = &mut info {
        for k in ["id", "sessionID", "role"] {
            m.remove(k);
        }
    }
    n.source.insert("message".into(), info);
}

/// A tool part: its input as content, its output (or error) as output.
fn tool_node(caller: &str, part: Value, at: f64) -> ImportedNode {
    let pid = part["id"].as_str().unwrap_or_default().to_string();
    let mut n = node(&pid, Role::Tool, at);
    if ids::validate("node id", &pid).is_err() {
        n.id = format!("{caller}.{}", part["callID"].as_str().unwrap_or("tool"));
    }
    n.caller = Some(caller.to_string());
    n.name = Some(
        part["tool"]
            .as_str()
            .filter(|s| !s.is_empty())
            .unwrap_or("tool")
            .to_string(),
    );
    let state = &part["state"];
    n.content = state.get("input").cloned().unwrap_or(Value::Null);
    n.output = state
        .get("output")
        .or_else(|| state.get("error"))
        .filter(|o| !o.is_null())
        .cloned();
    if let Some(t) = state.pointer("/time/start").and_then(Value::as_f64) {
        n.at = t / 1000.0;
    }
    if let Some(child) = state.pointer("/metadata/sessionId").and_then(Value::as_str) {
        n.source
            .insert("subagent_session".into(), Value::String(session_id(child)));
    }
    // The rest of the part, without what content and output hold.
    let mut kept = part;
    if let Some(state) = kept.get_mut("state").and_then(Value::as_object_mut) {
        state.remove("input");
        state.remove("output");
    }
    n.source.insert("part".into(), kept);
    n
}

fn push_to(meta: &mut Map<String, Value>, key: &str, v: Value) {
    match meta.entry(key).or_insert_with(|| Value::Array(Vec::new())) {
        Value::Array(a) => a.push(v),
        other => *other = Value::Array(vec![v]),
    }
}

#[cfg(test)]
#[path = "opencode_tests.rs"]
mod tests;
