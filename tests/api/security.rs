//! The perimeter as an attacker meets it: a rebinding Host, a foreign
//! page's Origin, an unauthenticated client on the LAN, wrong content
//! types, hostile bundles, slow or lying clients; and private files.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;
use tungstenite::client::IntoClientRequest;

use crate::helpers::{Options, TestServer};

fn ws_upgrade(s: &TestServer, query: &str, headers: &[(&str, &str)]) -> Result<(), u16> {
    let url = format!("{}/ws{query}", s.url.replace("http://", "ws://"));
    let mut req = url.into_client_request().unwrap();
    for (k, v) in headers {
        req.headers_mut().insert(
            tungstenite::http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
            v.parse().unwrap(),
        );
    }
    match tungstenite::connect(req) {
        Ok(_) => Ok(()),
        Err(tungstenite::Error::Http(resp)) => Err(resp.status().as_u16()),
        Err(e) => panic!("ws: {e}"),
    }
}

#[test]
fn a_rebinding_host_and_a_foreign_origin_get_nothing() {
    let s = TestServer::start();
    s.turn("secret", "my private words", "reply", &[]);
    for host in [
        "evil.example",
        "evil.example:80",
        "127.0.0.1.evil.example",
        "localhost.evil.example",
    ] {
        let (st, v) = s.raw_http(&format!("GET /api/sessions HTTP/1.1\r\nHost: {host}"), b"");
        assert_eq!(
            (st, v["code"].as_str()),
            (403, Some("forbidden_host")),
            "{host}"
        );
        assert!(!v.to_string().contains("my private words"));
        let (st, _) = s.raw_http(
            &format!("GET /ws HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ=="),
            b"",
        );
        assert_eq!(st, 403, "ws upgrade with Host {host}");
    }
    let (st, _) = s.raw_http("GET /api/sessions HTTP/1.1\r\nHost: localhost", b"");
    assert_eq!(st, 200);
    // A page on another origin: refused over HTTP and WebSocket.
    let (st, v) = s.raw_http(
        "POST /api/projects HTTP/1.1\r\nHost: {addr}\r\nOrigin: http://evil.example\r\nContent-Type: application/json\r\nContent-Length: 13",
        br#"{"path":"/x"}"#,
    );
    assert_eq!((st, v["code"].as_str()), (403, Some("forbidden_origin")));
    assert_eq!(
        ws_upgrade(&s, "", &[("Origin", "http://evil.example")]),
        Err(403)
    );
    assert_eq!(ws_upgrade(&s, "", &[("Origin", "null")]), Err(403));
    // Its own origin is fine, and so is no origin (a non-browser client).
    let own = s.url.clone();
    assert_eq!(ws_upgrade(&s, "", &[("Origin", own.as_str())]), Ok(()));
    let (st, _) = s.raw_http(
        &format!("GET /api/sessions HTTP/1.1\r\nHost: {{addr}}\r\nOrigin: {own}"),
        b"",
    );
    assert_eq!(st, 200);
    // A preflight from a foreign origin gets no CORS answer.
    let (st, _) = s.raw_http(
        "OPTIONS /api/sessions HTTP/1.1\r\nHost: {addr}\r\nOrigin: http://evil.example\r\nAccess-Control-Request-Method: DELETE",
        b"",
    );
    assert_eq!(st, 403);
    // A text/plain "simple request" is refused before any handler runs.
    let (st, v) = s.raw_http(
        "POST /api/sessions/import HTTP/1.1\r\nHost: {addr}\r\nContent-Type: text/plain\r\nContent-Length: 5",
        b"hello",
    );
    assert_eq!(
        (st, v["code"].as_str()),
        (415, Some("unsupported_media_type"))
    );
    let (st, _) = s.raw_http(
        "POST /api/sessions/x/messages HTTP/1.1\r\nHost: {addr}\r\nContent-Type: text/plain\r\nContent-Length: 30",
        br#"{"role":"user","content":"hi"}"#,
    );
    assert_eq!(st, 415);
    assert!(!s.session_dir("x").exists());
}

