//! Replication to real git servers on loopback (a bare repository over
//! `file://`, `git daemon`, `git http-backend` behind lighttpd with basic
//! auth): every acknowledged turn reaches the remote, faults (a remote
//! down, refusing, diverged, slow, a server killed mid-push) lose nothing
//! and never overwrite the remote, and `restore` gives the sessions back.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::git_servers::{bare, free_port, pre_receive, refs, self_signed, GitDaemon, HttpGit};
use crate::helpers::{git, node_ids, Options, TestServer};

fn config(dir: &Path, body: &str) -> String {
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join("config.toml");
    std::fs::write(&path, body).unwrap();
    path.display().to_string()
}

fn server(config: &str, extra: &[(&str, &str)]) -> TestServer {
    let mut env: Vec<(&str, &str)> = vec![("OPENPROGRAM_CONFIG", config)];
    env.extend_from_slice(extra);
    TestServer::start_with(Options {
        env: &env,
        ..Options::default()
    })
}

/// Wait (up to 30 s) until `what` holds.
fn wait_for(s: &TestServer, what: &str, mut ok: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !ok() {
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {what}; replication: {}\n{}",
            s.get("/api/replication").1,
            s.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn remote0(s: &TestServer) -> Value {
    s.get("/api/replication").1["remotes"][0].clone()
}

/// Local `refs/heads/*` of a session, as (branch ref, oid).
fn local_heads(s: &TestServer, id: &str) -> Vec<(String, String)> {
    refs(&s.session_dir(id), "refs/heads")
}

/// The session's branches on a shared-layout remote, as local names.
fn remote_heads(repo: &Path, id: &str) -> Vec<(String, String)> {
    let prefix = format!("refs/sessions/{id}/");
    refs(repo, &prefix)
        .into_iter()
        .map(|(n, o)| (format!("refs/{}", n.strip_prefix(&prefix).unwrap()), o))
        .collect()
}

fn turn(s: &TestServer, id: &str, n: u32) -> Value {
    s.append(
        id,
        json!({"id": format!("u{n}"), "role": "user", "content": format!("question {n}")}),
    );
    s.append(
        id,
        json!({"id": format!("a{n}"), "role": "assistant", "content": format!("answer {n}")}),
    );
    s.post(&format!("/api/sessions/{id}/turns"), json!({})).1
}

#[test]
fn a_file_remote_gets_every_branch_and_restore_gives_the_sessions_back() {
    let tmp = tempfile::tempdir().unwrap();
    let remote = bare(&tmp.path().join("memory.git"));
    let url = format!("file://{}", remote.display());
    let cfg = config(
        tmp.path(),
        &format!("[[replication.remotes]]\nname = \"disk\"\nurl = \"{url}\"\n"),
    );
    let s = server(&cfg, &[]);
    for n in 1..=3 {
        assert!(turn(&s, "rs", n)["commit"].is_string());
    }
    // A retry branch, a title and a pin (committed with the next turn).
    s.append(
        "rs",
        json!({"id": "a3b", "role": "assistant", "predecessor": "u3", "content": "again"}),
    );
    s.end_turn("rs", json!({}));
    let (st, _) = s.patch(
        "/api/sessions/rs",
        json!({"title": "Restored title", "pinned": true}),
    );
    assert_eq!(st, 200);
    turn(&s, "rs", 4);
    turn(&s, "other", 1);
    wait_for(&s, "every branch on the remote", || {
        remote_heads(&remote, "rs") == local_heads(&s, "rs")
            && remote_heads(&remote, "other") == local_heads(&s, "other")
            && remote0(&s)["queue"] == 0
    });
    let heads = local_heads(&s, "rs");
    assert!(
        heads
            .iter()
            .any(|(b, _)| b.starts_with("refs/heads/retry-")),
        "{heads:?}"
    );
    let (_, session) = s.get("/api/sessions/rs");
    let head = git(&s.session_dir("rs"), &["rev-parse", "HEAD"]);
    assert_eq!(session["replication"][0]["remote"], "disk");
    assert_eq!(session["replication"][0]["commit"], head.trim());
    assert_eq!(session["replication"][0]["pending"], false);
    let r = remote0(&s);
    assert_eq!(
        (r["mode"].as_str(), r["layout"].as_str()),
        (Some("async"), Some("shared"))
    );
    assert!(
        r["pushes"].as_u64().unwrap() >= 1 && r["failures"] == 0,
        "{r}"
    );

    // The CLI says the same.
    let (code, out, err) = s.cli(&["replication", "status"], None);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("disk") && out.contains("queue 0"), "{out}");
    let (code, out, err) = s.cli(
        &[
            "fsck",
            "--state-dir",
            s.state_dir.to_str().unwrap(),
            "--remote",
            &url,
        ],
        None,
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("every session's branches are on"), "{out}");

    let messages = s.get("/api/sessions/rs/messages").1;
    let titled = s.get("/api/sessions/rs").1;
    let log_all = git(&s.session_dir("rs"), &["log", "--all", "--format=%H %s"]);

    // Deleted here: its remote copy stays (delete_remote is off).
    let (st, _) = s.raw_delete("/api/sessions/other");
    assert!(st == 200 || st == 204, "{st}");

    // Restore into a new state directory, then serve it.
    let target = tmp.path().join("restored");
    let (code, out, err) = s.cli(
        &[
            "restore",
            "--state-dir",
            target.to_str().unwrap(),
            "--from",
            &url,
        ],
        None,
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("restored 2 sessions"), "{out}");
    let (code, out, _) = s.cli(
        &[
            "restore",
            "--state-dir",
            target.to_str().unwrap(),
            "--from",
            &url,
        ],
        None,
    );
    assert_eq!(code, 0);
    assert!(out.contains("restored 0 sessions; 2 already here"), "{out}");
    let r = TestServer::start_with(Options {
        prepare: Some(&|state: &Path| {
            std::fs::rename(&target, state).unwrap();
        }),
        ..Options::default()
    });
    assert_eq!(r.get("/api/sessions/rs/messages").1, messages);
    let again = r.get("/api/sessions/rs").1;
    for key in ["title", "pinned", "turn_count", "head", "created_at"] {
        assert_eq!(again[key], titled[key], "{key}");
    }
    assert_eq!(
        git(&r.session_dir("rs"), &["log", "--all", "--format=%H %s"]),
        log_all
    );
    assert_eq!(local_heads(&r, "rs"), heads);
    let (_, list) = r.get("/api/sessions");
    let ids: Vec<&str> = list["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|x| x["id"].as_str())
        .collect();
    assert!(ids.contains(&"rs") && ids.contains(&"other"), "{list}");
    // The restored server writes on.
    assert!(turn(&r, "rs", 5)["commit"].is_string());
}

#[test]
fn a_sync_remote_down_answers_503_keeps_the_turn_and_catches_up() {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().join("srv");
    let repo = bare(&base.join("memory.git"));
    let port = free_port();
    let cfg = config(
        tmp.path(),
        &format!(
            "[[replication.remotes]]\nname = \"daemon\"\nurl = \"git://127.0.0.1:{port}/memory.git\"\nmode = \"sync\"\n"
        ),
    );
    let s = server(&cfg, &[]);
    // The remote is down: the turn is committed here, the answer says so.
    s.append("sy", json!({"id": "u1", "role": "user", "content": "q1"}));
    s.append(
        "sy",
        json!({"id": "a1", "role": "assistant", "content": "r1"}),
    );
    let (st, v) = s.post("/api/sessions/sy/turns", json!({}));
    assert_eq!(st, 503, "{v}");
    assert_eq!(v["code"], "replication_pending");
    assert_eq!(v["remote"], "daemon");
    let local = local_heads(&s, "sy");
    assert_eq!(local.len(), 1);
    assert_eq!(s.get("/api/sessions/sy").1["turn_count"], 1);
    assert!(s.get("/api/sessions/sy").1["replication"][0]["error"]["message"].is_string());

    // The remote comes back: the queue drains on its own.
    let _daemon = GitDaemon::start(&base, port);
    wait_for(&s, "the pending turn pushed", || {
        remote_heads(&repo, "sy") == local_heads(&s, "sy")
    });
    // The client repeats its end of turn: now it is acknowledged.
    let (st, again) = s.post("/api/sessions/sy/turns", json!({"turn": 1}));
    assert_eq!(st, 200, "{again}");
    assert_eq!(again["commit"].as_str(), Some(local[0].1.as_str()));
    // Now a turn is on the remote when its end is acknowledged.
    let t2 = turn(&s, "sy", 2);
    assert!(t2["commit"].is_string(), "{t2}");
    assert_eq!(remote_heads(&repo, "sy"), local_heads(&s, "sy"));

    // A slow remote: the end of turn waits for it.
    let gate = tmp.path().join("gate");
    pre_receive(
        &repo,
        Some(&format!(
            "while [ ! -e {} ]; do sleep 0.05; done",
            gate.display()
        )),
    );
    s.append("sy", json!({"id": "u3", "role": "user", "content": "q3"}));
    s.append(
        "sy",
        json!({"id": "a3", "role": "assistant", "content": "r3"}),
    );
    let url = s.url.clone();
    let waiting = std::thread::spawn(move || {
        let r = ureq::post(&format!("{url}/api/sessions/sy/turns")).send_json(json!({}));
        r.map(|r| r.status()).unwrap_or_else(|e| match e {
            ureq::Error::Status(c, _) => c,
            _ => 0,
        })
    });
    std::thread::sleep(Duration::from_millis(800));
    assert!(
        !waiting.is_finished(),
        "a sync end of turn waits for the remote"
    );
    std::fs::write(&gate, "").unwrap();
    assert_eq!(waiting.join().unwrap(), 201);
    assert_eq!(remote_heads(&repo, "sy"), local_heads(&s, "sy"));
}

#[test]
fn http_backend_with_basic_auth_survives_bad_credentials_refusal_divergence_and_a_kill_mid_push() {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().join("srv");
    let repo = bare(&base.join("memory.git"));
    let Some(http) = HttpGit::start(&base, &tmp.path().join("lighttpd"), "ada", "s3cret-pw") else {
        return;
    };
    let cfg = config(
        tmp.path(),
        &format!(
            "[[replication.remotes]]\nname = \"web\"\nurl = \"http://127.0.0.1:{}/git/memory.git\"\nusername = \"ada\"\ntoken_env = \"OP_TEST_GIT_TOKEN\"\n",
            http.port
        ),
    );
    // A wrong password: every push fails, the password is never shown.
    let mut s = server(&cfg, &[("OP_TEST_GIT_TOKEN", "wrong-pw-1")]);
    turn(&s, "hb", 1);
    wait_for(&s, "the failure reported", || {
        remote0(&s)["failures"].as_u64() > Some(0)
    });
    let shown = s.get("/api/replication").1.to_string() + &s.get("/api/sessions/hb").1.to_string();
    assert!(
        !shown.contains("wrong-pw-1") && !s.log().contains("wrong-pw-1"),
        "{shown}"
    );
    assert!(refs(&repo, "refs/sessions").is_empty());

    // Killed with the push pending; restarted with the right token: the
    // saved queue is pushed.
    s.kill();
    s.env.retain(|(k, _)| k != "OP_TEST_GIT_TOKEN");
    s.env.push(("OP_TEST_GIT_TOKEN".into(), "s3cret-pw".into()));
    s.spawn();
    wait_for(&s, "the queue pushed after the restart", || {
        remote_heads(&repo, "hb") == local_heads(&s, "hb")
    });
    assert!(!s.log().contains("s3cret-pw"));

    // An async remote never holds an end of turn: with the remote stuck
    // in its hook, turns are acknowledged; killed there, nothing is lost.
    let gate = tmp.path().join("gate");
    pre_receive(
        &repo,
        Some(&format!(
            "while [ ! -e {} ]; do sleep 0.05; done",
            gate.display()
        )),
    );
    turn(&s, "hb", 2);
    turn(&s, "hb", 3);
    wait_for(&s, "a push waiting in the hook", || {
        std::process::Command::new("pgrep")
            .args(["-f", "pre-receive"])
            .stdout(std::process::Stdio::null())
            .status()
            .map(|x| x.success())
            .unwrap_or(false)
    });
    s.kill();
    std::fs::write(&gate, "").unwrap();
    pre_receive(&repo, None);
    s.spawn();
    wait_for(&s, "every turn pushed after the kill", || {
        remote_heads(&repo, "hb") == local_heads(&s, "hb")
    });

    // A remote that refuses: reported, retried, then taken.
    pre_receive(&repo, Some("echo 'no pushes today' >&2; exit 1"));
    turn(&s, "hb", 4);
    wait_for(&s, "the refusal reported", || {
        s.get("/api/sessions/hb").1["replication"][0]["error"]["code"] == "refused"
    });
    pre_receive(&repo, None);
    wait_for(&s, "the refused turn pushed", || {
        remote_heads(&repo, "hb") == local_heads(&s, "hb")
    });

    // Diverged: someone else moved the remote branch. Reported, never
    // overwritten.
    let other = tmp.path().join("other");
    git(
        tmp.path(),
        &["init", "-q", "-b", "main", other.to_str().unwrap()],
    );
    std::fs::write(other.join("x"), "x").unwrap();
    git(&other, &["add", "x"]);
    git(
        &other,
        &[
            "-c",
            "user.name=o",
            "-c",
            "user.email=o@o",
            "commit",
            "-qm",
            "foreign",
        ],
    );
    let foreign = git(&other, &["rev-parse", "HEAD"]).trim().to_string();
    git(
        &other,
        &[
            "push",
            "-q",
            "--force",
            repo.to_str().unwrap(),
            "HEAD:refs/sessions/hb/heads/main",
        ],
    );
    turn(&s, "hb", 5);
    wait_for(&s, "the divergence reported", || {
        s.get("/api/sessions/hb").1["replication"][0]["error"]["code"] == "diverged"
    });
    std::thread::sleep(Duration::from_millis(1500));
    let on_remote = remote_heads(&repo, "hb");
    assert!(
        on_remote.contains(&("refs/heads/main".to_string(), foreign.clone())),
        "{on_remote:?}"
    );
    let (code, out, _) = s.cli(
        &[
            "fsck",
            "--state-dir",
            s.state_dir.to_str().unwrap(),
            "--remote",
            &format!("file://{}", repo.display()),
        ],
        None,
    );
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("refs/heads/main differs"), "{out}");
}

#[test]
fn a_deleted_session_leaves_the_remote_only_when_asked_and_push_all_catches_up_a_new_remote() {
    let tmp = tempfile::tempdir().unwrap();
    let a = bare(&tmp.path().join("a.git"));
    let cfg = config(
        tmp.path(),
        &format!(
            "[replication]\ndelete_remote = true\n[[replication.remotes]]\nname = \"a\"\nurl = \"file://{}\"\n",
            a.display()
        ),
    );
    let mut s = server(&cfg, &[]);
    turn(&s, "d1", 1);
    turn(&s, "d2", 1);
    wait_for(&s, "both pushed", || {
        remote_heads(&a, "d1").len() == 1 && remote_heads(&a, "d2").len() == 1
    });
    let (st, _) = s.raw_delete("/api/sessions/d1");
    assert!(st == 200 || st == 204);
    wait_for(&s, "the deleted session's refs removed", || {
        remote_heads(&a, "d1").is_empty()
    });
    assert_eq!(remote_heads(&a, "d2").len(), 1);

    // A second remote added later catches up by itself; push --all queues
    // everything again after its data was lost.
    let b = bare(&tmp.path().join("b.git"));
    std::fs::write(
        &cfg,
        format!(
            "[replication]\ndelete_remote = true\n[[replication.remotes]]\nname = \"a\"\nurl = \"file://{}\"\n[[replication.remotes]]\nname = \"b\"\nurl = \"file://{}\"\n",
            a.display(),
            b.display()
        ),
    )
    .unwrap();
    s.kill();
    s.spawn();
    wait_for(&s, "the new remote caught up", || {
        remote_heads(&b, "d2").len() == 1
    });
    std::fs::remove_dir_all(&b).unwrap();
    bare(&b);
    let (code, out, err) = s.cli(&["replication", "push", "--all", "--remote", "b"], None);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("1 sessions queued"), "{out}");
    wait_for(&s, "push --all", || remote_heads(&b, "d2").len() == 1);
    let (st, v) = s.post("/api/replication/push", json!({"remote": "nope"}));
    assert_eq!((st, v["code"].as_str()), (404, Some("unknown_remote")));
}

