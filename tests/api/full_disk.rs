//! A server started on a disk that is still full: the write-ahead log
//! cannot be put back in place, so the server serves reads, refuses every
//! write with 503 `storage_full`, keeps the log, and never shows a session
//! whose files lack acknowledged writes. Freed space and a restart bring
//! everything back. The disk is a real one: a small tmpfs mounted on the
//! state directory (this needs the right to mount; CI sets
//! `OPENPROGRAM_MOUNT_REQUIRED=1`, elsewhere the test says it skipped).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::json;

use crate::helpers::{Options, TestServer};
use crate::ws::WsClient;

/// Unmounts (lazily) when dropped.
pub(crate) struct Mounted(pub(crate) PathBuf);

impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

pub(crate) fn mount_tmpfs(dir: &Path, size: &str) -> bool {
    std::fs::create_dir_all(dir).unwrap();
    Command::new("mount")
        .args([
            "-t",
            "tmpfs",
            "-o",
            &format!("size={size},mode=0700"),
            "tmpfs",
        ])
        .arg(dir)
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// A server whose state directory is a 48 MB tmpfs (unmounted when the
/// second value is dropped); None, with a line saying the test skipped,
/// where mounting is not allowed (CI requires it).
fn on_a_small_disk(env: &[(&str, &str)]) -> Option<(TestServer, Mounted)> {
    let mounted = std::cell::Cell::new(false);
    let prepare = |state: &Path| mounted.set(mount_tmpfs(state, "48m"));
    let s = TestServer::start_with(Options {
        env,
        prepare: Some(&prepare),
        ..Options::default()
    });
    if !mounted.get() {
        assert!(
            std::env::var_os("OPENPROGRAM_MOUNT_REQUIRED").is_none(),
            "could not mount a tmpfs for the full-disk test"
        );
        eprintln!("skipped: mounting a tmpfs needs the right to mount");
        return None;
    }
    let unmount = Mounted(s.state_dir.clone());
    Some((s, unmount))
}

/// Write zeros into `path` until the disk refuses; the bytes written.
pub(crate) fn fill(path: &Path) -> u64 {
    let mut f = std::fs::File::create(path).unwrap();
    let block = vec![0u8; 64 * 1024];
    let mut written = 0u64;
    loop {
        match f.write(&block) {
            Ok(0) => break,
            Ok(n) => written += n as u64,
            Err(e) => {
                assert_eq!(e.raw_os_error(), Some(libc_enospc()), "{e}");
                break;
            }
        }
    }
    // Small writes until not even one byte fits.
    while f.write(&[0u8; 1]).is_ok_and(|n| n == 1) {
        written += 1;
    }
    written
}

fn libc_enospc() -> i32 {
    28
}

fn segments(state: &Path) -> usize {
    std::fs::read_dir(state.join("wal"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .is_ok_and(|e| e.path().extension().is_some_and(|x| x == "log"))
        })
        .count()
}

#[test]
fn a_server_on_a_full_disk_serves_reads_and_refuses_writes_until_restarted() {
    let Some((mut s, _unmount)) = on_a_small_disk(&[("OPENPROGRAM_WAL_FAULT", "no-checkpoint")])
    else {
        return;
    };

    s.turn("kept", "first question", "first answer", &[]);
    s.turn("waiting", "one", "reply one", &[]);
    s.turn("waiting", "two", "reply two", &[]);
    // Killed with every write still in the log (no checkpoint); a power
    // loss then takes the last meta.json of one session.
    s.kill();
    std::fs::remove_file(s.session_dir("waiting").join("meta.json")).unwrap();
    let logged = segments(&s.state_dir);
    assert!(logged > 0);
    let filler = s.state_dir.join("filler");
    assert!(fill(&filler) > 0);

    // Started on the full disk: on a fixed port (server.json cannot be
    // written either).
    s.env.clear();
    s.bind = format!("127.0.0.1:{}", crate::git_servers::free_port());
    s.spawn();
    let (status, health) = s.get("/api/health");
    assert_eq!(status, 200);
    assert_eq!(health["read_only"], true, "{health}");
    assert_eq!(health["status"], "read_only");

    // Reads: the list, and a session whose files hold everything.
    let (status, list) = s.get("/api/sessions");
    assert_eq!(status, 200, "{list}");
    let ids: Vec<&str> = list["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["id"].as_str())
        .collect();
    assert!(ids.contains(&"kept") && ids.contains(&"waiting"), "{list}");
    let (status, msgs) = s.get("/api/sessions/kept/messages");
    assert_eq!(status, 200, "{msgs}\n{}", s.log());
    assert_eq!(msgs["messages"].as_array().unwrap().len(), 2, "{msgs}");
    let (status, commits) = s.get("/api/sessions/kept/commits");
    assert_eq!(status, 200, "{commits}");

    // The session whose files lack logged writes is not shown without them.
    let (status, body) = s.get("/api/sessions/waiting/messages");
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["code"], "storage_full", "{body}");
    assert!(
        body["error"].as_str().unwrap().contains("restart"),
        "{body}"
    );

    // Every write is refused clearly, and nothing changes.
    for (path, body) in [
        (
            "/api/sessions/kept/messages",
            json!({"role": "user", "content": "more"}),
        ),
        (
            "/api/sessions/new-one/messages",
            json!({"role": "user", "content": "hello"}),
        ),
        ("/api/sessions/kept/turns", json!({})),
    ] {
        let (status, v) = s.post(path, body);
        assert_eq!(status, 503, "{path}: {v}");
        assert_eq!(v["code"], "storage_full", "{path}: {v}");
        assert!(v["error"].as_str().unwrap().contains("reads only"), "{v}");
    }
    let (status, v) = s.patch("/api/sessions/kept", json!({"title": "renamed"}));
    assert_eq!(status, 503, "{v}");
    let mut ws = WsClient::connect(&s);
    ws.send(json!({"action": "rename_session", "session_id": "kept", "title": "by ws"}));
    let err = ws.expect("action_error", |_| true);
    assert_eq!(err["data"]["code"], "storage_full", "{err}");
    let (_, msgs) = s.get("/api/sessions/kept/messages");
    assert_eq!(msgs["messages"].as_array().unwrap().len(), 2);
    assert!(
        !s.session_dir("new-one").exists(),
        "nothing created on a full disk"
    );
    // The log is kept for the next start.
    assert_eq!(segments(&s.state_dir), logged);

    // Space freed, restarted: the log is put back, writes work again.
    s.kill();
    std::fs::remove_file(&filler).unwrap();
    s.bind = "127.0.0.1:0".into();
    s.spawn();
    let (_, health) = s.get("/api/health");
    assert_eq!(health["read_only"], false, "{health}");
    let (status, msgs) = s.get("/api/sessions/waiting/messages");
    assert_eq!(status, 200, "{msgs}");
    assert_eq!(msgs["messages"].as_array().unwrap().len(), 4, "{msgs}");
    s.turn("kept", "after the disk was freed", "fine", &[]);
    let (_, msgs) = s.get("/api/sessions/kept/messages");
    assert_eq!(msgs["messages"].as_array().unwrap().len(), 4);
    for id in ["kept", "waiting"] {
        let fsck = Command::new("git")
            .args(["fsck", "--strict"])
            .current_dir(s.session_dir(id))
            .output()
            .unwrap();
        assert!(fsck.status.success(), "{id}: {fsck:?}");
    }
}

/// A whole turn, its nodes long enough that a filled disk refuses them
/// (its answer as it is: the session is not read after it).
fn whole(s: &TestServer, sid: &str, k: usize) -> (u16, serde_json::Value) {
    s.post_raw(
        &format!("/api/sessions/{sid}/turns"),
        "application/json",
        json!({"nodes": [
            {"id": format!("{sid}-u{k}"), "role": "user", "content": format!("question {k}")},
            {"id": format!("{sid}-a{k}"), "role": "assistant",
             "content": format!("answer {k} {}", "y".repeat(40_000))}]})
        .to_string()
        .as_bytes(),
    )
}

/// The disk fills while whole turns are written (the import's path): each
/// is acknowledged or refused with 503 `storage_full`, and once space is
/// freed every session is served again, without a restart, with exactly
/// the turns that were acknowledged.
#[test]
fn whole_turns_on_a_disk_that_fills_are_served_again_once_space_is_freed() {
    let Some((s, _unmount)) = on_a_small_disk(&[]) else {
        return;
    };
    let sessions = ["w1", "w2", "w3", "w4"];
    let mut acked: std::collections::BTreeMap<&str, Vec<usize>> = Default::default();
    for sid in sessions {
        for k in 1..=2 {
            let (st, v) = whole(&s, sid, k);
            assert_eq!(st, 201, "{v}");
            acked.entry(sid).or_default().push(k);
        }
    }
    let filler = s.state_dir.join("filler");
    assert!(fill(&filler) > 0);
    let mut refused = 0;
    for k in 3..=6 {
        for sid in sessions {
            let (st, v) = whole(&s, sid, k);
            match st {
                201 => acked.entry(sid).or_default().push(k),
                503 => {
                    assert_eq!(v["code"], "storage_full", "{v}");
                    refused += 1;
                }
                other => panic!("{sid} turn {k}: {other} {v}\n{}", s.log()),
            }
        }
    }
    assert!(refused > 0, "the disk was full: {acked:?}");
    // The case at stake: turns answered (their log entry durable, in the
    // log's segment made ahead) whose files the full disk then refused.
    let answered_then_refused = s.log().matches("files were not written in place").count();
    assert!(answered_then_refused > 0, "{}", s.log());

    // Space freed; the same server.
    std::fs::remove_file(&filler).unwrap();
    for sid in sessions {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        let users = loop {
            let (st, v) = s.get(&format!("/api/sessions/{sid}/messages"));
            if st == 200 {
                break v["messages"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|m| m["role"] == "user")
                    .map(|m| m["content"].as_str().unwrap().to_string())
                    .collect::<Vec<_>>();
            }
            assert_eq!((st, v["code"].as_str()), (503, Some("storage_full")), "{v}");
            assert!(
                std::time::Instant::now() < deadline,
                "{sid} is served again once space is freed: {v}\n{}",
                s.log()
            );
            std::thread::sleep(std::time::Duration::from_millis(100));
        };
        let expected: Vec<String> = acked[sid].iter().map(|k| format!("question {k}")).collect();
        assert_eq!(users, expected, "{sid}: exactly the acknowledged turns");
        let (st, v) = whole(&s, sid, 7);
        assert_eq!(st, 201, "{sid} takes new turns: {v}");
        let fsck = Command::new("git")
            .args(["fsck", "--strict"])
            .current_dir(s.session_dir(sid))
            .output()
            .unwrap();
        assert!(fsck.status.success(), "{sid}: {fsck:?}");
    }
}

/// Every imported conversation's turn count, by id.
fn imported_turns(s: &TestServer) -> std::collections::BTreeMap<String, u64> {
    let (st, list) = s.get("/api/sessions?source=claude-code&limit=200&include_archived=true");
    assert_eq!(st, 200, "{list}");
    list["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let id = r["id"].as_str().unwrap().to_string();
            let (st, meta) = s.get(&format!("/api/sessions/{id}"));
            assert_eq!(st, 200, "{id}: {meta}");
            (id, meta["turn_count"].as_u64().unwrap())
        })
        .collect()
}