#[test]
fn configured_origins_get_cors_and_preflights() {
    let s = TestServer::start_with_env(&[(
        "OPENPROGRAM_SERVER_ALLOWED_ORIGINS",
        "http://localhost:3000",
    )]);
    let (st, _) = s.raw_http(
        "OPTIONS /api/sessions HTTP/1.1\r\nHost: {addr}\r\nOrigin: http://localhost:3000\r\nAccess-Control-Request-Method: POST",
        b"",
    );
    assert_eq!(st, 204);
    let resp = raw_headers(
        &s,
        "GET /api/sessions HTTP/1.1\r\nHost: {addr}\r\nOrigin: http://localhost:3000",
    );
    assert!(
        resp.to_ascii_lowercase()
            .contains("access-control-allow-origin: http://localhost:3000"),
        "{resp}"
    );
    let plain = raw_headers(&s, "GET /api/sessions HTTP/1.1\r\nHost: {addr}");
    assert!(!plain
        .to_ascii_lowercase()
        .contains("access-control-allow-origin"));
}

fn raw_headers(s: &TestServer, head: &str) -> String {
    use std::io::{Read, Write};
    let addr = s.url.trim_start_matches("http://");
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    let req = format!(
        "{}\r\nConnection: close\r\n\r\n",
        head.replace("{addr}", addr)
    );
    stream.write_all(req.as_bytes()).unwrap();
    let mut out = String::new();
    let _ = stream.read_to_string(&mut out);
    out
}

#[test]
fn off_loopback_every_request_needs_the_token() {
    let s = TestServer::start_with(Options {
        bind: Some("0.0.0.0:0"),
        with_token: true,
        ..Options::default()
    });
    let token = s.auth.clone().unwrap();
    assert_eq!(token.len(), 64);
    let mode = std::fs::metadata(s.state_dir.join("token"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    assert!(
        s.log()
            .contains(&s.state_dir.join("token").display().to_string()),
        "serve says where the token is"
    );
    for auth in [
        "",
        "Authorization: Bearer wrong\r\n",
        "Authorization: Basic eDp5\r\n",
    ] {
        let (st, v) = s.raw_http(
            &format!("GET /api/sessions HTTP/1.1\r\n{auth}Host: {{addr}}"),
            b"",
        );
        assert_eq!(
            (st, v["code"].as_str()),
            (401, Some("unauthorized")),
            "{auth}"
        );
    }
    let (st, _) = s.raw_http(
        &format!("GET /api/sessions HTTP/1.1\r\nAuthorization: Bearer {token}\r\nHost: {{addr}}"),
        b"",
    );
    assert_eq!(st, 200);
    // A browser's WebSocket sends it as a query parameter.
    assert_eq!(ws_upgrade(&s, "", &[]), Err(401));
    assert_eq!(ws_upgrade(&s, "?token=nope", &[]), Err(401));
    assert_eq!(ws_upgrade(&s, &format!("?token={token}"), &[]), Ok(()));
    // The CLI reads the token file.
    s.turn("lan", "hello", "hi", &[]);
    let (code, out, err) = s.cli(&["sessions", "list"], None);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("lan"), "{out}");
}

#[test]
fn the_web_ui_loads_without_the_token_and_carries_its_guards() {
    let s = TestServer::start_with(Options {
        env: &[("OPENPROGRAM_SERVER_REQUIRE_TOKEN", "true")],
        with_token: true,
        ..Options::default()
    });
    // The page, its deep links and its assets need no token (they hold no
    // data; the page asks for the token)...
    for path in [
        "/",
        "/s/abc",
        "/s/abc/turn/3",
        "/projects",
        "/projects/proj_1",
    ] {
        let out = raw_headers(&s, &format!("GET {path} HTTP/1.1\r\nHost: {{addr}}"));
        assert!(out.starts_with("HTTP/1.1 200"), "{path}: {out}");
        let lower = out.to_ascii_lowercase();
        assert!(lower.contains("content-type: text/html"), "{path}");
        assert!(
            lower.contains("content-security-policy: default-src 'none'; script-src 'self'"),
            "{path}: {out}"
        );
        assert!(lower.contains("x-content-type-options: nosniff"));
        assert!(out.contains("<script type=\"module\" src=\"/assets/app.js\">"));
    }
    for (asset, ctype) in [
        ("app.js", "text/javascript"),
        ("sidebar.js", "text/javascript"),
        ("style.css", "text/css"),
        ("icon.svg", "image/svg+xml"),
    ] {
        let out = raw_headers(
            &s,
            &format!("GET /assets/{asset} HTTP/1.1\r\nHost: {{addr}}"),
        );
        assert!(out.starts_with("HTTP/1.1 200"), "{asset}: {out}");
        assert!(out
            .to_ascii_lowercase()
            .contains(&format!("content-type: {ctype}")));
    }
    let (st, v) = s.raw_http("GET /assets/nope.js HTTP/1.1\r\nHost: {addr}", b"");
    assert_eq!((st, v["code"].as_str()), (404, Some("not_found")));
    // ...the API does, and the Host rule holds for the page too.
    let (st, _) = s.raw_http("GET /api/sessions HTTP/1.1\r\nHost: {addr}", b"");
    assert_eq!(st, 401);
    let (st, v) = s.raw_http("GET / HTTP/1.1\r\nHost: evil.example:80", b"");
    assert_eq!((st, v["code"].as_str()), (403, Some("forbidden_host")));
    let (st, v) = s.raw_http(
        "GET /s/x HTTP/1.1\r\nHost: {addr}\r\nOrigin: http://evil.example",
        b"",
    );
    assert_eq!((st, v["code"].as_str()), (403, Some("forbidden_origin")));
    // No asset embeds an inline script or a remote URL.
    let (_, _, page) = s.get_bytes("/");
    let page = String::from_utf8(page).unwrap();
    assert!(!page.contains("<script>") && !page.contains("http://") && !page.contains("https://"));
}

#[test]
fn a_loopback_server_can_demand_a_configured_token() {
    let s = TestServer::start_with(Options {
        env: &[
            ("OPENPROGRAM_SERVER_REQUIRE_TOKEN", "true"),
            ("OPENPROGRAM_TOKEN", "s3cret-token"),
        ],
        with_token: true,
        ..Options::default()
    });
    let (st, _) = s.raw_http("GET /api/health HTTP/1.1\r\nHost: {addr}", b"");
    assert_eq!(st, 401);
    let (st, _) = s.raw_http(
        "GET /api/health HTTP/1.1\r\nAuthorization: Bearer s3cret-token\r\nHost: {addr}",
        b"",
    );
    assert_eq!(st, 200);
}

fn walk(dir: &Path, out: &mut Vec<(std::path::PathBuf, u32, bool)>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let ty = e.file_type().unwrap();
        let mode = e.metadata().unwrap().permissions().mode() & 0o777;
        if ty.is_dir() {
            out.push((e.path(), mode, true));
            walk(&e.path(), out);
        } else if ty.is_file() {
            out.push((e.path(), mode, false));
        }
    }
}

