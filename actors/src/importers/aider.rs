//! Aider's chat history: `<repo>/.aider.chat.history.md`, one Markdown
//! file per repository holding every session run there, each opened by a
//! line `# aider chat started at YYYY-MM-DD HH:MM:SS`. In a session,
//! `#### ` lines are what the user typed (one line each, a message of
//! several lines joined by `  \n#### `), `> ` lines are Aider's own output
//! (files added, edits applied, commits, token counts; only the first line
//! of such a message carries the mark), and everything else is the model's
//! reply — including `> ` lines inside a fenced block, which are the reply's.
//!
//! Each session of the file becomes a session here, its id made from the
//! file's path and the session's start (`aider-<path hash>-<start>`), so a
//! re-import finds it again; a node's id is the line it starts on, stable
//! because Aider only appends. Aider writes no time per message and its
//! start times have no zone: every turn of a session takes the session's
//! start, read as UTC.

use std::path::Path;

use serde_json::{Map, Value};

use super::model::{Header, ImportedNode, ImportedTurn, Read as Event, Skipped};
use crate::node::Role;

pub const FILE_NAME: &str = ".aider.chat.history.md";

const STARTED: &str = "# aider chat started at ";

pub fn is_history(path: &Path) -> bool {
    path.file_name().is_some_and(|n| n == FILE_NAME)
}

/// A short, stable name of the history file (FNV-1a of its path).
fn path_hash(path: &Path) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in path.as_os_str().as_encoded_bytes() {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{:012x}", h & 0xffff_ffff_ffff)
}

/// The file's own id (its checkpoint), and the header every session of it
/// starts from: the working directory is the repository holding it.
pub fn header(path: &Path) -> Header {
    let source_id = path_hash(path);
    Header {
        session_id: format!("aider-{source_id}"),
        source_id,
        cwd: path.parent().map(Path::to_path_buf),
        ..Header::default()
    }
}

/// `2024-05-01 10:00:00` as seconds since the epoch, read as UTC.
fn parse_start(s: &str) -> Option<f64> {
    let s = s.trim();
    let (date, clock) = (s.get(..10)?, s.get(11..)?);
    if s.len() != 19 || s.get(10..11) != Some(" ") {
        return None;
    }
    super::model::parse_time(&format!("{date}T{clock}Z"))
}

#[derive(Clone, Copy, PartialEq)]
enum Block {
    None,
    User,
    Reply,
    Output,
}

pub struct Parser {
    file: String,
    base: Header,
    line: u64,
    pub skipped: Skipped,
    /// The session being read: its start.
    started: Option<f64>,
    /// Sessions begun so far with the same start (a second one in the
    /// same second gets a suffix).
    starts: std::collections::HashMap<String, u32>,
    open: Option<ImportedTurn>,
    /// Output lines before the first prompt of a session.
    notes: Vec<ImportedNode>,
    block: Block,
    /// Inside a fenced block of the reply.
    fenced: bool,
    /// Aider's message of several lines goes on (only its first line is
    /// marked `> `; its last ends with two spaces).
    continued: bool,
    follows: Option<String>,
    /// Events waiting to be handed on (a session start closes a turn).
    ready: Vec<Event>,
}

impl Parser {
    pub fn new(file: &Path) -> Parser {
        Parser {
            file: file.display().to_string(),
            base: header(file),
            line: 0,
            skipped: Skipped::default(),
            started: None,
            starts: Default::default(),
            open: None,
            notes: Vec::new(),
            block: Block::None,
            fenced: false,
            continued: false,
            follows: None,
            ready: Vec::new(),
        }
    }

    fn at(&self) -> f64 {
        self.started.unwrap_or(0.0)
    }

    fn node(&self, role: Role, text: &str) -> ImportedNode {
        let content = Value::String(text.to_string());
        let mut node = ImportedNode::new(format!("l{}", self.line), role, content, self.at());
        node.source.insert("line".into(), self.line.into());
        node
    }

    fn close(&mut self) {
        if let Some(mut turn) = self.open.take() {
            trim_turn(&mut turn);
            turn.complete = true;
            self.follows = turn.last_conversational();
            self.ready.push(Event::Turn(turn));
        }
    }

    fn begin(&mut self, when: &str) {
        self.close();
        self.notes.clear();
        self.follows = None;
        self.block = Block::None;
        self.fenced = false;
        let Some(at) = parse_start(when) else {
            self.started = None;
            self.skip("a session start without a time");
            return;
        };
        self.started = Some(at);
        let stamp: String = when.chars().filter(char::is_ascii_digit).collect();
        let n = self.starts.entry(stamp.clone()).or_default();
        *n += 1;
        let suffix = if *n > 1 {
            format!("-{n}")
        } else {
            String::new()
        };
        let source_id = format!("{}-{stamp}{suffix}", self.base.source_id);
        let cwd = self.base.cwd.clone();
        self.ready.push(Event::Begin(Header {
            session_id: format!("aider-{source_id}"),
            source_id,
            title: None,
            user_titled: false,
            cwd,
            created_at: Some(at),
            parent_session: None,
            archived: false,
            ..Header::default()
        }));
    }

    fn skip(&mut self, reason: &str) {
        self.skipped.add(&self.file, self.line, reason);
    }

    fn prompt(&mut self, text: &str) {
        if self.block == Block::User {
            // A message of several lines.
            if let Some(user) = self.open.as_mut().and_then(|t| t.nodes.last_mut()) {
                append_line(&mut user.content, text.trim_end());
                return;
            }
        }
        self.close();
        let mut nodes = std::mem::take(&mut self.notes);
        nodes.push(self.node(Role::User, text.trim_end()));
        self.open = Some(ImportedTurn {
            follows: self.follows.clone(),
            nodes,
            ended_at: self.at(),
            complete: false,
        });
        self.block = Block::User;
        self.fenced = false;
    }

