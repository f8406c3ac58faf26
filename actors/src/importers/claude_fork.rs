//! `claude --fork-session` (and `--resume … --fork-session`) starts a new
//! conversation file that begins with a copy of the parent's records: the
//! same uuids, the new `sessionId`, and every copied record under the
//! `promptId` of the fork's own first prompt. Those turns are the
//! parent's: the fork's session keeps only its own turns and names where
//! it forked from (`fork_of`: the parent's session and node), so
//! nothing is stored twice.
//!
//! A prompt is a copy when a later prompt of the same file carries its
//! `promptId` under another uuid (each prompt Claude Code writes itself
//! has a `promptId` of its own; tool results share their prompt's).

use std::collections::{HashMap, HashSet};
use std::io::BufRead;
use std::path::Path;

use serde_json::Value;

/// A prompt as the first pass sees it.
#[derive(Debug, Clone)]
pub struct Prompt {
    pub uuid: String,
    pub prompt_id: String,
    pub parent: Option<String>,
}

/// A `user` record that is a prompt someone typed (not a tool's result, a
/// meta message or a compaction summary), as a `Prompt`.
pub fn prompt_of(rec: &Value) -> Option<Prompt> {
    if rec.get("type").and_then(Value::as_str) != Some("user") {
        return None;
    }
    let flag = |k: &str| rec.get(k).and_then(Value::as_bool).unwrap_or(false);
    if flag("isMeta") || flag("isCompactSummary") || flag("isSidechain") {
        return None;
    }
    let content = rec.pointer("/message/content")?;
    let results = content.as_array().is_some_and(|b| {
        !b.is_empty()
            && b.iter()
                .all(|x| x.get("type").and_then(Value::as_str) == Some("tool_result"))
    });
    if results {
        return None;
    }
    Some(Prompt {
        uuid: rec.get("uuid")?.as_str()?.to_string(),
        prompt_id: rec.get("promptId")?.as_str()?.to_string(),
        parent: rec
            .get("parentUuid")
            .and_then(Value::as_str)
            .map(str::to_string),
    })
}

/// The prompts of a file that are copies of another conversation's, and
/// the record the fork's own first prompt follows.
pub fn copies(prompts: &[Prompt]) -> (HashSet<String>, Option<String>) {
    let mut last_of: HashMap<&str, usize> = HashMap::new();
    for (i, p) in prompts.iter().enumerate() {
        last_of.insert(p.prompt_id.as_str(), i);
    }
    let copied: HashSet<String> = prompts
        .iter()
        .enumerate()
        .filter(|(i, p)| {
            last_of
                .get(p.prompt_id.as_str())
                .is_some_and(|&j| j > *i && prompts[j].uuid != p.uuid)
        })
        .map(|(_, p)| p.uuid.clone())
        .collect();
    let from = prompts
        .iter()
        .find(|p| !copied.is_empty() && !copied.contains(&p.uuid))
        .and_then(|p| p.parent.clone());
    (copied, from)
}

/// The file beside `path` whose conversation starts with the prompt
/// `first` and is not itself a copy: the conversation a fork copied.
pub fn parent_file(path: &Path, first: &str) -> Option<String> {
    let own = path.file_stem()?.to_str()?;
    let dir = path.parent()?;
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let p = entry.path();
        let Some(stem) = p.file_stem().and_then(|s| s.to_str()) else {
            continue;
        };
        if stem == own || p.extension().is_none_or(|e| e != "jsonl") {
            continue;
        }
        if first_prompt(&p).is_some_and(|(uuid, copy)| uuid == first && !copy) {
            found.push(stem.to_string());
        }
    }
    found.sort();
    found.into_iter().next()
}

/// A file's first prompt, and whether a later prompt shares its
/// `promptId` (it is a copy). Reads up to that first prompt, then only
/// the lines that can be prompts.
fn first_prompt(path: &Path) -> Option<(String, bool)> {
    let file = std::io::BufReader::new(std::fs::File::open(path).ok()?);
    let mut first: Option<Prompt> = None;
    for line in file.split(b'\n') {
        let line = line.ok()?;
        let wanted = |needle: &[u8]| line.windows(needle.len()).any(|w| w == needle);
        if !wanted(b"\"promptId\"") || !wanted(b"\"user\"") {
            continue;
        }
        let Ok(rec) = serde_json::from_slice::<Value>(&line) else {
            continue;
        };
        let Some(p) = prompt_of(&rec) else { continue };
        match &first {
            None => first = Some(p),
            Some(f) if f.prompt_id == p.prompt_id && f.uuid != p.uuid => {
                return Some((f.uuid.clone(), true))
            }
            Some(_) => {}
        }
    }
    first.map(|f| (f.uuid, false))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(uuid: &str, prompt_id: &str, parent: Option<&str>) -> Prompt {
        Prompt {
            uuid: uuid.into(),
            prompt_id: prompt_id.into(),
            parent: parent.map(Into::into),
        }
    }

    #[test]
    fn copied_prompts_share_the_forks_prompt_id() {
        let own = [p("u1", "a", None), p("u2", "b", Some("x1"))];
        assert_eq!(copies(&own), (HashSet::new(), None));
        let fork = [
            p("u1", "f", None),
            p("u2", "f", Some("x1")),
            p("u3", "f", Some("x2")),
            p("u4", "g", Some("x3")),
        ];
        let (copied, from) = copies(&fork);
        assert_eq!(copied, ["u1", "u2"].iter().map(|s| s.to_string()).collect());
        assert_eq!(from.as_deref(), Some("x2"));
    }
}
