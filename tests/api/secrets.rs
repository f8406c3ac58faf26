//! No secret is kept: realistic fake secrets, made at test time, written
//! through every path that stores text (messages, fills, tool nodes and
//! their metadata, whole turns, titles, queued and channel messages, an
//! import of a real Claude Code recording); afterwards no file under the
//! state directory and no git object holds any of them, and the
//! conversation reads back with placeholders. A project that refuses
//! secrets gets a 400 `secret_refused` and nothing is written.

use std::path::Path;
use std::process::Command;

use serde_json::{json, Value};

use crate::helpers::{git, Options, TestServer};

/// Fake secrets of several kinds, from `seed` (never real, never fixed in
/// the source): AWS, GitHub, Stripe, Slack, a URL's password and a
/// connection string's.
fn fake_secrets(seed: u64) -> Vec<String> {
    let all = openprogram_actors::redact::fake::fake_secrets(seed);
    ["aws", "github", "stripe", "slack", "url", "connection"]
        .iter()
        .filter_map(|k| all.iter().find(|f| f.kind == *k))
        .map(|f| f.secret.clone())
        .collect()
}

/// Texts holding the secrets as a tool would print them.
fn leaky(s: &[String]) -> Vec<String> {
    vec![
        format!("export AWS_ACCESS_KEY_ID={}", s[0]),
        format!("token: {}", s[1]),
        format!("STRIPE_KEY={} in .env", s[2]),
        format!("slack bot {}", s[3]),
        format!(
            "DATABASE_URL=postgres://admin:{}@db.internal:5432/app",
            s[4]
        ),
        format!(
            "Server=tcp:sql.example.net,1433;User ID=sa;Password={};",
            s[5]
        ),
    ]
}

/// Every file under `dir` and every git object of every repository in it
/// that holds one of `secrets`: (where, which).
fn leaks(dir: &Path, secrets: &[String]) -> Vec<(String, String)> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    let mut repos = Vec::new();
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                if p.file_name().is_some_and(|n| n == ".git") {
                    repos.push(d.clone());
                }
                stack.push(p);
            } else if let Ok(bytes) = std::fs::read(&p) {
                // Compressed files (packs, zstd segments) are read through
                // git below; the rest as bytes.
                let text = String::from_utf8_lossy(&bytes);
                for s in secrets {
                    if text.contains(s.as_str()) {
                        found.push((p.display().to_string(), s.clone()));
                    }
                }
            }
        }
    }
    for repo in repos {
        let out = Command::new("git")
            .args(["cat-file", "--batch-all-objects", "--batch"])
            .current_dir(&repo)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        for s in secrets {
            if text.contains(s.as_str()) {
                found.push((format!("git objects of {}", repo.display()), s.clone()));
            }
        }
    }
    found
}

fn texts_of(s: &TestServer, id: &str) -> String {
    let (st, v) = s.get(&format!("/api/sessions/{id}/nodes"));
    assert_eq!(st, 200, "{v}");
    v.to_string()
}