#[test]
fn every_file_is_private_even_under_umask_000() {
    let umask = vec![
        "sh".to_string(),
        "-c".into(),
        "umask 000; exec \"$0\" \"$@\"".into(),
    ];
    let s = TestServer::start_with(Options {
        prefix: umask,
        ..Options::default()
    });
    let project = tempfile::tempdir().unwrap();
    let (st, p) = s.post("/api/projects", json!({"path": project.path()}));
    assert_eq!(st, 201, "{p}");
    let pid = p["project"]["id"]
        .as_str()
        .or(p["id"].as_str())
        .unwrap()
        .to_string();
    s.turn_in_project("inproj", &pid);
    s.turn("plain", "hello", "hi", &["read"]);
    s.append("plain", json!({"role": "user", "content": "running"}));
    let (st, _) = s.post(
        "/api/sessions/plain/messages",
        json!({"role": "user", "content": "queued", "queue": true}),
    );
    assert_eq!(st, 202);
    s.post("/api/sessions/plain/fork", json!({}));
    let mut seen = Vec::new();
    walk(&s.state_dir, &mut seen);
    walk(&project.path().join(".openprogram"), &mut seen);
    let state = std::fs::metadata(&s.state_dir)
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(state, 0o700, "the state directory");
    let op = std::fs::metadata(project.path().join(".openprogram"))
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(op, 0o700, ".openprogram in the project");
    let mut checked = 0;
    for (path, mode, is_dir) in &seen {
        if path.components().any(|c| c.as_os_str() == ".git") {
            // git's own modes inside (objects and packs are read-only):
            // none for the group or others.
            assert_eq!(*mode & 0o077, 0, "{} is {mode:o}", path.display());
            continue;
        }
        let want = if *is_dir { 0o700 } else { 0o600 };
        assert_eq!(*mode, want, "{} is {mode:o}", path.display());
        checked += 1;
    }
    for f in ["index.json", "token", "server.json"] {
        assert!(
            seen.iter()
                .any(|(p, _, _)| p.ends_with(f) || p.file_name().is_some_and(|n| n == f)),
            "{f} checked"
        );
    }
    let git_index = s.session_dir("plain").join(".git/index");
    assert_eq!(
        std::fs::metadata(git_index).unwrap().permissions().mode() & 0o777,
        0o600
    );
    assert!(checked > 20, "{checked} files and folders checked");
}

