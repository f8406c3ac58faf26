//! The importers judged by what the real tools wrote: each recording under
//! `tests/agents/recordings/<tool>/<scenario>/` (made by the scripts
//! beside them, driving the tool itself against a fake model server) is
//! imported through a real server and compared with the counts its
//! manifest took from the raw records independently of our readers:
//! conversations, prompts in order, replies, tool calls and results, one
//! commit per turn at the turn's own time, the links between sessions.
//! Imported again, nothing is added. The mirror tests replay a recording's
//! writes in the tool's own order and pace into a watched folder and must
//! end with every node a batch import of the final files has.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Value};

use crate::helpers::{git, TestServer};

/// The recordings' home folder, written as it was neutralised.
const HOME: &str = "/home/user";

fn recordings(tool: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/agents/recordings")
        .join(tool)
}

fn manifest(dir: &Path) -> Value {
    let text = std::fs::read_to_string(dir.join("manifest.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// Copy a recording's `files/` under `to`, the recorded home folder
/// rewritten as `home` (so working directories exist here).
/// The files of recording `name` (`tool/recording`) laid out in `to` as
/// the tool wrote them, for a user whose home is `home`.
pub(crate) fn lay_out_recording(name: &str, to: &Path, home: &Path) {
    let (tool, recording) = name.split_once('/').expect("tool/recording");
    lay_out(&recordings(tool).join(recording).join("files"), to, home);
}

fn lay_out(from: &Path, to: &Path, home: &Path) {
    for entry in walk(from) {
        let rel = entry.strip_prefix(from).unwrap();
        let dest = to.join(rel);
        std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
        let text = std::fs::read_to_string(&entry).unwrap();
        std::fs::write(&dest, rewrite(&text, home)).unwrap();
        // Written long ago, as a recording is: no turn is still being
        // written.
        let then = std::time::SystemTime::now() - Duration::from_secs(3600);
        std::fs::File::options()
            .write(true)
            .open(&dest)
            .unwrap()
            .set_modified(then)
            .unwrap();
    }
}

fn rewrite(text: &str, home: &Path) -> String {
    text.replace(HOME, home.to_str().unwrap())
}

/// Every file under `dir`, sorted.
pub(crate) fn walk_files(dir: &Path) -> Vec<PathBuf> {
    walk(dir)
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

pub(crate) fn import(s: &TestServer, tool: &str, root: &Path) -> Value {
    let (st, v) = s.post(
        "/api/imports",
        json!({"tool": tool, "paths": [root], "projects": true}),
    );
    assert_eq!(st, 200, "{v}");
    assert!(v["errors"].as_array().unwrap().is_empty(), "{v}");
    v
}

/// Every node of a session, in sequence order.
fn nodes(s: &TestServer, id: &str) -> Vec<Value> {
    let (st, v) = s.get(&format!("/api/sessions/{id}/nodes"));
    assert_eq!(st, 200, "{id}: {v}");
    let mut all = v["nodes"].as_array().cloned().unwrap_or_default();
    all.sort_by_key(|n| n["seq"].as_u64());
    all
}

fn of_role<'a>(nodes: &'a [Value], role: &str) -> Vec<&'a Value> {
    nodes.iter().filter(|n| n["role"] == role).collect()
}

fn text(n: &Value) -> String {
    n["content"].as_str().unwrap_or_default().to_string()
}

/// The session's turn commits (every branch; `session init` left out),
/// with their author times.
fn commits(s: &TestServer, id: &str) -> Vec<(String, i64)> {
    let dir = s.session_dir(id);
    git(&dir, &["log", "--all", "--format=%s%x09%at"])
        .lines()
        .filter(|l| !l.starts_with("session init"))
        .map(|l| {
            let (subject, at) = l.rsplit_once('\t').unwrap();
            (subject.to_string(), at.parse().unwrap())
        })
        .collect()
}

/// The range of the times a recording's records carry.
fn time_range(files: &[PathBuf]) -> (i64, i64) {
    let mut lo = i64::MAX;
    let mut hi = i64::MIN;
    for f in files {
        let text = std::fs::read_to_string(f).unwrap();
        for t in text.split("\"timestamp\":\"").skip(1) {
            let t = t.split('"').next().unwrap();
            if let Ok(at) =
                time::OffsetDateTime::parse(t, &time::format_description::well_known::Rfc3339)
            {
                lo = lo.min(at.unix_timestamp());
                hi = hi.max(at.unix_timestamp());
            }
        }
    }
    (lo, hi)
}

/// One Claude Code recording imported and checked against its manifest.
fn claude_code_scenario(scenario: &str) {
    let dir = recordings("claude-code").join(scenario);
    let m = manifest(&dir);
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    std::fs::create_dir_all(home.join("project")).unwrap();
    let root = home.join(".claude");
    lay_out(&dir.join("files"), &root, &home);
    let s = TestServer::start();
    let sum = import(&s, "claude-code", &root.join("projects"));
    let expect = &m["expect"];
    let per = expect["per_conversation"].as_object().unwrap();
    // A fork's copied prompts are its parent's.
    let prompts_of = |file: &str| -> Vec<String> {
        per[file]["prompts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p.as_str().unwrap().to_string())
            .collect()
    };
    let mut owned: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut copied_total = 0;
    for file in per.keys().filter(|f| !f.contains("/subagents/")) {
        let stem = Path::new(file).file_stem().unwrap().to_str().unwrap();
        let id = format!("claude-code-{stem}");
        let (st, meta) = s.get(&format!("/api/sessions/{id}"));
        assert_eq!(st, 200, "{scenario}: {id}: {meta}");
        let mut prompts = prompts_of(file);
        if let Some(from) = meta["fork_of"].as_object() {
            let parent = from["session"].as_str().unwrap();
            let parent_file = per
                .keys()
                .find(|k| parent.ends_with(Path::new(k).file_stem().unwrap().to_str().unwrap()))
                .unwrap_or_else(|| panic!("{scenario}: the fork's parent {parent} is a recording"));
            let theirs = prompts_of(parent_file);
            let before = prompts.len();
            prompts.retain(|p| !theirs.contains(p));
            copied_total += before - prompts.len();
            assert!(from["node"].as_str().is_some_and(|n| !n.is_empty()));
        }
        owned.insert(id, prompts);
    }
    assert_eq!(sum["turns_forked"].as_u64().unwrap(), copied_total as u64);
    let files: Vec<PathBuf> = walk(&root);
    let (lo, hi) = time_range(&files);
    let mut tool_calls = 0;
    let mut tool_results = 0;
    let mut replies = 0;
    let mut turns = 0;
    for (id, prompts) in &owned {
        let all = nodes(&s, id);
        let users: Vec<String> = of_role(&all, "user").into_iter().map(text).collect();
        assert_eq!(&users, prompts, "{scenario}: {id}: the prompts in order");
        let assistants = of_role(&all, "assistant");
        replies += assistants.iter().filter(|n| !text(n).is_empty()).count();
        let tools = of_role(&all, "tool");
        tool_calls += tools.len();
        tool_results += tools.iter().filter(|n| !n["output"].is_null()).count();
        // One commit per turn, at the turn's own time.
        let made = commits(&s, id);
        assert_eq!(made.len(), prompts.len(), "{scenario}: {id}: {made:?}");
        for (subject, at) in &made {
            assert!(
                (lo..=hi).contains(at),
                "{scenario}: {id}: '{subject}' at {at}, not in {lo}..={hi}"
            );
        }
        turns += made.len();
        // A prompt the user edited (rewound and sent again) and one sent
        // from an earlier point (`--resume-session-at`) start branches:
        // both lines stay.
        let lines = git(&s.session_dir(id), &["branch", "--format=%(refname:short)"]);
        let forks_here = match scenario {
            "edited_prompt" => 1,
            "fork_session" if !is_fork_id(&s, id) => 1,
            _ => 0,
        };
        assert_eq!(
            lines.lines().count(),
            1 + forks_here,
            "{scenario}: {id}: {lines}"
        );
    }
    // Sub-agents: their own sessions, linked to the parent.
    let subagent_files = expect["subagent_files"].as_u64().unwrap_or(0) as usize;
    let subs: Vec<&PathBuf> = files
        .iter()
        .filter(|f| f.parent().unwrap().ends_with("subagents") && f.extension().unwrap() == "jsonl")
        .collect();
    assert_eq!(subs.len(), subagent_files);
    for f in subs {
        let parent = f
            .parent()
            .unwrap()
            .parent()
            .unwrap()
            .file_name()
            .unwrap()
            .to_str()
            .unwrap();
        let agent = f.file_stem().unwrap().to_str().unwrap();
        let agent = agent.strip_prefix("agent-").unwrap();
        let id = format!("claude-code-{parent}-agent-{agent}");
        let (st, meta) = s.get(&format!("/api/sessions/{id}"));
        assert_eq!(st, 200, "{scenario}: the sub-agent {id}: {meta}");
        assert_eq!(meta["parent_session"], format!("claude-code-{parent}"));
        let all = nodes(&s, &id);
        let tools = of_role(&all, "tool");
        tool_calls += tools.len();
        tool_results += tools.iter().filter(|n| !n["output"].is_null()).count();
        replies += of_role(&all, "assistant")
            .iter()
            .filter(|n| !text(n).is_empty())
            .count();
    }
    // The counts the manifest took from the raw records; a fork's copies
    // are counted once (by their ids, as the raw records give them).
    let raw = raw_counts(&files);
    assert_eq!(tool_calls, raw.0, "{scenario}: tool calls");
    assert_eq!(tool_results, raw.1, "{scenario}: tool results");
    assert_eq!(replies, raw.2, "{scenario}: replies with text");
    if copied_total == 0 {
        let n = |k: &str| expect[k].as_u64().unwrap() as usize;
        assert_eq!(
            raw,
            (
                n("tool_calls"),
                n("tool_results"),
                n("assistant_text_replies")
            )
        );
    }
    assert_eq!(
        sum["turns"].as_u64().unwrap() as usize,
        turns + sub_turns(&s, &files)
    );
    // Titles: the user's last, else the tool's last.
    let titles = expect["titles"].as_array().cloned().unwrap_or_default();
    let last_of = |kind: &str| {
        titles
            .iter()
            .rev()
            .find(|t| t[0] == kind)
            .map(|t| t[1].clone())
    };
    if let Some(title) = last_of("custom-title").or_else(|| last_of("ai-title")) {
        let id = owned.keys().next().unwrap();
        let (_, meta) = s.get(&format!("/api/sessions/{id}"));
        assert_eq!(meta["title"], title, "{scenario}: the title");
    }
    // Nothing is written into the project's folder.
    assert!(
        !home.join("project/.git").exists(),
        "{scenario}: a .git was made"
    );
    assert!(!home.join("project/.openprogram").exists());
    // Again: nothing new.
    let again = import(&s, "claude-code", &root.join("projects"));
    assert_eq!(again["turns"], 0, "{scenario}: {again}");
    assert_eq!(again["turns_continued"], 0, "{scenario}: {again}");
    for id in owned.keys() {
        assert_eq!(commits(&s, id).len(), owned[id].len());
    }
}

fn is_fork_id(s: &TestServer, id: &str) -> bool {
    let (_, meta) = s.get(&format!("/api/sessions/{id}"));
    meta["fork_of"].is_object()
}

/// Distinct tool calls, tool results and assistant messages with text of
/// Claude Code files, read straight from their records.
fn raw_counts(files: &[PathBuf]) -> (usize, usize, usize) {
    let (mut calls, mut results, mut texts) = (BTreeSet::new(), BTreeSet::new(), BTreeSet::new());
    for f in files
        .iter()
        .filter(|f| f.extension().is_some_and(|e| e == "jsonl"))
    {
        let scope = if f.parent().unwrap().ends_with("subagents") {
            f.display().to_string()
        } else {
            String::new()
        };
        for line in std::fs::read_to_string(f).unwrap().lines() {
            let Ok(r) = serde_json::from_str::<Value>(line) else {
                continue;
            };
            let blocks = r["message"]["content"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            for b in &blocks {
                match b["type"].as_str() {
                    Some("tool_use") if r["type"] == "assistant" => {
                        calls.insert(b["id"].as_str().unwrap().to_string());
                    }
                    Some("tool_result") if r["type"] == "user" => {
                        results.insert(b["tool_use_id"].as_str().unwrap().to_string());
                    }
                    Some("text")
                        if r["type"] == "assistant"
                            && !b["text"].as_str().unwrap_or("").is_empty() =>
                    {
                        let id = r["message"]["id"].as_str().unwrap_or("");
                        texts.insert(format!("{scope}{id}"));
                    }
                    _ => {}
                }
            }
        }
    }
    (calls.len(), results.len(), texts.len())
}

/// Turns of the sub-agents' sessions (their prompts).
fn sub_turns(s: &TestServer, files: &[PathBuf]) -> usize {
    files
        .iter()
        .filter(|f| f.parent().unwrap().ends_with("subagents") && f.extension().unwrap() == "jsonl")
        .map(|f| {
            let parent = f.parent().unwrap().parent().unwrap().file_name().unwrap();
            let agent = f.file_stem().unwrap().to_str().unwrap();
            let id = format!(
                "claude-code-{}-agent-{}",
                parent.to_str().unwrap(),
                agent.strip_prefix("agent-").unwrap()
            );
            commits(s, &id).len()
        })
        .sum()
}

#[test]
fn claude_code_recordings_import_exactly() {
    let mut seen = BTreeSet::new();
    for e in std::fs::read_dir(recordings("claude-code"))
        .unwrap()
        .flatten()
    {
        let scenario = e.file_name().to_str().unwrap().to_string();
        claude_code_scenario(&scenario);
        seen.insert(scenario);
    }
    for wanted in [
        "multi_turn_tools",
        "fork_session",
        "compact",
        "subagent",
        "edited_prompt",
    ] {
        assert!(seen.contains(wanted), "the recording {wanted} is missing");
    }
}

/// Replay a recording's writes under `to` in their order, each gap kept
/// up to `cap` (a long step stays longer than the mirror's settle time).
fn replay(dir: &Path, to: &Path, home: &Path, cap: Duration) {
    let mut last = 0u64;
    for w in writes(dir) {
        let t = w["t_ms"].as_u64().unwrap();
        let gap = Duration::from_millis(t.saturating_sub(last)).min(cap);
        std::thread::sleep(gap);
        last = t;
        apply_write(&w, to, home);
    }
}

/// The writes a recording's tool made, in order (`writes.jsonl`).
fn writes(dir: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(dir.join("writes.jsonl")).unwrap();
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The writes of recording `name` (`tool/recording`), in order.
pub(crate) fn recording_writes(name: &str) -> Vec<Value> {
    let (tool, recording) = name.split_once('/').expect("tool/recording");
    writes(&recordings(tool).join(recording))
}

/// One write of a recording made again under `to`, for a user whose home
/// is `home`.
pub(crate) fn apply_write(w: &Value, to: &Path, home: &Path) {
    let path = to.join(w["path"].as_str().unwrap());
    let data = rewrite(w["data"].as_str().unwrap_or_default(), home);
    match w["op"].as_str().unwrap() {
        "append" => {
            use std::io::Write;
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            let mut f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
                .unwrap();
            f.write_all(data.as_bytes()).unwrap();
        }
        "write" => {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, data).unwrap();
        }
        "delete" => {
            let _ = std::fs::remove_file(&path);
        }
        other => panic!("unknown write {other}"),
    }
}

/// The nodes of every session of `source`, by session: id → (role,
/// content, output).
pub(crate) fn everything(
    s: &TestServer,
    source: &str,
) -> BTreeMap<String, BTreeMap<String, Value>> {
    let (_, list) = s.get("/api/sessions?limit=1000&include_archived=true");
    let mut out = BTreeMap::new();
    for row in list["sessions"].as_array().unwrap() {
        if row["source"] != source {
            continue;
        }
        let id = row["id"].as_str().unwrap().to_string();
        let mut by_node = BTreeMap::new();
        for n in nodes(s, &id) {
            let key = n["id"].as_str().unwrap().to_string();
            by_node.insert(key, json!([n["role"], n["content"], n["output"]]));
        }
        out.insert(id, by_node);
    }
    out
}

/// A recording replayed into the folder a server mirrors (which does not
/// exist when the server starts): in the end the mirror holds exactly
/// what a batch import of the final files holds, each session on one line
/// (late records added in new commits, nothing rewritten).
fn mirror_matches_batch(tool: &str, env_dir: &str, sub: &str, scenario: &str) {
    let dir = recordings(tool).join(scenario);
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    std::fs::create_dir_all(home.join("project")).unwrap();
    let root = home.join(sub);
    let s = TestServer::start_with_env(&[
        (env_dir, home.join(sub).to_str().unwrap()),
        ("HOME", home.to_str().unwrap()),
        ("OPENPROGRAM_IMPORT_WATCH", tool),
        ("OPENPROGRAM_IMPORT_SETTLE_S", "1"),
    ]);
    replay(&dir, &root, &home, Duration::from_secs(10));
    // The batch import of the final files, on a server of its own.
    let batch = TestServer::start();
    let import_root = match tool {
        "claude-code" => root.join("projects"),
        "gemini-cli" => root.join("tmp"),
        _ => root.clone(),
    };
    import(&batch, tool, &import_root);
    let want = everything(&batch, tool);
    assert!(!want.is_empty());
    let start = std::time::Instant::now();
    loop {
        let got = everything(&s, tool);
        if got == want {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(40),
            "{tool}/{scenario}: the mirror holds\n{got:#?}\nthe batch import\n{want:#?}\nlog:\n{}",
            s.log()
        );
        std::thread::sleep(Duration::from_millis(250));
    }
    for id in want.keys() {
        let branches = git(&s.session_dir(id), &["branch", "--format=%(refname:short)"]);
        let batch_branches = git(
            &batch.session_dir(id),
            &["branch", "--format=%(refname:short)"],
        );
        assert_eq!(
            branches, batch_branches,
            "{tool}/{scenario}: {id}: the same lines"
        );
    }
}

#[test]
fn the_claude_code_mirror_keeps_a_slow_step_a_kill_and_a_compaction() {
    for scenario in ["slow_step", "killed_then_resumed", "compact"] {
        mirror_matches_batch("claude-code", "CLAUDE_CONFIG_DIR", ".claude", scenario);
    }
}

#[test]
fn gemini_cli_recordings_import_exactly() {
    for e in std::fs::read_dir(recordings("gemini-cli"))
        .unwrap()
        .flatten()
    {
        let dir = e.path();
        let m = manifest(&dir);
        let scenario = m["scenario"].as_str().unwrap().to_string();
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        std::fs::create_dir_all(home.join("project")).unwrap();
        let root = home.join(".gemini");
        lay_out(&dir.join("files"), &root, &home);
        let s = TestServer::start();
        let sum = import(&s, "gemini-cli", &root.join("tmp"));
        let expect = &m["expect"];
        let mut tool_calls = 0;
        let mut tool_results = 0;
        let mut replies = 0;
        let mut turns = 0;
        let convs = expect["conversations_detail"].as_array().unwrap();
        assert_eq!(
            convs.len() as u64,
            expect["conversations"].as_u64().unwrap()
        );
        for c in convs {
            let id = format!("gemini-{}", c["sessionId"].as_str().unwrap());
            let (st, meta) = s.get(&format!("/api/sessions/{id}"));
            assert_eq!(st, 200, "{scenario}: {id}");
            let started = time::OffsetDateTime::parse(
                c["startTime"].as_str().unwrap(),
                &time::format_description::well_known::Rfc3339,
            )
            .unwrap();
            let created = meta["created_at"].as_f64().unwrap();
            assert!(
                (created - started.unix_timestamp() as f64).abs() < 1.0,
                "{scenario}: {id} starts at its first start, not a resume: {created}"
            );
            let got = conversation(&s, &scenario, &id, &c["prompts"]);
            for n in of_role(&nodes(&s, &id), "system") {
                assert!(n["created_at"].as_f64().unwrap() > 1e9, "{scenario}: {n}");
            }
            let made = commits(&s, &id);
            assert!(made.iter().all(|(subject, _)| !subject.ends_with(": ")));
            turns += got.turns;
            tool_calls += got.calls;
            tool_results += got.results;
            replies += got.texts;
        }
        assert_eq!(
            tool_calls as u64,
            expect["tool_calls"].as_u64().unwrap(),
            "{scenario}"
        );
        assert_eq!(
            tool_results as u64,
            expect["tool_results"].as_u64().unwrap(),
            "{scenario}"
        );
        assert_eq!(
            replies as u64,
            expect["model_text_replies"].as_u64().unwrap(),
            "{scenario}"
        );
        assert_eq!(sum["turns"].as_u64().unwrap() as usize, turns, "{scenario}");
        let compactions: usize = convs
            .iter()
            .map(|c| {
                let id = format!("gemini-{}", c["sessionId"].as_str().unwrap());
                nodes(&s, &id)
                    .iter()
                    .filter(|n| n["metadata"]["imported"]["type"] == "compaction")
                    .count()
            })
            .sum();
        // `/compress` replaced the model's context once; every start and
        // resume loads it too, which is no compaction.
        let compressions = usize::from(scenario == "compress");
        assert_eq!(compactions, compressions, "{scenario}: compactions");
        let again = import(&s, "gemini-cli", &root.join("tmp"));
        assert_eq!(again["turns"], 0, "{scenario}: {again}");
        assert_eq!(again["turns_continued"], 0, "{scenario}: {again}");
    }
}

#[test]
fn codex_recordings_import_exactly() {
    for e in std::fs::read_dir(recordings("codex")).unwrap().flatten() {
        let dir = e.path();
        let m = manifest(&dir);
        let scenario = m["scenario"].as_str().unwrap().to_string();
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        std::fs::create_dir_all(home.join("project")).unwrap();
        let root = home.join(".codex");
        lay_out(&dir.join("files"), &root, &home);
        let s = TestServer::start();
        let sum = import(&s, "codex", &root.join("sessions"));
        let expect = &m["expect"];
        let (mut calls, mut results, mut texts, mut turns) = (0, 0, 0, 0);
        for f in expect["per_file"].as_array().unwrap() {
            let id = format!("codex-{}", f["id"].as_str().unwrap());
            let (st, meta) = s.get(&format!("/api/sessions/{id}"));
            assert_eq!(st, 200, "{scenario}: {id}");
            let c = conversation(&s, &scenario, &id, &f["prompts"]);
            (calls, results, texts, turns) = (
                calls + c.calls,
                results + c.results,
                texts + c.texts,
                turns + c.turns,
            );
            match f["forked_from"].as_str() {
                Some(origin) => {
                    assert_eq!(meta["fork_of"]["session"], format!("codex-{origin}"));
                    assert!(meta["parent_session"].is_null(), "{meta}");
                }
                None => assert!(meta["fork_of"].is_null()),
            }
            if let Some(parent) = f["parent"].as_str() {
                assert_eq!(meta["parent_session"], format!("codex-{parent}"));
            }
        }
        // The parent's call that spawned a sub-agent names its session.
        for sub in expect["subagents"].as_array().unwrap() {
            let child = sub["id"].as_str().unwrap();
            let parent = format!("codex-{}", sub["parent"].as_str().unwrap());
            let linked = nodes(&s, &parent)
                .iter()
                .any(|n| n["metadata"]["imported"]["subagent_session"] == format!("codex-{child}"));
            assert!(linked, "{scenario}: {parent} names its sub-agent {child}");
        }
        let n = |k: &str| expect[k].as_u64().unwrap() as usize;
        assert_eq!(calls, n("tool_calls"), "{scenario}");
        assert_eq!(results, n("tool_results"), "{scenario}");
        assert_eq!(texts, n("assistant_texts"), "{scenario}");
        assert_eq!(sum["turns"].as_u64().unwrap() as usize, turns, "{scenario}");
        let again = import(&s, "codex", &root.join("sessions"));
        assert_eq!(again["turns"], 0, "{scenario}: {again}");
        assert_eq!(again["turns_continued"], 0, "{scenario}: {again}");
    }
}

/// What one conversation's session holds.
struct Held {
    calls: usize,
    results: usize,
    texts: usize,
    turns: usize,
}

/// A conversation's session against the prompts a manifest lists: those
/// prompts in order, one commit for each.
fn conversation(s: &TestServer, scenario: &str, id: &str, prompts: &Value) -> Held {
    let all = nodes(s, id);
    let users: Vec<String> = of_role(&all, "user").into_iter().map(text).collect();
    let prompts: Vec<String> = prompts
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap().to_string())
        .collect();
    assert_eq!(users, prompts, "{scenario}: {id}");
    let made = commits(s, id);
    assert_eq!(made.len(), prompts.len(), "{scenario}: {id}: {made:?}");
    let tools = of_role(&all, "tool");
    Held {
        calls: tools.len(),
        results: tools.iter().filter(|n| !n["output"].is_null()).count(),
        texts: of_role(&all, "assistant")
            .iter()
            .filter(|n| !text(n).is_empty())
            .count(),
        turns: made.len(),
    }
}

/// opencode's database, rebuilt from a recording's dump.
fn opencode_database(dir: &Path, home: &Path) -> PathBuf {
    let db = home.join(".local/share/opencode/opencode.db");
    std::fs::create_dir_all(db.parent().unwrap()).unwrap();
    let sql = std::fs::read_to_string(dir.join("files/opencode.sql")).unwrap();
    let conn = rusqlite::Connection::open(&db).unwrap();
    // The dump lists tables by name, not by their foreign keys' order.
    conn.execute_batch("PRAGMA foreign_keys = OFF;").unwrap();
    conn.execute_batch(&rewrite(&sql, home)).unwrap();
    db
}

#[test]
fn opencode_recordings_import_exactly() {
    for e in std::fs::read_dir(recordings("opencode")).unwrap().flatten() {
        let dir = e.path();
        if !dir.is_dir() {
            continue;
        }
        let m = manifest(&dir);
        let scenario = m["scenario"].as_str().unwrap().to_string();
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        std::fs::create_dir_all(home.join("project")).unwrap();
        let db = opencode_database(&dir, &home);
        let s = TestServer::start();
        let sum = import(&s, "opencode", &db);
        if m.get("expect_session_message").is_some() {
            opencode_v2_matches(&s, &m, &db, &sum);
            continue;
        }
        let expect = &m["expect"];
        let (mut calls, mut results, mut texts, mut turns) = (0, 0, 0, 0);
        for c in expect["per_conversation"].as_array().unwrap() {
            let id = format!("opencode-{}", c["id"].as_str().unwrap());
            let (st, meta) = s.get(&format!("/api/sessions/{id}"));
            assert_eq!(st, 200, "{scenario}: {id}");
            if let Some(parent) = c["parent"].as_str() {
                assert_eq!(meta["parent_session"], format!("opencode-{parent}"));
            }
            assert_eq!(meta["title"], c["title"], "{scenario}: {id}");
            let got = conversation(&s, &scenario, &id, &c["prompts"]);
            (calls, results, texts, turns) = (
                calls + got.calls,
                results + got.results,
                texts + got.texts,
                turns + got.turns,
            );
        }
        let n = |k: &str| expect[k].as_u64().unwrap() as usize;
        assert_eq!(calls, n("tool_calls"), "{scenario}");
        assert_eq!(results, n("tool_results"), "{scenario}");
        assert_eq!(sum["turns"].as_u64().unwrap() as usize, turns, "{scenario}");
        assert!(texts > 0, "{scenario}");
        let again = import(&s, "opencode", &db);
        assert_eq!(again["turns"], 0, "{scenario}: {again}");
        assert_eq!(again["turns_continued"], 0, "{scenario}: {again}");
    }
}

/// Make every file under `root` look written an hour ago (the tool is
/// done with it: its last turn is over).
fn age(root: &Path) {
    let then = std::time::SystemTime::now() - Duration::from_secs(3600);
    for f in walk(root) {
        let file = std::fs::File::options().write(true).open(&f).unwrap();
        file.set_modified(then).unwrap();
    }
}

/// A recording imported in steps, at each pause of the tool longer than
/// two seconds (a step longer than the settle time: its turn is taken as
/// over), then whole: what the tool wrote of a turn after it was imported
/// is added to it (`turns_continued`), and in the end the sessions hold
/// exactly what one import of the final files holds, each on one line.
fn continued_in_steps(tool: &str, sub: &str, scenario: &str, import_sub: &str) {
    let dir = recordings(tool).join(scenario);
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    std::fs::create_dir_all(home.join("project")).unwrap();
    let root = home.join(sub);
    let s = TestServer::start();
    let text = std::fs::read_to_string(dir.join("writes.jsonl")).unwrap();
    let writes: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let mut continued = 0;
    let mut step = |upto: usize, from: usize| {
        let part: String = writes[from..upto]
            .iter()
            .map(|w| w.to_string() + "\n")
            .collect();
        let steps = tmp.path().join("part");
        std::fs::create_dir_all(&steps).unwrap();
        std::fs::write(steps.join("writes.jsonl"), part).unwrap();
        replay(&steps, &root, &home, Duration::ZERO);
        age(&root);
        let sum = import(&s, tool, &root.join(import_sub));
        continued += sum["turns_continued"].as_u64().unwrap();
    };
    let mut from = 0;
    for i in 1..writes.len() {
        let gap = writes[i]["t_ms"].as_u64().unwrap() - writes[i - 1]["t_ms"].as_u64().unwrap();
        if gap > 2000 {
            step(i, from);
            from = i;
        }
    }
    step(writes.len(), from);
    assert!(continued >= 1, "{tool}/{scenario}: no turn was continued");
    let batch = TestServer::start();
    import(&batch, tool, &root.join(import_sub));
    let want = everything(&batch, tool);
    assert!(!want.is_empty());
    assert_eq!(everything(&s, tool), want, "{tool}/{scenario}");
    for id in want.keys() {
        let lines = git(&s.session_dir(id), &["branch", "--format=%(refname:short)"]);
        let batch_lines = git(
            &batch.session_dir(id),
            &["branch", "--format=%(refname:short)"],
        );
        assert_eq!(lines, batch_lines, "{tool}/{scenario}: {id}");
        // Every commit made on the way is still on the line.
        let all = git(&s.session_dir(id), &["rev-list", "--all", "--count"]);
        let line = git(&s.session_dir(id), &["rev-list", "HEAD", "--count"]);
        assert_eq!(all, line, "{tool}/{scenario}: {id}: a commit left the line");
    }
}

#[test]
fn what_a_tool_writes_after_its_turn_was_imported_is_added_to_it() {
    continued_in_steps("claude-code", ".claude", "slow_step", "projects");
    continued_in_steps("claude-code", ".claude", "killed_then_resumed", "projects");
    continued_in_steps("gemini-cli", ".gemini", "slow_step", "tmp");
}

#[test]
fn a_tool_folder_that_appears_later_is_read_whole() {
    let dir = recordings("claude-code").join("multi_turn_tools");
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    std::fs::create_dir_all(home.join("project")).unwrap();
    let root = home.join(".claude");
    let s = TestServer::start_with_env(&[
        ("CLAUDE_CONFIG_DIR", root.to_str().unwrap()),
        ("OPENPROGRAM_IMPORT_WATCH", "claude-code"),
    ]);
    std::thread::sleep(Duration::from_millis(500));
    // The tool's first run: its folder and a whole conversation at once,
    // nothing written after.
    lay_out(&dir.join("files"), &root, &home);
    let m = manifest(&dir);
    let per = m["expect"]["per_conversation"].as_object().unwrap();
    let (file, conv) = per.iter().next().unwrap();
    let stem = Path::new(file).file_stem().unwrap().to_str().unwrap();
    let id = format!("claude-code-{stem}");
    let want = conv["prompts"].as_array().unwrap().len();
    let start = std::time::Instant::now();
    loop {
        let (st, meta) = s.get(&format!("/api/sessions/{id}"));
        if st == 200 && meta["turn_count"].as_u64() == Some(want as u64) {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the conversation in a folder that appeared: {meta}\n{}",
            s.log()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let (_, status) = s.get("/api/imports");
    let mirror = &status["mirrors"][0];
    assert_eq!(mirror["tool"], "claude-code", "{status}");
    assert!(mirror["imports"].as_u64().unwrap() >= 1, "{status}");
}

/// A recording of opencode's newer layout (`session_message`): its rows
/// counted by the manifest.
fn opencode_v2_matches(s: &TestServer, m: &Value, db: &Path, sum: &Value) {
    let e = &m["expect_session_message"];
    let conn = rusqlite::Connection::open(db).unwrap();
    let sid: String = conn
        .query_row("SELECT DISTINCT session_id FROM session_message", [], |r| {
            r.get(0)
        })
        .unwrap();
    let id = format!("opencode-{sid}");
    let all = nodes(s, &id);
    let users: Vec<String> = of_role(&all, "user").into_iter().map(text).collect();
    let prompts: Vec<String> = e["user_prompts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap().to_string())
        .collect();
    assert_eq!(users, prompts, "session_message: {id}");
    assert_eq!(
        of_role(&all, "assistant").len() as u64,
        e["assistant_steps"].as_u64().unwrap()
    );
    let tools = of_role(&all, "tool");
    assert_eq!(tools.len() as u64, e["tool_calls"].as_u64().unwrap());
    let results = tools.iter().filter(|n| !n["output"].is_null()).count();
    assert_eq!(results as u64, e["tool_results"].as_u64().unwrap());
    let names: Vec<&str> = tools.iter().map(|n| n["name"].as_str().unwrap()).collect();
    let want: Vec<&str> = e["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    assert_eq!(names, want);
    assert_eq!(commits(s, &id).len(), prompts.len(), "one commit per turn");
    assert_eq!(sum["turns"].as_u64().unwrap() as usize, prompts.len());
    let again = import(s, "opencode", db);
    assert_eq!(again["turns"], 0, "{again}");
    assert_eq!(again["turns_continued"], 0, "{again}");
}

#[test]
fn aider_recordings_import_exactly() {
    for e in std::fs::read_dir(recordings("aider")).unwrap().flatten() {
        let dir = e.path();
        let m = manifest(&dir);
        let scenario = m["scenario"].as_str().unwrap().to_string();
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        lay_out(&dir.join("files"), &home, &home);
        let project = home.join("project");
        let s = TestServer::start();
        let sum = import(&s, "aider", &project);
        let expect = &m["expect"];
        let (_, list) = s.get("/api/sessions?limit=100");
        let mut sessions: Vec<Value> = list["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["source"] == "aider")
            .cloned()
            .collect();
        sessions.sort_by(|a, b| {
            a["created_at"]
                .as_f64()
                .unwrap()
                .total_cmp(&b["created_at"].as_f64().unwrap())
        });
        let per = expect["per_session"].as_array().unwrap();
        assert_eq!(sessions.len(), per.len(), "{scenario}: {list}");
        let mut turns = 0;
        for (row, want) in sessions.iter().zip(per) {
            let id = row["id"].as_str().unwrap();
            let all = nodes(&s, id);
            let prompts: Vec<String> = of_role(&all, "user").into_iter().map(text).collect();
            let want_prompts: Vec<String> = want["prompts"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| p.as_str().unwrap().to_string())
                .collect();
            assert_eq!(prompts, want_prompts, "{scenario}: {id}");
            let replies: Vec<String> = of_role(&all, "assistant").into_iter().map(text).collect();
            let want_replies: Vec<String> = want["assistant_replies"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| rewrite(p.as_str().unwrap(), &home))
                .collect();
            assert_eq!(
                replies, want_replies,
                "{scenario}: {id}: a quote in a reply stays in it"
            );
            let made = commits(&s, id);
            assert_eq!(made.len(), want_prompts.len(), "{scenario}: {id}");
            turns += made.len();
        }
        assert_eq!(sum["turns"].as_u64().unwrap() as usize, turns, "{scenario}");
        let again = import(&s, "aider", &project);
        assert_eq!(again["turns"], 0, "{scenario}: {again}");
        assert_eq!(again["turns_continued"], 0, "{scenario}: {again}");
    }
}

/// opencode's database as the tool writes it: the schema of a recording's
/// dump, then its rows inserted, updated and deleted in the tool's order
/// and pace (each gap kept up to `cap`).
fn replay_rows(dir: &Path, db: &Path, home: &Path, cap: Duration) {
    std::fs::create_dir_all(db.parent().unwrap()).unwrap();
    let sql = std::fs::read_to_string(dir.join("files/opencode.sql")).unwrap();
    let conn = rusqlite::Connection::open(db).unwrap();
    conn.execute_batch("PRAGMA foreign_keys = OFF; PRAGMA journal_mode = WAL;")
        .unwrap();
    conn.execute_batch(&rewrite(&sql, home)).unwrap();
    let tables: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    for t in &tables {
        conn.execute(&format!("DELETE FROM \"{t}\""), []).unwrap();
    }
    let value = |v: &Value| -> rusqlite::types::Value {
        use rusqlite::types::Value as V;
        match v {
            Value::Null => V::Null,
            Value::Bool(b) => V::Integer(i64::from(*b)),
            Value::Number(n) => n
                .as_i64()
                .map(V::Integer)
                .unwrap_or_else(|| V::Real(n.as_f64().unwrap_or(0.0))),
            Value::String(s) => V::Text(rewrite(s, home)),
            other => V::Text(rewrite(&other.to_string(), home)),
        }
    };
    let text = std::fs::read_to_string(dir.join("writes.jsonl")).unwrap();
    let mut last = 0u64;
    for line in text.lines() {
        let w: Value = serde_json::from_str(line).unwrap();
        let t = w["t_ms"].as_u64().unwrap();
        std::thread::sleep(Duration::from_millis(t.saturating_sub(last)).min(cap));
        last = t;
        let table = w["table"].as_str().unwrap();
        let rowid = w["rowid"].as_i64().unwrap();
        let row = w["row"].as_object().cloned().unwrap_or_default();
        let cols: Vec<&String> = row.keys().collect();
        let vals: Vec<rusqlite::types::Value> = row.values().map(value).collect();
        match w["op"].as_str().unwrap() {
            "insert" => {
                let names: Vec<String> = cols.iter().map(|c| format!("\"{c}\"")).collect();
                let marks = vec!["?"; cols.len() + 1].join(", ");
                let sql = format!(
                    "INSERT OR REPLACE INTO \"{table}\" (rowid, {}) VALUES ({marks})",
                    names.join(", ")
                );
                let mut params = vec![rusqlite::types::Value::Integer(rowid)];
                params.extend(vals);
                conn.execute(&sql, rusqlite::params_from_iter(params))
                    .unwrap();
            }
            "update" => {
                let sets: Vec<String> = cols.iter().map(|c| format!("\"{c}\" = ?")).collect();
                let sql = format!("UPDATE \"{table}\" SET {} WHERE rowid = ?", sets.join(", "));
                let mut params = vals;
                params.push(rusqlite::types::Value::Integer(rowid));
                conn.execute(&sql, rusqlite::params_from_iter(params))
                    .unwrap();
            }
            "delete" => {
                conn.execute(&format!("DELETE FROM \"{table}\" WHERE rowid = ?"), [rowid])
                    .unwrap();
            }
            other => panic!("unknown row change {other}"),
        }
    }
}

/// opencode written as it writes (a tool step's message finished just
/// before the answer's message is made; a slow step) into a database a
/// server mirrors: in the end the mirror holds what a batch import holds.
#[test]
fn the_opencode_mirror_keeps_the_answer_after_a_tool_step() {
    for scenario in ["multi_turn_tools", "slow_step"] {
        let dir = recordings("opencode").join(scenario);
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        std::fs::create_dir_all(home.join("project")).unwrap();
        let data = home.join(".local/share");
        let db = data.join("opencode/opencode.db");
        let s = TestServer::start_with_env(&[
            ("XDG_DATA_HOME", data.to_str().unwrap()),
            ("HOME", home.to_str().unwrap()),
            ("OPENPROGRAM_IMPORT_WATCH", "opencode"),
            ("OPENPROGRAM_IMPORT_SETTLE_S", "1"),
        ]);
        replay_rows(&dir, &db, &home, Duration::from_secs(10));
        let batch = TestServer::start();
        import(&batch, "opencode", &db);
        let want = everything(&batch, "opencode");
        assert!(!want.is_empty());
        let start = std::time::Instant::now();
        loop {
            let got = everything(&s, "opencode");
            if got == want {
                break;
            }
            assert!(
                start.elapsed() < Duration::from_secs(40),
                "opencode/{scenario}: the mirror holds\n{got:#?}\nthe batch import\n{want:#?}\nlog:\n{}",
                s.log()
            );
            std::thread::sleep(Duration::from_millis(250));
        }
    }
}
