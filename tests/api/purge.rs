//! Purge end to end through a real server with two real remotes, a
//! per-session `file://` repository and a `git daemon`: secrets stored with
//! redaction off (messages, a tool's output, a retry branch, a title, an
//! open turn) are gone afterwards from every file of the state directory,
//! every git object here and on the file remote, everything the daemon's
//! refs reach (and a fresh clone of it); `git fsck --strict` is clean
//! everywhere; the session replays with the same nodes, branches, commits
//! per branch, authors, times and trailers; search no longer finds the
//! secret; old commit ids resolve through the record. A remote that moved
//! on is reported and left alone.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::git_servers::{bare, free_port, refs, GitDaemon};
use crate::helpers::{git, Options, TestServer};

fn fake(seed: u64) -> Vec<openprogram_actors::redact::fake::FakeSecret> {
    openprogram_actors::redact::fake::fake_secrets(seed)
}

fn server(dir: &Path, remotes: &str) -> TestServer {
    std::fs::create_dir_all(dir).unwrap();
    let cfg = dir.join("config.toml");
    std::fs::write(&cfg, remotes).unwrap();
    let cfg = cfg.display().to_string();
    TestServer::start_with(Options {
        env: &[
            ("OPENPROGRAM_CONFIG", cfg.as_str()),
            ("OPENPROGRAM_REDACTION_MODE", "off"),
        ],
        ..Options::default()
    })
}

fn wait_for(what: &str, mut ok: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !ok() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Which of `secrets` the bytes of every file under `dir` hold.
fn in_files(dir: &Path, secrets: &[String]) -> Vec<(PathBuf, String)> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if let Ok(bytes) = std::fs::read(&p) {
                let text = String::from_utf8_lossy(&bytes);
                for s in secrets {
                    if text.contains(s.as_str()) {
                        found.push((p.clone(), s.clone()));
                    }
                }
            }
        }
    }
    found
}

/// Every object of the repository at `repo`, whole (`all`), or only
/// those its refs reach.
pub fn objects(repo: &Path, all: bool) -> String {
    let listed = if all {
        None
    } else {
        Some(git(repo, &["rev-list", "--objects", "--all"]))
    };
    let mut cmd = Command::new("git");
    cmd.arg("-C").arg(repo).args(["cat-file", "--batch"]);
    if all {
        cmd.args(["--batch-all-objects", "--unordered"]);
    }
    let mut child = cmd
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        if let Some(listed) = listed {
            for line in listed.lines() {
                let oid = line.split(' ').next().unwrap();
                writeln!(stdin, "{oid}").unwrap();
            }
        }
    }
    let out = child.wait_with_output().unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Authors, times, parents' count and trailers of every commit of every
/// branch, newest first, per branch.
fn history(dir: &Path) -> Vec<(String, String)> {
    refs(dir, "refs/heads")
        .into_iter()
        .map(|(name, _)| {
            let log = git(
                dir,
                &[
                    "log",
                    "--format=%an|%ae|%at|%cn|%ct|%p|%(trailers:only)",
                    &name,
                ],
            );
            // Parents are rewritten: their count is what is compared.
            let log: Vec<String> = log
                .split('\n')
                .map(|l| {
                    let mut parts: Vec<String> = l.split('|').map(str::to_string).collect();
                    if parts.len() > 5 {
                        parts[5] = parts[5].split_whitespace().count().to_string();
                    }
                    parts.join("|")
                })
                .collect();
            (name, log.join("\n"))
        })
        .collect()
}

fn hits(s: &TestServer, q: &str) -> u64 {
    let (st, v) = s.get(&format!("/api/search?q={q}"));
    assert_eq!(st, 200, "{v}");
    v["total"].as_u64().unwrap_or(0)
}