/// A server that cannot write where it must not: as root, it runs as
/// `nobody` (a failed check could then not touch a system folder), from a
/// copy of the binary in the test's own folder.
fn unprivileged(env: &[(&str, &str)]) -> (TestServer, tempfile::TempDir) {
    let work = tempfile::tempdir().unwrap();
    std::fs::set_permissions(work.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let root = unsafe_is_root();
    let mut prefix = Vec::new();
    let mut copy = None;
    if root {
        let bin = work.path().join("openprogram");
        std::fs::copy(env!("CARGO_BIN_EXE_openprogram"), &bin).unwrap();
        std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
        prefix = [
            "setpriv",
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        copy = Some(bin);
    }
    let prepare = |state: &Path| {
        let parent = state.parent().unwrap();
        std::fs::set_permissions(parent, std::fs::Permissions::from_mode(0o777)).unwrap();
    };
    let s = TestServer::start_with(Options {
        env,
        prefix,
        prepare: Some(&prepare),
        bin: copy,
        ..Options::default()
    });
    (s, work)
}

fn unsafe_is_root() -> bool {
    std::process::Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false)
}

#[test]
fn system_folders_and_homes_are_refused_as_projects_and_working_dirs() {
    let home = tempfile::tempdir().unwrap();
    std::fs::set_permissions(home.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let home_s = home.path().display().to_string();
    let (s, work) = unprivileged(&[("HOME", home_s.as_str())]);
    let link = work.path().join("etc-link");
    std::os::unix::fs::symlink("/etc", &link).unwrap();
    let state = s.state_dir.display().to_string();
    let link_s = link.display().to_string();
    let refused = [
        "/",
        "/etc",
        "/etc/ssl",
        "/proc",
        "/sys",
        "/dev",
        "/boot",
        "/run",
        "/bin",
        "/sbin",
        "/lib",
        "/usr",
        "/usr/bin",
        "/var",
        "/var/lib",
        "/var/log",
        "/var/cache",
        "/root",
        link_s.as_str(),
        home_s.as_str(),
        state.as_str(),
    ];
    s.turn("wd", "hello", "hi", &[]);
    for path in refused {
        let (st, v) = s.post("/api/projects", json!({"path": path}));
        assert_eq!(
            (st, v["code"].as_str()),
            (400, Some("invalid_path")),
            "{path}: {v}"
        );
        assert!(!v["error"].as_str().unwrap_or("").is_empty());
        if path != home_s {
            let (st, v) = s.post("/api/sessions/wd/working_dirs", json!({"path": path}));
            assert_eq!(
                (st, v["code"].as_str()),
                (400, Some("invalid_path")),
                "workdir {path}: {v}"
            );
        }
    }
    assert!(!Path::new("/etc/.openprogram").exists());
    assert!(!Path::new("/.openprogram").exists());
    // An ordinary folder is fine.
    let mine = work.path().join("mine");
    std::fs::create_dir(&mine).unwrap();
    if unsafe_is_root() {
        // libgit2 refuses a repository its user does not own.
        std::os::unix::fs::chown(&mine, Some(65534), Some(65534)).unwrap();
    }
    let (st, v) = s.post("/api/projects", json!({"path": mine}));
    assert_eq!(st, 201, "{v} {}", s.log());
}

#[test]
fn a_folder_owned_by_another_user_is_a_clear_refusal() {
    if !unsafe_is_root() {
        eprintln!("skipped: only root can give a folder to another user");
        return;
    }
    let s = TestServer::start();
    let theirs = tempfile::tempdir().unwrap();
    crate::helpers::git(theirs.path(), &["init", "--quiet"]);
    for entry in [theirs.path().to_path_buf(), theirs.path().join(".git")] {
        std::os::unix::fs::chown(&entry, Some(65534), Some(65534)).unwrap();
    }
    let (st, v) = s.post("/api/projects", json!({"path": theirs.path()}));
    assert_eq!((st, v["code"].as_str()), (400, Some("invalid_path")), "{v}");
    assert!(v["error"].as_str().unwrap().contains("another user"), "{v}");
    // Another user's folder without a repository, writable by all: refused
    // before anything is made in it.
    let open = tempfile::tempdir().unwrap();
    std::fs::set_permissions(open.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    std::os::unix::fs::chown(open.path(), Some(65534), Some(65534)).unwrap();
    let (st, v) = s.post("/api/projects", json!({"path": open.path()}));
    assert_eq!((st, v["code"].as_str()), (400, Some("invalid_path")), "{v}");
    assert!(v["error"].as_str().unwrap().contains("another user"), "{v}");
    assert_eq!(
        std::fs::read_dir(open.path()).unwrap().count(),
        0,
        "nothing created in it"
    );
}

#[test]
fn a_folder_the_server_cannot_write_is_a_clear_refusal() {
    if !unsafe_is_root() {
        eprintln!("skipped: the server must run as another user than the folder's");
        return;
    }
    let (s, work) = unprivileged(&[]);
    let locked = work.path().join("locked");
    std::fs::create_dir(&locked).unwrap();
    std::os::unix::fs::chown(&locked, Some(65534), Some(65534)).unwrap();
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o555)).unwrap();
    let (st, v) = s.post("/api/projects", json!({"path": locked}));
    assert_eq!((st, v["code"].as_str()), (400, Some("invalid_path")), "{v}");
    assert!(v["error"].as_str().unwrap().contains("cannot write"), "{v}");
    assert_eq!(std::fs::read_dir(&locked).unwrap().count(), 0);
}

#[test]
fn reserved_and_oversized_ids_are_4xx_never_5xx() {
    let s = TestServer::start();
    let multibyte = "中".repeat(67);
    for id in [
        "locations.json",
        "index.json",
        "projects",
        "search",
        "token",
        multibyte.as_str(),
    ] {
        let (st, v) = s.post(
            &format!("/api/sessions/{}/messages", enc(id)),
            json!({"role": "user", "content": "x"}),
        );
        assert_eq!(
            (st, v["code"].as_str()),
            (400, Some("invalid_id")),
            "{id}: {v}"
        );
        let (st, _) = s.post("/api/sessions", json!({"id": id}));
        assert_eq!(st, 400, "{id}");
    }
    let (st, v) = s.post(
        "/api/sessions/ok/messages",
        json!({"role": "user", "content": "x", "id": "中".repeat(67)}),
    );
    assert_eq!((st, v["code"].as_str()), (400, Some("invalid_id")), "{v}");
    let (st, _) = s.post(
        &format!("/api/channels/{}/messages", enc(&multibyte)),
        json!({"account_id": "a", "peer_id": "p", "text": "x"}),
    );
    assert_eq!(st, 400);
    let (st, _) = s.post(
        "/api/channels/wechat/messages",
        json!({"account_id": "a", "peer_id": "p", "text": "x", "message_id": "token/x"}),
    );
    assert_eq!(st, 400);
    // The store's own file is untouched and project sessions still work.
    assert!(s
        .state_dir
        .join("sessions/locations.json")
        .metadata()
        .map_or(true, |m| m.is_file()));
    assert!(!s.state_dir.join("sessions/locations.json").is_dir());
}

pub fn enc(s: &str) -> String {
    s.bytes().map(|b| format!("%{b:02X}")).collect()
}

/// A v2 bundle of one commit whose tree `build` fills.
pub fn bundle_with(
    build: impl FnOnce(&git2::Repository, &mut git2::TreeBuilder),
    ref_name: &str,
) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let repo = git2::Repository::init(dir.path()).unwrap();
    let mut tb = repo.treebuilder(None).unwrap();
    build(&repo, &mut tb);
    let tree = repo.find_tree(tb.write().unwrap()).unwrap();
    let sig = git2::Signature::now("t", "t@t").unwrap();
    let commit = repo
        .commit(None, &sig, &sig, "turn 1: x", &tree, &[])
        .unwrap();
    let mut pb = repo.packbuilder().unwrap();
    let mut walk = repo.revwalk().unwrap();
    walk.push(commit).unwrap();
    pb.insert_walk(&mut walk).unwrap();
    let mut buf = git2::Buf::new();
    pb.write_buf(&mut buf).unwrap();
    let mut out = format!("# v2 git bundle\n{commit} {ref_name}\n\n").into_bytes();
    out.extend_from_slice(&buf);
    out
}