#[test]
fn a_per_session_remote_is_a_clone_of_the_session_and_restores_by_name() {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().join("per");
    // The server makes no repository on the remote: they exist beforehand.
    let one = bare(&base.join("ps1.git"));
    let cfg = config(
        tmp.path(),
        &format!(
            "[[replication.remotes]]\nname = \"per\"\nurl = \"file://{}/{{session_id}}.git\"\nmode = \"sync\"\n",
            base.display()
        ),
    );
    let s = server(&cfg, &[]);
    turn(&s, "ps1", 1);
    turn(&s, "ps1", 2);
    // Synchronous: on the remote as the turn is acknowledged, under the
    // session's own branch names.
    assert_eq!(refs(&one, "refs/heads"), local_heads(&s, "ps1"));
    assert_eq!(remote0(&s)["layout"], "per_session");
    let clone = tmp.path().join("clone");
    git(
        tmp.path(),
        &[
            "clone",
            "-q",
            one.to_str().unwrap(),
            clone.to_str().unwrap(),
        ],
    );
    assert!(clone.join("meta.json").is_file());
    assert_eq!(
        git(&clone, &["log", "--format=%H"]),
        git(&s.session_dir("ps1"), &["log", "--format=%H"])
    );
    // A session whose repository is missing there: the turn is kept here
    // and the answer says the remote did not take it.
    s.append("ps2", json!({"role": "user", "content": "q"}));
    let (st, v) = s.post("/api/sessions/ps2/turns", json!({}));
    assert_eq!(
        (st, v["code"].as_str()),
        (503, Some("replication_pending")),
        "{v}"
    );

    let url = format!("file://{}/{{session_id}}.git", base.display());
    let target = tmp.path().join("restored");
    let (code, _, err) = s.cli(
        &[
            "restore",
            "--state-dir",
            target.to_str().unwrap(),
            "--from",
            &url,
        ],
        None,
    );
    assert_eq!(code, 1, "a per-session remote cannot be listed: {err}");
    assert!(err.contains("--session"), "{err}");
    let (code, out, err) = s.cli(
        &[
            "restore",
            "--state-dir",
            target.to_str().unwrap(),
            "--from",
            &url,
            "--session",
            "ps1",
        ],
        None,
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("restored 1 sessions"), "{out}");
    assert_eq!(
        git(&target.join("sessions/ps1"), &["log", "--format=%H"]),
        git(&s.session_dir("ps1"), &["log", "--format=%H"])
    );
}