#[test]
fn a_purge_leaves_the_secret_nowhere_here_or_on_the_remotes_and_the_session_replays_as_before() {
    let tmp = tempfile::tempdir().unwrap();
    let per = tmp.path().join("per");
    let file_remote = bare(&per.join("leak.git"));
    let srv = tmp.path().join("srv");
    let daemon_remote = bare(&srv.join("memory.git"));
    let port = free_port();
    let _daemon = GitDaemon::start(&srv, port);
    let s = server(
        &tmp.path().join("cfg"),
        &format!(
            "[[replication.remotes]]\nname = \"disk\"\nurl = \"file://{}/{{session_id}}.git\"\n\n[[replication.remotes]]\nname = \"daemon\"\nurl = \"git://127.0.0.1:{port}/memory.git\"\n",
            per.display()
        ),
    );
    let f = fake(5);
    let text = |k: &str| f.iter().find(|x| x.kind == k).unwrap().text.clone();
    let secrets: Vec<String> = ["aws", "github", "stripe", "slack", "url"]
        .iter()
        .map(|k| f.iter().find(|x| x.kind == *k).unwrap().secret.clone())
        .collect();

    // Turn 1: a user message. Turn 2: a tool's output. A retry of turn 2
    // on its own branch. A title. Turn 3 open, not committed.
    s.append(
        "leak",
        json!({"id": "u1", "role": "user", "content": format!("deploy with {}", text("aws"))}),
    );
    s.append(
        "leak",
        json!({"id": "a1", "role": "assistant", "content": "deploying"}),
    );
    s.end_turn("leak", json!({}));
    s.append(
        "leak",
        json!({"id": "u2", "role": "user", "content": "what is in the env?"}),
    );
    s.append(
        "leak",
        json!({"id": "a2", "role": "assistant", "content": "checking"}),
    );
    s.append(
        "leak",
        json!({"id": "t2", "role": "tool", "name": "bash", "caller": "a2", "content": "env",
               "output": {"stdout": format!("GITHUB_TOKEN={}\nDATABASE_URL={}\n", text("github"), text("url"))}}),
    );
    s.end_turn("leak", json!({}));
    s.append(
        "leak",
        json!({"id": "a2b", "role": "assistant", "predecessor": "u2", "content": format!("the key is {}", text("stripe"))}),
    );
    s.end_turn("leak", json!({}));
    let (st, _) = s.patch(
        "/api/sessions/leak",
        json!({"title": format!("slack {}", text("slack"))}),
    );
    assert_eq!(st, 200);
    s.append(
        "leak",
        json!({"id": "u3", "role": "user", "content": format!("and {} again", text("aws"))}),
    );
    let dir = s.session_dir("leak");
    let local = refs(&dir, "refs/heads");
    assert_eq!(local.len(), 2, "main and the retry branch");
    let shared: Vec<(String, String)> = local
        .iter()
        .map(|(n, o)| (n.replace("refs/", "refs/sessions/leak/"), o.clone()))
        .collect();
    wait_for("both remotes hold the branches", || {
        refs(&file_remote, "refs/heads") == local
            && refs(&daemon_remote, "refs/sessions/leak/heads") == shared
    });
    // The test can fail: the secrets are stored everywhere now.
    assert!(objects(&dir, true).contains(&secrets[0]));
    assert!(objects(&file_remote, true).contains(&secrets[1]));
    assert!(objects(&daemon_remote, false).contains(&secrets[2]));
    wait_for("search finds the key", || hits(&s, &secrets[0]) > 0);

    let before_history = history(&dir);
    let (_, before_nodes) = s.get("/api/sessions/leak/nodes");
    let ids = |v: &Value| -> Vec<String> {
        v["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n["id"].as_str().unwrap().to_string())
            .collect()
    };
    let old_tips: Vec<String> = local.iter().map(|(_, o)| o.clone()).collect();

    let (st, purged) = s.post("/api/sessions/leak/purge", json!({"by": "ada"}));
    assert_eq!(st, 200, "{purged}\n{}", s.log());
    let record = &purged["record"];
    assert_eq!(record["by"], "ada");
    assert_eq!(purged["not_pushed"], json!([]), "{purged}");
    assert!(record["commits"].as_array().unwrap().len() >= 3, "{record}");
    assert!(record["files"].as_u64().unwrap() >= 2, "{record}");
    let kinds = record["kinds"].as_object().unwrap();
    assert!(kinds.keys().any(|k| k.contains("aws")), "{record}");

    // Nothing here holds a secret: the session's objects, every file of
    // the state directory (the log, the search index, index.json once the
    // registry wrote it).
    assert!(objects(&dir, true).contains("[REDACTED:"));
    for secret in &secrets {
        assert!(!objects(&dir, true).contains(secret.as_str()));
    }
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let found = in_files(&s.state_dir, &secrets);
        if found.is_empty() {
            break;
        }
        assert!(Instant::now() < deadline, "still on disk: {found:?}");
        std::thread::sleep(Duration::from_millis(200));
    }
    // The remotes: the file remote keeps no old object; the daemon's refs
    // reach none, nor does a fresh clone of it.
    let now_local = refs(&dir, "refs/heads");
    let now_shared: Vec<(String, String)> = now_local
        .iter()
        .map(|(n, o)| (n.replace("refs/", "refs/sessions/leak/"), o.clone()))
        .collect();
    assert_eq!(refs(&file_remote, "refs/heads"), now_local);
    assert_eq!(refs(&daemon_remote, "refs/sessions/leak/heads"), now_shared);
    let clone = tmp.path().join("clone.git");
    git(
        tmp.path(),
        &[
            "clone",
            "-q",
            "--mirror",
            &format!("git://127.0.0.1:{port}/memory.git"),
            clone.to_str().unwrap(),
        ],
    );
    for secret in &secrets {
        assert!(!objects(&file_remote, true).contains(secret.as_str()));
        assert!(!objects(&daemon_remote, false).contains(secret.as_str()));
        assert!(!objects(&clone, true).contains(secret.as_str()));
    }
    for repo in [&dir, &file_remote, &daemon_remote, &clone] {
        git(repo, &["fsck", "--strict", "--no-progress"]);
    }
    // Here and on the file remote, nothing unreachable is left.
    for repo in [&dir, &file_remote] {
        let fsck = git(
            repo,
            &[
                "fsck",
                "--strict",
                "--unreachable",
                "--dangling",
                "--no-progress",
            ],
        );
        assert_eq!(fsck, "", "{}: {fsck}", repo.display());
    }

    // Replayed as before: the same nodes, branches, commits per branch,
    // authors, times and trailers; the texts with placeholders.
    assert_eq!(history(&dir), before_history);
    let (_, after_nodes) = s.get("/api/sessions/leak/nodes");
    assert_eq!(ids(&after_nodes), ids(&before_nodes));
    let shown = after_nodes.to_string();
    assert!(shown.contains("[REDACTED:"), "{shown}");
    let (_, meta) = s.get("/api/sessions/leak");
    assert!(
        meta["title"].as_str().unwrap().contains("[REDACTED:"),
        "{meta}"
    );
    for secret in &secrets {
        assert!(!shown.contains(secret.as_str()));
        assert!(!meta.to_string().contains(secret.as_str()));
    }
    assert_eq!(
        git(&dir, &["status", "--porcelain", "--untracked-files=no"]),
        ""
    );
    // Search: the key is not found, the rest still is.
    wait_for("search forgets the key", || hits(&s, &secrets[0]) == 0);
    assert!(hits(&s, "deploy") > 0);

    // Old ids resolve through the record; the feed says so.
    let (_, purges) = s.get("/api/sessions/leak/purges");
    let pairs = purges[0]["commits"].as_array().unwrap();
    for old in &old_tips {
        let new = pairs
            .iter()
            .find(|p| p[0] == old.as_str())
            .unwrap_or_else(|| panic!("{old} in {purges}"))[1]
            .as_str()
            .unwrap();
        git(&dir, &["cat-file", "-e", &format!("{new}^{{commit}}")]);
    }
    let (_, feed) = s.get("/api/changes?limit=1000");
    assert!(
        feed["events"].as_array().unwrap().iter().any(|e| {
            e["event"]["kind"] == "session_purged" && e["event"]["purge"] == purges[0]["id"]
        }),
        "{feed}"
    );
    // Nothing left: a second purge changes nothing.
    let (_, again) = s.post("/api/sessions/leak/purge", json!({}));
    assert!(again["record"].is_null(), "{again}");
    // The session goes on, and so do its remotes (fast-forward again).
    s.append(
        "leak",
        json!({"id": "a3", "role": "assistant", "content": "done"}),
    );
    s.end_turn("leak", json!({}));
    let next = refs(&dir, "refs/heads");
    wait_for("the next turn on both remotes", || {
        refs(&file_remote, "refs/heads") == next
    });
}