pub fn meta_blob(repo: &git2::Repository, tb: &mut git2::TreeBuilder) {
    let meta = repo
        .blob(br#"{"id":"imp","title":"t","created_at":1.0,"updated_at":1.0}"#)
        .unwrap();
    tb.insert("meta.json", meta, 0o100644).unwrap();
}

#[test]
fn hostile_bundles_are_refused_and_leave_nothing_behind() {
    let s = TestServer::start_with_env(&[("OPENPROGRAM_STORE_IMPORT_MAX_UNPACKED", "1048576")]);
    let huge = bundle_with(
        |r, tb| {
            meta_blob(r, tb);
            let zeros = r.blob(&vec![0u8; 8 << 20]).unwrap();
            tb.insert("big.json", zeros, 0o100644).unwrap();
        },
        "refs/heads/main",
    );
    assert!(huge.len() < 200_000, "{} bytes", huge.len());
    let symlink = bundle_with(
        |r, tb| {
            meta_blob(r, tb);
            let target = r.blob(b"/etc").unwrap();
            tb.insert("history", target, 0o120000).unwrap();
        },
        "refs/heads/main",
    );
    // libgit2 refuses to build a `.git` entry, so the tree is written raw.
    let dotgit = bundle_with(
        |r, tb| {
            meta_blob(r, tb);
            let cfg = r.blob(b"[core]\n\tfsmonitor = rm -rf /\n").unwrap();
            let mut raw = b"100644 config\0".to_vec();
            raw.extend_from_slice(cfg.as_bytes());
            let sub = r
                .odb()
                .unwrap()
                .write(git2::ObjectType::Tree, &raw)
                .unwrap();
            let mut top = b"40000 .git\0".to_vec();
            top.extend_from_slice(sub.as_bytes());
            // A one-entry tree to graft it into: written raw, then linked.
            let wrapper = r
                .odb()
                .unwrap()
                .write(git2::ObjectType::Tree, &top)
                .unwrap();
            tb.insert("context", wrapper, 0o040000).unwrap();
        },
        "refs/heads/main",
    );
    let no_meta = bundle_with(
        |r, tb| {
            let x = r.blob(b"x").unwrap();
            tb.insert("readme", x, 0o100644).unwrap();
        },
        "refs/heads/main",
    );
    let nul_ref = bundle_with(meta_blob, "refs/heads/ma\0in");
    for (name, bytes, why) in [
        ("huge", &huge, "unpacks to more than"),
        ("symlink", &symlink, "symbolic link"),
        (".git", &dotgit, ".git entry"),
        ("no meta", &no_meta, "meta.json"),
        ("nul ref", &nul_ref, "bad ref"),
    ] {
        for attempt in 0..2 {
            let (st, v) = s.post_raw("/api/sessions/import", "application/x-git-bundle", bytes);
            assert_eq!(
                (st, v["code"].as_str()),
                (400, Some("invalid_bundle")),
                "{name} #{attempt}: {v}"
            );
            assert!(v["error"].as_str().unwrap().contains(why), "{name}: {v}");
        }
    }
    let left: Vec<String> = std::fs::read_dir(s.state_dir.join("sessions"))
        .unwrap()
        .flatten()
        .filter(|e| e.file_type().unwrap().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(left.is_empty(), "nothing left behind: {left:?}");
    let (st, _) = s.get("/api/health");
    assert_eq!(st, 200);
}

#[test]
fn slow_and_lying_clients_are_cut_off_within_seconds() {
    let s = TestServer::start_with_env(&[("OPENPROGRAM_SERVER_REQUEST_TIMEOUT", "1")]);
    use std::io::{Read, Write};
    let addr = s.url.trim_start_matches("http://").to_string();
    // A Content-Length larger than the body.
    let started = Instant::now();
    let mut c = std::net::TcpStream::connect(&addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    write!(c, "POST /api/sessions/slow/messages HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{{\"role\":").unwrap();
    let mut resp = String::new();
    let _ = c.read_to_string(&mut resp);
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "held for {:?}",
        started.elapsed()
    );
    assert!(
        resp.contains(" 408 ") && resp.contains("request_timeout"),
        "{resp}"
    );
    assert!(!s.session_dir("slow").exists());
    // A WebSocket frame header announcing 2^62 bytes.
    let started = Instant::now();
    let mut w = std::net::TcpStream::connect(&addr).unwrap();
    w.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    write!(w, "GET /ws HTTP/1.1\r\nHost: {addr}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n").unwrap();
    let mut head = [0u8; 1024];
    let n = w.read(&mut head).unwrap();
    assert!(String::from_utf8_lossy(&head[..n]).contains("101"));
    let mut frame = vec![0x81u8, 0xff];
    frame.extend_from_slice(&(1u64 << 62).to_be_bytes());
    frame.extend_from_slice(&[1, 2, 3, 4, b'x']);
    w.write_all(&frame).unwrap();
    let mut sink = Vec::new();
    let _ = w.read_to_end(&mut sink);
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "ws held for {:?}",
        started.elapsed()
    );
    let (st, _) = s.get("/api/health");
    assert_eq!(st, 200);
}