    fn output(&mut self, text: &str) {
        let text = text.trim_end();
        if self.block == Block::Output {
            // The next line of the same run of output.
            let last = match self.open.as_mut() {
                Some(t) => t.nodes.last_mut(),
                None => self.notes.last_mut(),
            };
            if let Some(n) = last {
                match n.output.as_mut() {
                    Some(Value::String(o)) => {
                        o.push('\n');
                        o.push_str(text);
                    }
                    _ => append_line(&mut n.content, text),
                }
                return;
            }
        }
        let reply = self.open.as_ref().and_then(|t| {
            t.nodes
                .iter()
                .rev()
                .find(|n| n.role == Role::Assistant)
                .map(|n| n.id.clone())
        });
        let mut node = match reply {
            Some(caller) => {
                let mut n = self.node(Role::Tool, "");
                n.content = Value::Object(Map::new());
                n.output = Some(Value::String(text.to_string()));
                n.name = Some("aider".into());
                n.caller = Some(caller);
                n
            }
            None => self.node(Role::System, text),
        };
        node.source
            .insert("kind".into(), Value::String("aider_output".into()));
        match self.open.as_mut() {
            Some(t) => t.nodes.push(node),
            None => self.notes.push(node),
        }
        self.block = Block::Output;
    }

    fn reply(&mut self, text: &str) {
        let blank = text.trim().is_empty();
        if self.block == Block::Output && blank {
            // An output message ends at a blank line.
            self.block = Block::None;
            return;
        }
        if text.trim_start().starts_with("```") {
            self.fenced = !self.fenced;
        }
        if !matches!(self.block, Block::Reply | Block::Output) {
            if blank {
                return;
            }
            if self.open.is_none() {
                self.skip("a reply before any prompt");
                return;
            }
            let node = self.node(Role::Assistant, "");
            if let Some(t) = self.open.as_mut() {
                t.nodes.push(node);
            }
            self.block = Block::Reply;
        }
        if let Some(last) = self.open.as_mut().and_then(|t| t.nodes.last_mut()) {
            match last.role {
                Role::Tool | Role::System => match last.output.as_mut() {
                    Some(Value::String(o)) => {
                        o.push('\n');
                        o.push_str(text);
                    }
                    _ => append_line(&mut last.content, text),
                },
                _ => append_line(&mut last.content, text),
            }
        }
    }
}

/// Append `line` to a text content (keeping the reply's own line breaks).
fn append_line(content: &mut Value, line: &str) {
    if let Value::String(s) = content {
        if !s.is_empty() {
            s.push('\n');
        }
        s.push_str(line);
    }
}

/// The blank lines Aider writes around each message are not the message's.
fn trim_turn(turn: &mut ImportedTurn) {
    for n in &mut turn.nodes {
        if let Value::String(s) = &mut n.content {
            let t = s.trim().to_string();
            *s = t;
        }
        if let Some(Value::String(o)) = &mut n.output {
            let t = o.trim().to_string();
            *o = t;
        }
    }
}

impl Parser {
    /// One line; the events it completes.
    pub fn push_line(&mut self, line: &[u8]) -> Vec<Event> {
        self.line += 1;
        let Ok(text) = std::str::from_utf8(line) else {
            self.skip("not UTF-8");
            return Vec::new();
        };
        let text = text.strip_suffix('\r').unwrap_or(text);
        if text.trim().is_empty() || text.starts_with("####") || text.starts_with(STARTED) {
            self.continued = false;
        }
        if let Some(when) = text.strip_prefix(STARTED) {
            self.begin(when);
        } else if self.started.is_none() {
            if !text.trim().is_empty() {
                self.skip("a line outside any session");
            }
        } else if self.fenced {
            self.reply(text);
        } else if let Some(t) = text
            .strip_prefix("#### ")
            .or(text.strip_prefix("####").filter(|r| r.is_empty()))
        {
            self.prompt(t);
        } else if let Some(t) = text.strip_prefix("> ").or((text == ">").then_some("")) {
            // Aider ends each message of its own with two spaces (a line
            // break in Markdown); a `> ` line of the model's reply without
            // them is a quote of the reply.
            let ends = text.ends_with("  ");
            if self.block == Block::Reply && !ends {
                self.continued = false;
                self.reply(text);
            } else {
                self.output(t);
                self.continued = !ends;
            }
        } else if self.continued && !text.trim().is_empty() {
            // Aider marks only the first line of a message of several.
            self.output(text);
            self.continued = !text.ends_with("  ");
        } else if self.block == Block::User && text.trim().is_empty() {
            self.block = Block::None;
        } else {
            self.reply(text);
        }
        std::mem::take(&mut self.ready)
    }

    /// Read every line, handing each event to `each` (false stops); the
    /// session's last turn is returned, finished or not.
    pub fn read_events(
        &mut self,
        reader: impl std::io::BufRead,
        mut each: impl FnMut(Event) -> bool,
    ) -> std::io::Result<Option<ImportedTurn>> {
        for line in reader.split(b'\n') {
            for e in self.push_line(&line?) {
                if !each(e) {
                    return Ok(None);
                }
            }
        }
        Ok(self.finish())
    }

    /// The turn still open at the end of the file, finished or not.
    pub fn finish(&mut self) -> Option<ImportedTurn> {
        let mut turn = self.open.take()?;
        trim_turn(&mut turn);
        Some(turn)
    }
}

#[cfg(test)]
#[path = "aider_tests.rs"]
mod tests;