#[test]
fn a_remote_that_moved_on_is_reported_and_never_overwritten() {
    let tmp = tempfile::tempdir().unwrap();
    let remote = bare(&tmp.path().join("memory.git"));
    let s = server(
        &tmp.path().join("cfg"),
        &format!(
            "[[replication.remotes]]\nname = \"disk\"\nurl = \"file://{}\"\n",
            remote.display()
        ),
    );
    let secret = fake(9).into_iter().find(|f| f.kind == "github").unwrap();
    s.append(
        "moved",
        json!({"id": "u1", "role": "user", "content": format!("token {}", secret.text)}),
    );
    s.append(
        "moved",
        json!({"id": "a1", "role": "assistant", "content": "ok"}),
    );
    s.end_turn("moved", json!({}));
    let target = "refs/sessions/moved/heads/main";
    let tip = refs(&s.session_dir("moved"), "refs/heads/main")[0]
        .1
        .clone();
    wait_for("the remote holds the turn", || {
        refs(&remote, target).first().map(|r| r.1.clone()) == Some(tip.clone())
    });
    // Someone else's commit on the remote's branch.
    let work = tmp.path().join("work");
    git(
        tmp.path(),
        &[
            "clone",
            "-q",
            remote.to_str().unwrap(),
            work.to_str().unwrap(),
        ],
    );
    git(&work, &["fetch", "-q", "origin", &format!("{target}:x")]);
    git(&work, &["checkout", "-q", "x"]);
    std::fs::write(work.join("theirs.txt"), "theirs\n").unwrap();
    git(&work, &["add", "theirs.txt"]);
    git(
        &work,
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@e",
            "commit",
            "-qm",
            "theirs",
        ],
    );
    git(&work, &["push", "-q", "origin", &format!("x:{target}")]);
    let theirs = refs(&remote, target)[0].1.clone();

    let (code, out, err) = s.cli(
        &[
            "purge",
            "moved",
            "--state-dir",
            s.state_dir.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.contains("not pushed") && out.contains("diverged"),
        "{out}"
    );
    assert!(!out.contains(&secret.secret), "{out}");
    // Left alone: still their commit.
    assert_eq!(refs(&remote, target)[0].1, theirs);
    let (_, purges) = s.get("/api/sessions/moved/purges");
    assert!(purges[0]["by"].as_str().unwrap().starts_with("cli:"));
    // Bad input changes nothing.
    let (st, v) = s.post("/api/purge", json!({}));
    assert_eq!(st, 400, "{v}");
    assert_eq!(v["code"], "invalid_body");
    let (st, v) = s.post("/api/sessions/nope/purge", json!({}));
    assert_eq!(st, 404, "{v}");
}