#[test]
fn imports_on_a_disk_that_fills_are_served_again_and_finished_once_space_is_freed() {
    let Some((s, _unmount)) = on_a_small_disk(&[]) else {
        return;
    };
    // The real Claude Code's recordings, outside the full disk.
    let src = tempfile::tempdir().unwrap();
    let names = [
        "compact",
        "edited_prompt",
        "fork_session",
        "killed_then_resumed",
        "multi_turn_tools",
        "slow_step",
        "subagent",
        "titles",
    ];
    let folder = |n: &str| src.path().join("tools").join(n);
    for n in names {
        crate::recordings::lay_out_recording(&format!("claude-code/{n}"), &folder(n), src.path());
    }
    let import = |s: &TestServer, n: &str| {
        s.post(
            "/api/imports",
            json!({"tool": "claude-code", "paths": [folder(n)]}),
        )
    };
    // What an import on an ordinary disk makes of them.
    let reference = TestServer::start();
    for n in names {
        let (st, v) = import(&reference, n);
        assert_eq!(st, 200, "{v}");
    }
    let expected = imported_turns(&reference);
    assert!(expected.len() >= names.len(), "{expected:?}");

    // Two imported before the disk fills, the rest while it is full.
    for n in &names[..2] {
        let (st, v) = import(&s, n);
        assert_eq!(st, 200, "{v}");
    }
    let filler = s.state_dir.join("filler");
    assert!(fill(&filler) > 0);
    let mut refused = 0;
    for n in &names[2..] {
        let (st, v) = import(&s, n);
        match st {
            200 if v["errors"].as_array().is_some_and(|e| e.is_empty()) => {}
            200 => refused += 1,
            503 => {
                assert_eq!(v["code"], "storage_full", "{v}");
                refused += 1;
            }
            other => panic!("{n}: {other} {v}\n{}", s.log()),
        }
    }
    assert!(refused > 0, "the disk was full");
    let answered_then_refused = s.log().matches("files were not written in place").count();
    eprintln!("imports refused: {refused}, answered then refused: {answered_then_refused}");

    // Space freed; the same server serves every session again and a second
    // import finishes what the first could not write.
    std::fs::remove_file(&filler).unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let (_, list) = s.get("/api/sessions?source=claude-code&limit=200&include_archived=true");
    for row in list["sessions"].as_array().unwrap() {
        let id = row["id"].as_str().unwrap();
        loop {
            let (st, v) = s.get(&format!("/api/sessions/{id}/messages"));
            if st == 200 {
                break;
            }
            assert_eq!((st, v["code"].as_str()), (503, Some("storage_full")), "{v}");
            assert!(
                std::time::Instant::now() < deadline,
                "{id} is served again once space is freed: {v}\n{}",
                s.log()
            );
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    }
    for n in names {
        let (st, v) = import(&s, n);
        assert_eq!(st, 200, "{n}: {v}\n{}", s.log());
        assert!(v["errors"].as_array().unwrap().is_empty(), "{n}: {v}");
    }
    assert_eq!(imported_turns(&s), expected, "{}", s.log());
    for id in expected.keys() {
        let fsck = Command::new("git")
            .args(["fsck", "--strict"])
            .current_dir(s.session_dir(id))
            .output()
            .unwrap();
        assert!(fsck.status.success(), "{id}: {fsck:?}");
    }
}