/// Over https the server's certificate is checked against the bundle
/// `SSL_CERT_FILE` names (loaded at the first https connection, not at
/// the start): a server that does not trust the remote's certificate
/// pushes nothing and says why; one that does pushes every turn.
#[test]
fn an_https_remote_is_pushed_to_only_when_its_certificate_is_trusted() {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().join("srv");
    let repo = bare(&base.join("memory.git"));
    let Some((cert, key)) = self_signed(&tmp.path().join("tls")) else {
        return;
    };
    let Some(other) = self_signed(&tmp.path().join("other")) else {
        return;
    };
    let Some(https) = HttpGit::start_tls(
        &base,
        &tmp.path().join("lighttpd"),
        "ada",
        "s3cret-pw",
        (&cert, &key),
    ) else {
        return;
    };
    let cfg = config(
        tmp.path(),
        &format!(
            "[[replication.remotes]]\nname = \"tls\"\nurl = \"https://127.0.0.1:{}/git/memory.git\"\nusername = \"ada\"\ntoken_env = \"OP_TEST_GIT_TOKEN\"\n",
            https.port
        ),
    );
    // Another authority's certificate as the bundle: refused.
    let other_cert = other.0.display().to_string();
    let s = server(
        &cfg,
        &[
            ("OP_TEST_GIT_TOKEN", "s3cret-pw"),
            ("SSL_CERT_FILE", &other_cert),
        ],
    );
    turn(&s, "tls1", 1);
    wait_for(&s, "the failure reported", || {
        remote0(&s)["failures"].as_u64() > Some(0)
    });
    assert!(refs(&repo, "refs/sessions").is_empty());
    drop(s);
    // The remote's own certificate as the bundle: pushed.
    let trusted = cert.display().to_string();
    let s = server(
        &cfg,
        &[
            ("OP_TEST_GIT_TOKEN", "s3cret-pw"),
            ("SSL_CERT_FILE", &trusted),
        ],
    );
    turn(&s, "tls2", 1);
    wait_for(&s, "the turn pushed over https", || {
        !local_heads(&s, "tls2").is_empty()
            && remote_heads(&repo, "tls2") == local_heads(&s, "tls2")
    });
}