/// A session that arrives whole is redacted as any write is: a git bundle
/// exported by a server that stored a secret (redaction off) and imported
/// by one that redacts; a session of the original's layout, with the
/// secret in its own git history, migrated at startup. A server that
/// refuses secrets refuses the bundle and keeps nothing of it.
#[test]
fn a_bundle_and_a_migrated_session_arrive_redacted_and_a_refusing_server_refuses_the_bundle() {
    let f = fake(13);
    let aws = f.iter().find(|x| x.kind == "aws").unwrap().clone();
    let stripe = f.iter().find(|x| x.kind == "stripe").unwrap().clone();
    let off = TestServer::start_with(Options {
        env: &[("OPENPROGRAM_REDACTION_MODE", "off")],
        ..Options::default()
    });
    off.append(
        "b1",
        json!({"id": "u1", "role": "user", "content": format!("key {}", aws.text)}),
    );
    off.append(
        "b1",
        json!({"id": "a1", "role": "assistant", "content": "ok"}),
    );
    off.end_turn("b1", json!({}));
    let (st, _, bundle) = off.get_bytes("/api/sessions/b1/export");
    assert_eq!(st, 200);
    assert!(objects(&off.session_dir("b1"), true).contains(&aws.secret));

    // The original's layout, the secret in a commit of its own git.
    let prepare = |state: &Path| {
        let d = state.join("sessions/legacy1");
        std::fs::create_dir_all(d.join("history")).unwrap();
        std::fs::write(
            d.join("meta.json"),
            json!({"id": "legacy1", "title": "Original", "created_at": 1.0e9, "updated_at": 1.0e9,
                   "head_id": "o2", "branches": {"main": "o2"}})
            .to_string(),
        )
        .unwrap();
        let node = |seq: u64, id: &str, role: &str, out: String, pred: Option<&str>| {
            json!({"id": id, "created_at": 1.0e9 + seq as f64, "seq": seq, "role": role,
                   "output": out, "predecessor": pred, "metadata": {}})
        };
        std::fs::write(
            d.join("history/0000-u-o1.json"),
            node(0, "o1", "user", format!("use {}", stripe.text), None).to_string(),
        )
        .unwrap();
        std::fs::write(
            d.join("history/0001-l-o2.json"),
            node(1, "o2", "llm", "done".into(), Some("o1")).to_string(),
        )
        .unwrap();
        git(&d, &["init", "-q", "-b", "main"]);
        git(&d, &["add", "-A"]);
        git(
            &d,
            &[
                "-c",
                "user.name=OpenProgram",
                "-c",
                "user.email=openprogram@local",
                "commit",
                "-qm",
                "turn: use it",
            ],
        );
    };
    let on = TestServer::start_with(Options {
        prepare: Some(&prepare),
        ..Options::default()
    });
    let (st, meta) = on.post_raw("/api/sessions/import", "application/x-git-bundle", &bundle);
    assert_eq!(st, 201, "{meta}");
    let dir = on.session_dir(meta["id"].as_str().unwrap());
    assert!(!objects(&dir, true).contains(&aws.secret));
    assert_eq!(in_files(&dir, std::slice::from_ref(&aws.secret)), vec![]);
    let (_, nodes) = on.get(&format!(
        "/api/sessions/{}/nodes",
        meta["id"].as_str().unwrap()
    ));
    assert!(nodes.to_string().contains("[REDACTED:"), "{nodes}");
    git(&dir, &["fsck", "--strict", "--no-progress"]);
    let legacy = on.session_dir("legacy1");
    let (st, nodes) = on.get("/api/sessions/legacy1/nodes");
    assert_eq!(st, 200, "{nodes}");
    assert!(nodes.to_string().contains("[REDACTED:"), "{nodes}");
    assert!(!objects(&legacy, true).contains(&stripe.secret));
    assert_eq!(
        in_files(&legacy, std::slice::from_ref(&stripe.secret)),
        vec![]
    );
    git(&legacy, &["fsck", "--strict", "--no-progress"]);

    let refusing = TestServer::start_with(Options {
        env: &[("OPENPROGRAM_REDACTION_MODE", "refuse")],
        ..Options::default()
    });
    let (st, v) = refusing.post_raw("/api/sessions/import", "application/x-git-bundle", &bundle);
    assert_eq!(st, 400, "{v}");
    assert_eq!(v["code"], "secret_refused", "{v}");
    assert!(!v.to_string().contains(&aws.secret));
    let (_, list) = refusing.get("/api/sessions");
    assert_eq!(list["sessions"].as_array().map(Vec::len), Some(0), "{list}");
    assert_eq!(
        in_files(&refusing.state_dir, std::slice::from_ref(&aws.secret)),
        vec![]
    );
}