#[test]
fn no_secret_written_through_any_path_reaches_a_file_or_a_git_object() {
    let secrets = fake_secrets(42);
    let t = leaky(&secrets);
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let claude = home.join(".claude/projects");
    crate::recordings::lay_out_recording("claude-code/multi_turn_tools", &claude, &home);
    // One more prompt in the recording, as Claude Code writes it.
    let file = crate::recordings::walk_files(&claude)
        .into_iter()
        .find(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .unwrap();
    let body = std::fs::read_to_string(&file).unwrap();
    let records: Vec<Value> = body
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // A prompt record of the tool's own as the template, after its last
    // reply.
    let prompt = records
        .iter()
        .rev()
        .find(|r| r["type"] == "user" && r["message"]["content"].is_string())
        .unwrap();
    let reply = records
        .iter()
        .rev()
        .find(|r| r["type"] == "assistant")
        .unwrap();
    let mut line = prompt.clone();
    line["uuid"] = json!("6d1c8f9e-0000-4000-8000-00000000abcd");
    line["parentUuid"] = reply["uuid"].clone();
    line["timestamp"] = json!("2026-12-07T03:00:00.000Z");
    line["message"] = json!({"role": "user", "content": format!("use this: {}", t[1])});
    std::fs::write(&file, format!("{body}{line}\n")).unwrap();
    // Written long ago: the turn is not still being written.
    std::fs::File::options()
        .write(true)
        .open(&file)
        .unwrap()
        .set_modified(std::time::SystemTime::now() - std::time::Duration::from_secs(3600))
        .unwrap();

    let mut s = TestServer::start_with(Options::default());
    // Messages, a fill, a tool node with output and metadata, the end.
    s.append("leak", json!({"id": "u1", "role": "user", "content": t[0]}));
    s.append(
        "leak",
        json!({"id": "a1", "role": "assistant", "content": ""}),
    );
    let (st, v) = s.patch(
        "/api/sessions/leak/messages/a1",
        json!({"content": format!("found {}", t[2]), "metadata": {"note": t[3]}}),
    );
    assert_eq!(st, 200, "{v}");
    s.append(
        "leak",
        json!({"id": "t1", "role": "tool", "name": "bash", "caller": "a1",
               "content": {"command": "cat .env"}, "output": {"stdout": t[4]},
               "metadata": {"env": t[5]}}),
    );
    s.end_turn("leak", json!({}));
    // A title, and a session made with one.
    let (st, _) = s.patch(
        "/api/sessions/leak",
        json!({"title": format!("key {}", secrets[0])}),
    );
    assert_eq!(st, 200);
    // A whole turn with a new session's title.
    let (st, v) = s.post(
        "/api/sessions/whole/turns",
        json!({"session": {"title": format!("about {}", secrets[1])},
               "nodes": [
                   {"id": "w-u", "role": "user", "content": t[4]},
                   {"id": "w-a", "role": "assistant", "content": t[5]},
                   {"id": "w-t", "role": "tool", "name": "grep", "caller": "w-a",
                    "content": {"q": t[0]}, "output": t[3]}]}),
    );
    assert_eq!(st, 201, "{v}");
    // A channel message, and one queued behind a running turn.
    let (st, v) = s.post(
        "/api/channels/wechat/messages",
        json!({"account_id": "bot", "peer_id": "p1", "text": t[2], "message_id": "m1"}),
    );
    assert_eq!(st, 201, "{v}");
    // An import of a real recording with a secret in a prompt.
    let (st, v) = s.post(
        "/api/imports",
        json!({"tool": "claude-code", "paths": [claude]}),
    );
    assert_eq!(st, 200, "{v}");

    // Read back: placeholders, each recorded with its kind and no secret.
    let leak = texts_of(&s, "leak");
    for secret in &secrets {
        assert!(!leak.contains(secret.as_str()), "{leak}");
    }
    assert!(leak.contains("[REDACTED:"), "{leak}");
    let (_, nodes) = s.get("/api/sessions/leak/nodes");
    let tool = nodes["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["id"] == "t1")
        .unwrap()
        .clone();
    let fields: Vec<&str> = tool["metadata"]["redactions"]
        .as_array()
        .unwrap_or_else(|| panic!("no record: {tool}"))
        .iter()
        .map(|r| r["field"].as_str().unwrap())
        .collect();
    assert!(
        fields.contains(&"/output/stdout") && fields.contains(&"/metadata/env"),
        "{fields:?}"
    );
    let (_, meta) = s.get("/api/sessions/leak");
    assert!(
        meta["title"]
            .as_str()
            .unwrap()
            .starts_with("key [REDACTED:"),
        "{meta}"
    );
    // Search finds the placeholder's kind, never the secret.
    let (_, hits) = s.get(&format!("/api/search?q={}", secrets[1]));
    assert!(!hits.to_string().contains(secrets[1].as_str()), "{hits}");

    // The imported conversation holds the prompt, redacted.
    let (_, list) = s.get("/api/sessions?source=claude-code&limit=10");
    let imported = list["sessions"][0]["id"].as_str().unwrap().to_string();
    let text = texts_of(&s, &imported);
    assert!(
        text.contains("use this: token: [REDACTED:"),
        "the prompt is not in {imported}"
    );

    // Stopped cleanly, so that the list and every index are written.
    assert_eq!(s.terminate(), Some(0));
    // The scan itself finds a secret where there is one.
    let probe = tmp.path().join("probe");
    std::fs::create_dir_all(&probe).unwrap();
    std::fs::write(probe.join("f"), &t[1]).unwrap();
    assert_eq!(leaks(&probe, &secrets).len(), 1);
    let found = leaks(&s.state_dir, &secrets);
    assert!(found.is_empty(), "secrets on disk: {found:#?}");
    // The repository of the session is a normal one.
    git(
        &s.state_dir.join("sessions/leak"),
        &["fsck", "--strict", "--no-dangling"],
    );
}

#[test]
fn a_project_that_refuses_secrets_gets_a_400_and_nothing_is_written() {
    let tmp = tempfile::tempdir().unwrap();
    let work = tmp.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    git(&work, &["init", "-q", "-b", "main"]);
    let cfg = tmp.path().join("config.toml");
    std::fs::write(
        &cfg,
        format!(
            "[[redaction.projects]]\nproject = \"{}\"\nmode = \"refuse\"\n",
            std::fs::canonicalize(&work).unwrap().display()
        ),
    )
    .unwrap();
    let s = TestServer::start_with(Options {
        env: &[("OPENPROGRAM_CONFIG", cfg.to_str().unwrap())],
        ..Options::default()
    });
    let (st, p) = s.post("/api/projects", json!({"path": work, "name": "strict"}));
    assert_eq!(st, 201, "{p}");
    let pid = p["id"].as_str().unwrap();
    let secrets = fake_secrets(7);
    let (st, v) = s.post(
        "/api/sessions/strict/messages",
        json!({"id": "u1", "role": "user", "content": format!("key {}", secrets[0]),
               "session": {"project_id": pid}}),
    );
    assert_eq!(
        (st, v["code"].as_str()),
        (400, Some("secret_refused")),
        "{v}"
    );
    assert!(v["error"].as_str().unwrap().contains("/content"), "{v}");
    assert_eq!(s.get("/api/sessions/strict").0, 404, "no session was made");
    // Without a secret the same message goes through; a later fill with
    // one is refused and the node keeps what it had.
    s.append(
        "strict",
        json!({"id": "u1", "role": "user", "content": "hello", "session": {"project_id": pid}}),
    );
    s.append(
        "strict",
        json!({"id": "a1", "role": "assistant", "content": "hi"}),
    );
    let (st, v) = s.patch(
        "/api/sessions/strict/messages/a1",
        json!({"content": format!("here: {}", secrets[1])}),
    );
    assert_eq!(
        (st, v["code"].as_str()),
        (400, Some("secret_refused")),
        "{v}"
    );
    let text = texts_of(&s, "strict");
    assert!(
        text.contains("\"hi\"") && !text.contains(secrets[1].as_str()),
        "{text}"
    );
    // Elsewhere the default holds: redacted, not refused.
    let v = s.append(
        "loose",
        json!({"id": "u1", "role": "user", "content": format!("key {}", secrets[0])}),
    );
    assert!(
        v["node"]["content"]
            .as_str()
            .unwrap()
            .contains("[REDACTED:"),
        "{v}"
    );
}

/// Written with redaction off, found by the scan: the API and the CLI name
/// the session, the turn, the node and the kind, never the secret.
#[test]
fn a_scan_finds_what_was_stored_before_redaction_and_never_shows_it() {
    let secrets = fake_secrets(11);
    let t = leaky(&secrets);
    let s = TestServer::start_with(Options {
        env: &[("OPENPROGRAM_REDACTION_MODE", "off")],
        ..Options::default()
    });
    s.turn("plain", "hello", "hi", &[]);
    s.append(
        "old",
        json!({"id": "u1", "role": "user", "content": "deploy it"}),
    );
    s.append(
        "old",
        json!({"id": "a1", "role": "assistant", "content": t[0]}),
    );
    s.end_turn("old", json!({}));
    s.append("old", json!({"id": "u2", "role": "user", "content": t[1]}));
    s.append(
        "old",
        json!({"id": "a2", "role": "assistant", "content": "done"}),
    );
    s.end_turn("old", json!({}));

    let (st, report) = s.get("/api/secrets");
    assert_eq!(st, 200, "{report}");
    let text = report.to_string();
    for secret in &secrets {
        assert!(!text.contains(secret.as_str()), "{text}");
    }
    assert_eq!(report["sessions_scanned"], 2, "{report}");
    let sessions = report["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 1, "{report}");
    assert_eq!(sessions[0]["session"], "old");
    let kinds = sessions[0]["kinds"].as_array().unwrap();
    let aws = kinds
        .iter()
        .find(|k| k["kind"].as_str().unwrap().contains("aws"))
        .unwrap_or_else(|| panic!("{report}"));
    assert_eq!(aws["turns"], json!([1]), "{aws}");
    assert_eq!(aws["nodes"], json!(["a1"]), "{aws}");
    assert!(
        kinds
            .iter()
            .any(|k| k["turns"] == json!([2]) && k["nodes"] == json!(["u2"])),
        "{report}"
    );

    let (code, out, err) = s.cli(
        &[
            "secrets",
            "scan",
            "--state-dir",
            s.state_dir.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(code, 1, "a secret found: {out}{err}");
    assert!(
        out.contains("in 1 session") && out.contains("old:"),
        "{out}"
    );
    for secret in &secrets {
        assert!(!out.contains(secret.as_str()), "{out}");
    }
    let (code, out, _) = s.cli(
        &[
            "secrets",
            "scan",
            "--json",
            "--state-dir",
            s.state_dir.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(code, 1);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["sessions"][0]["session"], "old");
}
