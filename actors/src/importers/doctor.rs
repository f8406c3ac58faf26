//! `openprogram import doctor`: what the tools' files hold as the readers
//! see them, read only. Per tool: the versions that wrote them, every
//! record type with its count, the types no reader knows (their count and
//! first place: a format that moved on), and the files the tool has since
//! deleted whose conversations are kept here (from the checkpoint).

use std::collections::BTreeMap;
use std::io::BufRead;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

use super::checkpoint::Checkpoint;
use super::discover::{default_roots, discover};
use super::model::{Problem, Tool};
use super::{codex, opencode};

/// One tool's files, as the doctor found them.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ToolReport {
    pub tool: String,
    /// The folders looked in.
    pub roots: Vec<PathBuf>,
    pub files: u64,
    /// The versions that wrote the files (as they record it), by files.
    pub versions: BTreeMap<String, u64>,
    /// Every record type seen, with its count.
    pub types: BTreeMap<String, u64>,
    /// The types no reader knows: kept verbatim, never read.
    pub unknown: Vec<Unknown>,
    /// Files imported before that the tool has since deleted: their
    /// conversations are kept here.
    pub deleted: Vec<Kept>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Unknown {
    pub kind: String,
    pub count: u64,
    pub first: Problem,
}

#[derive(Debug, Clone, Serialize)]
pub struct Kept {
    pub file: PathBuf,
    pub session: String,
}

/// The record types each reader knows (`type`, or `type/subtype`).
fn known(tool: Tool, kind: &str) -> bool {
    let (top, sub) = kind.split_once('/').unwrap_or((kind, ""));
    match tool {
        Tool::ClaudeCode => matches!(
            top,
            "user"
                | "assistant"
                | "system"
                | "summary"
                | "custom-title"
                | "ai-title"
                | "agent-name"
                | "file-history-snapshot"
                | "queue-operation"
                | "attachment"
                | "last-prompt"
                | "atis-latch"
                | "api-request-shape"
                | "api-request-blob"
                | "api-request"
                | "tools-used"
                | "cost-state"
                | "mode"
                | "permission-mode"
        ),
        Tool::Codex => match top {
            "session_meta" | "turn_context" | "world_state" | "token_usage_record"
            | "compacted" => true,
            "response_item" => matches!(
                sub,
                "message"
                    | "reasoning"
                    | "function_call"
                    | "function_call_output"
                    | "custom_tool_call"
                    | "custom_tool_call_output"
                    | "local_shell_call"
                    | "web_search_call"
            ),
            "event_msg" => matches!(
                sub,
                "task_started"
                    | "task_complete"
                    | "turn_complete"
                    | "turn_aborted"
                    | "thread_rolled_back"
                    | "thread_name_updated"
                    | "thread_settings_applied"
                    | "token_count"
                    | "user_message"
                    | "agent_message"
                    | "agent_reasoning"
                    | "item_completed"
            ),
            _ => false,
        },
        Tool::GeminiCli => match top {
            "header" | "$rewindTo" | "user" | "gemini" | "info" | "error" | "warning" => true,
            "$set" => matches!(
                sub,
                "messages" | "summary" | "lastUpdated" | "sessionId" | "directories" | "kind"
            ),
            _ => false,
        },
        Tool::Opencode => match top {
            "message" => matches!(sub, "user" | "assistant"),
            "session_message" => matches!(
                sub,
                "user"
                    | "assistant"
                    | "system"
                    | "synthetic"
                    | "shell"
                    | "compaction"
                    | "agent-switched"
                    | "model-switched"
            ),
            "part" => matches!(
                sub,
                "text"
                    | "reasoning"
                    | "tool"
                    | "compaction"
                    | "step-start"
                    | "step-finish"
                    | "patch"
                    | "snapshot"
                    | "file"
                    | "agent"
                    | "subtask"
                    | "retry"
            ),
            _ => false,
        },
        Tool::Aider => true,
    }
}

/// A JSON-lines record's type and the version it names.
fn classify(tool: Tool, rec: &Value) -> (String, Option<String>) {
    let s = |v: &Value| v.as_str().map(str::to_string);
    match tool {
        Tool::ClaudeCode => {
            let kind = s(&rec["type"]).unwrap_or_else(|| "(none)".into());
            (kind, s(&rec["version"]))
        }
        Tool::Codex => {
            let top = s(&rec["type"]).unwrap_or_else(|| "(none)".into());
            let kind = match rec["payload"]["type"].as_str() {
                Some(sub) if top == "response_item" || top == "event_msg" => format!("{top}/{sub}"),
                _ => top,
            };
            (kind, s(&rec["payload"]["cli_version"]))
        }
        Tool::GeminiCli => {
            let kind = if let Some(Value::Object(set)) = rec.get("$set") {
                let keys: Vec<&str> = set.keys().map(String::as_str).collect();
                format!("$set/{}", keys.join(","))
            } else if rec.get("$rewindTo").is_some() {
                "$rewindTo".into()
            } else if let Some(t) = rec["type"].as_str() {
                t.into()
            } else if rec.get("sessionId").is_some() {
                "header".into()
            } else {
                "(none)".into()
            };
            (kind, None)
        }
        Tool::Opencode | Tool::Aider => ("(none)".into(), None),
    }
}