/// The state folder lost, restored from a remote: the projects its
/// sessions were bound to are listed again (same id, name and folder),
/// with their sessions.
#[test]
fn a_restore_lists_the_projects_of_the_restored_sessions_again() {
    let tmp = tempfile::tempdir().unwrap();
    let remote = bare(&tmp.path().join("memory.git"));
    let url = format!("file://{}", remote.display());
    let cfg = config(
        tmp.path(),
        &format!("[[replication.remotes]]\nname = \"disk\"\nurl = \"{url}\"\n"),
    );
    let s = server(&cfg, &[]);
    let work = tmp.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    git(&work, &["init", "-q", "-b", "main"]);
    let (st, p) = s.post("/api/projects", json!({"path": work, "name": "Workbench"}));
    assert_eq!(st, 201, "{p}");
    let pid = p["id"].as_str().unwrap().to_string();
    s.append(
        "bound",
        json!({"id": "u1", "role": "user", "content": "in the project", "session": {"project_id": pid}}),
    );
    s.append(
        "bound",
        json!({"id": "a1", "role": "assistant", "content": "yes"}),
    );
    s.end_turn("bound", json!({}));
    turn(&s, "loose", 1);
    wait_for(&s, "both sessions on the remote", || {
        !remote_heads(&remote, "bound").is_empty()
            && !remote_heads(&remote, "loose").is_empty()
            && remote0(&s)["queue"] == 0
    });

    let target = tmp.path().join("restored");
    let (code, out, err) = s.cli(
        &[
            "restore",
            "--state-dir",
            target.to_str().unwrap(),
            "--from",
            &url,
        ],
        None,
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("restored 2 sessions") && out.contains("1 projects registered again"),
        "{out}"
    );
    let r = TestServer::start_with(Options {
        prepare: Some(&|state: &Path| {
            std::fs::rename(&target, state).unwrap();
        }),
        ..Options::default()
    });
    let (_, list) = r.get("/api/projects");
    let projects = list["projects"]
        .as_array()
        .or(list.as_array())
        .unwrap()
        .clone();
    let project = projects
        .iter()
        .find(|x| x["id"] == pid.as_str())
        .unwrap_or_else(|| panic!("the project is listed again: {list}"));
    assert_eq!(project["name"], "Workbench", "{project}");
    assert_eq!(
        std::fs::canonicalize(project["path"].as_str().unwrap()).unwrap(),
        std::fs::canonicalize(&work).unwrap()
    );
    let (_, session) = r.get("/api/sessions/bound");
    assert_eq!(session["project_id"], pid.as_str());
    let (_, row) = r.get("/api/sessions?limit=10");
    let bound = row["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["id"] == "bound")
        .cloned()
        .unwrap();
    assert_eq!(bound["project"], "Workbench", "{bound}");
}

/// What a session holds but has not committed yet (an open turn's
/// message, a note written after the last commit) reaches the remote
/// within seconds, without the session's repository being written, and a
/// restore brings it back as the same open turn; once the turn commits,
/// the remote's open state goes.
#[test]
fn nodes_not_committed_yet_reach_the_remote_and_come_back_with_a_restore() {
    let tmp = tempfile::tempdir().unwrap();
    let remote = bare(&tmp.path().join("memory.git"));
    let url = format!("file://{}", remote.display());
    let cfg = config(
        tmp.path(),
        &format!("[[replication.remotes]]\nname = \"disk\"\nurl = \"{url}\"\n"),
    );
    let s = server(&cfg, &[]);
    turn(&s, "open1", 1);
    s.append(
        "open1",
        json!({"id": "u2", "role": "user", "content": "question 2, not answered yet"}),
    );
    let open_prefix = "refs/sessions/open1/openprogram/open/";
    wait_for(&s, "the open state on the remote", || {
        !refs(&remote, open_prefix).is_empty()
    });
    assert_eq!(
        refs(&remote, open_prefix)[0].0,
        format!("{open_prefix}main")
    );
    let dir = s.session_dir("open1");
    assert!(
        refs(&dir, "refs/openprogram/open").is_empty(),
        "replication writes no ref in the session"
    );
    // The open message is in the work tree only, as without replication.
    assert_eq!(
        git(&dir, &["status", "--porcelain"]).trim(),
        "?? history/00/00/000003-u-u2.json"
    );
    let main_before = git(&dir, &["rev-parse", "main"]);

    let target = tmp.path().join("restored");
    let (code, out, err) = s.cli(
        &[
            "restore",
            "--state-dir",
            target.to_str().unwrap(),
            "--from",
            &url,
        ],
        None,
    );
    assert_eq!(code, 0, "{out}{err}");
    let r = TestServer::start_with(Options {
        prepare: Some(&|state: &Path| {
            std::fs::rename(&target, state).unwrap();
        }),
        ..Options::default()
    });
    let (_, nodes) = r.get("/api/sessions/open1/nodes");
    assert_eq!(node_ids(&nodes), ["u1", "a1", "u2"], "{nodes}");
    let rdir = r.session_dir("open1");
    assert_eq!(git(&rdir, &["rev-parse", "main"]), main_before);
    assert!(refs(&rdir, "refs/openprogram/open").is_empty());
    // The restored open turn goes on where it was.
    r.append(
        "open1",
        json!({"id": "a2", "role": "assistant", "content": "answer 2"}),
    );
    let ended = r.end_turn("open1", json!({}));
    assert_eq!(ended["turn"], 2, "{ended}");
    let subjects = git(&rdir, &["log", "--format=%s", "main"]);
    assert_eq!(subjects.lines().count(), 3, "{subjects}");

    // On the first server the turn ends too: the open state leaves the
    // remote with the next push.
    s.append(
        "open1",
        json!({"id": "a2", "role": "assistant", "content": "answer 2"}),
    );
    s.end_turn("open1", json!({}));
    wait_for(&s, "the open state gone from the remote", || {
        refs(&remote, open_prefix).is_empty()
    });
    assert_eq!(
        remote_heads(&remote, "open1"),
        local_heads(&s, "open1"),
        "the branch itself is pushed as before"
    );
}