#[derive(Default)]
struct Tally {
    count: u64,
    first: Option<Problem>,
}

/// The report of `tool`, its files under `paths` (none: its own folders).
pub fn report(tool: Tool, paths: &[PathBuf], state_dir: &Path) -> ToolReport {
    let roots = if paths.is_empty() {
        default_roots(tool)
    } else {
        paths.to_vec()
    };
    let files = if tool == Tool::Aider && paths.is_empty() {
        Vec::new()
    } else {
        discover(tool, &roots)
    };
    let mut r = ToolReport {
        tool: tool.as_str().into(),
        roots,
        files: files.len() as u64,
        ..ToolReport::default()
    };
    let mut tallies: BTreeMap<String, Tally> = BTreeMap::new();
    for f in &files {
        let mut version = None;
        let mut seen = |kind: String, line: u64, v: Option<String>| {
            if version.is_none() {
                version = v;
            }
            let t = tallies.entry(kind).or_default();
            t.count += 1;
            t.first.get_or_insert_with(|| Problem {
                file: f.display().to_string(),
                line,
                reason: String::new(),
            });
        };
        match tool {
            Tool::Opencode if f.file_name().is_some_and(|n| n == opencode::DATABASE) => {
                for (kind, n) in opencode::record_kinds(f).unwrap_or_default() {
                    for _ in 0..n {
                        seen(kind.clone(), 0, None);
                    }
                }
            }
            Tool::ClaudeCode | Tool::Codex | Tool::GeminiCli if is_lines(f) => {
                let Ok(reader) = codex::open(f) else { continue };
                for (i, line) in reader.split(b'\n').enumerate() {
                    let Ok(line) = line else { break };
                    if let Ok(rec) = serde_json::from_slice::<Value>(&line) {
                        let (kind, v) = classify(tool, &rec);
                        seen(kind, i as u64 + 1, v);
                    }
                }
            }
            _ => {}
        }
        if let Some(v) = version {
            *r.versions.entry(v).or_default() += 1;
        }
    }
    for (kind, t) in tallies {
        r.types.insert(kind.clone(), t.count);
        let parts_known = kind
            .strip_prefix("$set/")
            .map(|keys| keys.split(',').all(|k| known(tool, &format!("$set/{k}"))));
        if !parts_known.unwrap_or_else(|| known(tool, &kind)) {
            if let Some(mut first) = t.first {
                first.reason = format!("a record of type {kind} no reader knows");
                r.unknown.push(Unknown {
                    kind,
                    count: t.count,
                    first,
                });
            }
        }
    }
    let cp = Checkpoint::load(state_dir, tool);
    r.deleted = cp
        .files
        .iter()
        .filter(|(file, _)| !file.exists())
        .map(|(file, mark)| Kept {
            file: file.clone(),
            session: mark.session.clone(),
        })
        .collect();
    r
}

fn is_lines(path: &Path) -> bool {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    name.ends_with(".jsonl") || name.ends_with(".jsonl.zst")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_no_reader_knows_are_reported_with_their_first_place() {
        let dir = tempfile::tempdir().unwrap();
        let projects = dir.path().join("projects/-w");
        std::fs::create_dir_all(&projects).unwrap();
        let lines = [
            r#"{"type":"user","version":"2.1.332","uuid":"u1","message":{"content":"hi"}}"#,
            r#"{"type":"assistant","uuid":"a1","message":{"content":[]}}"#,
            r#"{"type":"hologram","uuid":"h1"}"#,
            r#"{"type":"hologram","uuid":"h2"}"#,
        ];
        let file = projects.join("s.jsonl");
        std::fs::write(&file, lines.join("\n") + "\n").unwrap();
        let state = tempfile::tempdir().unwrap();
        let r = report(
            Tool::ClaudeCode,
            &[dir.path().join("projects")],
            state.path(),
        );
        assert_eq!(r.files, 1);
        assert_eq!(r.versions.get("2.1.332"), Some(&1));
        assert_eq!(r.types.get("user"), Some(&1));
        assert_eq!(r.unknown.len(), 1);
        assert_eq!(r.unknown[0].kind, "hologram");
        assert_eq!(r.unknown[0].count, 2);
        assert_eq!(r.unknown[0].first.line, 3);
        assert!(r.deleted.is_empty());
    }
}
