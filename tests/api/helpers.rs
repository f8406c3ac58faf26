//! Test harness: a real server on 127.0.0.1:0 with a temporary state
//! directory, talked to over HTTP and WebSocket. `TestServer::start()`
//! runs it in this process (the application built as `serve` builds it,
//! on an actix system of its own, stopped gracefully on drop);
//! `start_process()` and the other starts run the `openprogram` binary,
//! for the tests that kill it, signal it, read its log, give it an
//! environment or measure its process.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// The `openprogram` binary under test: the one cargo built, or
/// `OPENPROGRAM_TEST_BIN` (a copy kept apart for a long soak run while the
/// tree is rebuilt).
pub fn server_bin() -> PathBuf {
    std::env::var_os("OPENPROGRAM_TEST_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_openprogram")))
}

pub struct TestServer {
    child: Option<Child>,
    /// The server running in this process, when it does.
    in_process: Option<InProcess>,
    pub url: String,
    pub state_dir: PathBuf,
    pub env: Vec<(String, String)>,
    agent: ureq::Agent,
    /// `--bind` (default 127.0.0.1:0).
    pub bind: String,
    /// A command the server runs under (e.g. `setpriv …`, `sh -c 'umask …'`).
    prefix: Vec<String>,
    bin: PathBuf,
    /// The bearer token this client sends (read from `<state>/token` when
    /// the server demands one).
    pub auth: Option<String>,
    _tmp: Option<tempfile::TempDir>,
}

/// How to start a test server beyond the defaults.
#[derive(Default)]
pub struct Options<'a> {
    pub env: &'a [(&'a str, &'a str)],
    pub bind: Option<&'a str>,
    pub prefix: Vec<String>,
    /// Send the token from `<state>/token` with every request.
    pub with_token: bool,
    /// Called with the state directory before the server starts.
    pub prepare: Option<&'a dyn Fn(&Path)>,
    /// The server binary (default: the one cargo built).
    pub bin: Option<PathBuf>,
}

/// A server in this process: the thread running its actix system, and
/// the channel that stops it.
struct InProcess {
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl InProcess {
    /// Stop gracefully (as for SIGTERM) and wait until it has.
    fn stop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl TestServer {
    /// A server in this process (see the module's doc).
    pub fn start() -> TestServer {
        let tmp = tempfile::tempdir().expect("tempdir");
        let state_dir = tmp.path().join("state");
        let config = openprogram::config::Config::load(&openprogram::config::Overrides {
            config_file: None,
            state_dir: Some(state_dir.clone()),
            bind: Some("127.0.0.1:0".into()),
        })
        .expect("configuration");
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("test-server".into())
            .spawn(move || {
                actix_web::rt::System::new().block_on(async move {
                    let app = match openprogram::startup::Application::build(&config) {
                        Ok(app) => app,
                        Err(e) => {
                            let _ = addr_tx.send(Err(e.to_string()));
                            return;
                        }
                    };
                    let _ = addr_tx.send(Ok(app.addr()));
                    let _ = app
                        .run_until(async move {
                            let _ = stopped.await;
                        })
                        .await;
                });
            })
            .expect("server thread");
        let addr = addr_rx
            .recv_timeout(Duration::from_secs(30))
            .expect("the server started")
            .unwrap_or_else(|e| panic!("the server did not start: {e}"));
        let s = TestServer {
            child: None,
            in_process: Some(InProcess {
                stop: Some(stop),
                thread: Some(thread),
            }),
            url: format!("http://{addr}"),
            state_dir,
            env: Vec::new(),
            agent: ureq::AgentBuilder::new()
                .timeout(Duration::from_secs(60))
                .build(),
            bind: "127.0.0.1:0".into(),
            prefix: Vec::new(),
            bin: server_bin(),
            auth: None,
            _tmp: Some(tmp),
        };
        let (status, _) = s.get("/api/health");
        assert_eq!(status, 200);
        s
    }

    /// The `openprogram` binary as a child process.
    pub fn start_process() -> TestServer {
        Self::start_with_env(&[])
    }

    /// Panic with what to use instead when a test treats an in-process
    /// server as a process.
    fn needs_process(&self, what: &str) {
        assert!(
            self.in_process.is_none(),
            "{what} needs the server as a process: start it with TestServer::start_process()"
        );
    }

    pub fn start_with_env(env: &[(&str, &str)]) -> TestServer {
        Self::start_with(Options {
            env,
            ..Options::default()
        })
    }

    pub fn start_with(opts: Options<'_>) -> TestServer {
        let tmp = tempfile::tempdir().expect("tempdir");
        let state_dir = tmp.path().join("state");
        if let Some(prepare) = opts.prepare {
            prepare(&state_dir);
        }
        let env = opts
            .env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let mut s = TestServer {
            child: None,
            in_process: None,
            url: String::new(),
            state_dir,
            env,
            agent: ureq::AgentBuilder::new()
                .timeout(Duration::from_secs(60))
                .build(),
            bind: opts.bind.unwrap_or("127.0.0.1:0").to_string(),
            prefix: opts.prefix,
            bin: opts.bin.unwrap_or_else(server_bin),
            auth: None,
            _tmp: Some(tmp),
        };
        s.spawn_then(opts.with_token);
        s
    }

    /// Start (again) on the same state directory.
    pub fn spawn(&mut self) {
        self.needs_process("restarting");
        let with_token = self.auth.is_some();
        self.spawn_then(with_token);
    }

    fn spawn_then(&mut self, with_token: bool) {
        let info = self.state_dir.join("server.json");
        let _ = std::fs::remove_file(&info);
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.state_dir.with_file_name("server.log"))
            .expect("log file");
        let bin = &self.bin;
        let mut cmd = match self.prefix.split_first() {
            Some((first, rest)) => {
                let mut c = Command::new(first);
                c.args(rest).arg(bin);
                c
            }
            None => Command::new(bin),
        };
        cmd.args(["serve", "--bind", &self.bind, "--state-dir"])
            .arg(&self.state_dir)
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log);
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        let child = cmd.spawn().expect("spawn openprogram");
        let pid = child.id();
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(30);
        // A fixed port: the server is found there too (one on a full disk
        // cannot write server.json).
        let fixed = !self.bind.ends_with(":0");
        loop {
            if fixed
                && self
                    .agent
                    .get(&format!("http://{}/api/health", self.bind))
                    .call()
                    .is_ok()
            {
                self.url = format!("http://{}", self.bind);
                break;
            }
            if let Ok(text) = std::fs::read_to_string(&info) {
                if let Ok(v) = serde_json::from_str::<Value>(&text) {
                    // (A prefix command may exec the server under its own pid.)
                    if v["pid"].as_u64() == Some(pid as u64) || !self.prefix.is_empty() {
                        self.url = v["url"]
                            .as_str()
                            .expect("url")
                            .replace("0.0.0.0", "127.0.0.1");
                        break;
                    }
                }
            }
            if let Some(status) = self
                .child
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten())
            {
                panic!("server exited at startup with {status}: {}", self.log());
            }
            assert!(
                Instant::now() < deadline,
                "server did not start: {}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        if with_token {
            let configured = self.env.iter().find(|(k, _)| k == "OPENPROGRAM_TOKEN");
            let token = match configured {
                Some((_, t)) => t.clone(),
                None => std::fs::read_to_string(self.state_dir.join("token")).expect("token file"),
            };
            self.auth = Some(token.trim().to_string());
        }
        let (status, _) = self.get("/api/health");
        assert_eq!(status, 200);
    }

    pub fn log(&self) -> String {
        self.needs_process("reading the server's log");
        std::fs::read_to_string(self.state_dir.with_file_name("server.log")).unwrap_or_default()
    }

    /// Wait (up to 30 s) for the server to exit on its own (a fault of
    /// the test killed it); its exit status.
    pub fn wait_exit(&mut self) -> std::process::ExitStatus {
        self.needs_process("waiting for an exit");
        let mut c = self.child.take().expect("a server process");
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = c.try_wait().expect("try_wait") {
                return status;
            }
            assert!(Instant::now() < deadline, "the server did not exit");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// SIGKILL: no chance to flush anything.
    pub fn kill(&mut self) {
        self.needs_process("SIGKILL");
        if let Some(mut c) = self.child.take() {
            c.kill().expect("kill");
            c.wait().expect("wait");
        }
    }

    /// SIGTERM and wait for a graceful exit; returns the exit code.
    pub fn terminate(&mut self) -> Option<i32> {
        self.needs_process("SIGTERM");
        let mut c = self.child.take()?;
        let ok = Command::new("kill")
            .args(["-TERM", &c.id().to_string()])
            .status()
            .expect("kill -TERM");
        assert!(ok.success());
        c.wait().expect("wait").code()
    }

    /// SIGKILL, then start again with the write-ahead log fault `fault`
    /// (`OPENPROGRAM_WAL_FAULT`) and nothing else in the environment.
    pub fn restart_with_fault(&mut self, fault: &str) {
        self.kill();
        self.env = vec![("OPENPROGRAM_WAL_FAULT".to_string(), fault.to_string())];
        self.spawn();
    }

    pub fn restart_after_kill(&mut self) {
        self.kill();
        self.spawn();
    }

    pub fn session_dir(&self, id: &str) -> PathBuf {
        self.state_dir.join("sessions").join(id)
    }

    fn call(&self, req: ureq::Request, body: Option<&Value>) -> (u16, Value) {
        self.send(req, body)
            .unwrap_or_else(|e| panic!("request failed: {e}"))
    }

    /// Send `req` (with the token, and `body` as JSON): the status and the
    /// JSON answer (`null` when empty, a string when not JSON), or `Err`
    /// when no answer came.
    fn send(&self, req: ureq::Request, body: Option<&Value>) -> Result<(u16, Value), String> {
        let req = match &self.auth {
            Some(t) => req.set("Authorization", &format!("Bearer {t}")),
            None => req,
        };
        let res = match body {
            Some(b) => req.send_json(b),
            None => req.call(),
        };
        let resp = match res {
            Ok(r) => r,
            Err(ureq::Error::Status(_, r)) => r,
            Err(e) => return Err(e.to_string()),
        };
        let status = resp.status();
        let text = resp.into_string().map_err(|e| e.to_string())?;
        let json = if text.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).unwrap_or(Value::String(text))
        };
        Ok((status, json))
    }

    pub fn get(&self, path: &str) -> (u16, Value) {
        self.call(self.agent.get(&format!("{}{path}", self.url)), None)
    }

    /// `GET path` as bytes, or `Err` when no answer came.
    pub fn try_get_bytes(&self, path: &str) -> Result<(u16, Vec<u8>), String> {
        let mut req = self.agent.get(&format!("{}{path}", self.url));
        if let Some(t) = &self.auth {
            req = req.set("Authorization", &format!("Bearer {t}"));
        }
        let resp = match req.call() {
            Ok(r) => r,
            Err(ureq::Error::Status(_, r)) => r,
            Err(e) => return Err(e.to_string()),
        };
        let status = resp.status();
        let mut body = Vec::new();
        std::io::Read::read_to_end(&mut resp.into_reader(), &mut body)
            .map_err(|e| e.to_string())?;
        Ok((status, body))
    }

    /// `POST path` with a raw body, or `Err` when no answer came.
    pub fn try_post_bytes(
        &self,
        path: &str,
        content_type: &str,
        body: &[u8],
    ) -> Result<(u16, Value), String> {
        let mut req = self
            .agent
            .post(&format!("{}{path}", self.url))
            .set("Content-Type", content_type);
        if let Some(t) = &self.auth {
            req = req.set("Authorization", &format!("Bearer {t}"));
        }
        let resp = match req.send_bytes(body) {
            Ok(r) => r,
            Err(ureq::Error::Status(_, r)) => r,
            Err(e) => return Err(e.to_string()),
        };
        let status = resp.status();
        let text = resp.into_string().map_err(|e| e.to_string())?;
        Ok((
            status,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        ))
    }

    /// The server's process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.needs_process("a process id");
        self.child.as_ref().map(Child::id)
    }

    /// A request that may meet a server killed meanwhile: `Err` when no
    /// answer came (the outcome is unknown).
    pub fn try_request(
        &self,
        method: &str,
        path: &str,
        body: Option<&Value>,
    ) -> Result<(u16, Value), String> {
        let req = self.agent.request(method, &format!("{}{path}", self.url));
        self.send(req, body)
    }

    /// POST; after a whole turn (`/api/sessions/{id}/turns` with `nodes`)
    /// that was answered, `settle` the session before returning.
    pub fn post(&self, path: &str, body: Value) -> (u16, Value) {
        let whole = body.get("nodes").is_some();
        let (st, v) = self.call(self.agent.post(&format!("{}{path}", self.url)), Some(&body));
        if let (true, true, Some(id)) = (
            whole,
            (200..300).contains(&st),
            path.strip_prefix("/api/sessions/")
                .and_then(|p| p.strip_suffix("/turns")),
        ) {
            self.settle(id);
        }
        (st, v)
    }

    /// A whole turn is answered once its log entry is durable; its files
    /// (the node files, the branch ref) are written right after, before
    /// the session serves its next request. A test that reads the
    /// session's folder itself (git, the files) asks the session first.
    pub fn settle(&self, id: &str) {
        let (st, v) = self.get(&format!("/api/sessions/{id}"));
        assert_eq!(st, 200, "settling {id}: {v}");
    }

    pub fn patch(&self, path: &str, body: Value) -> (u16, Value) {
        self.call(
            self.agent.request("PATCH", &format!("{}{path}", self.url)),
            Some(&body),
        )
    }

    /// Run the `openprogram` CLI against this server's state directory:
    /// (exit code, stdout, stderr).
    pub fn cli(&self, args: &[&str], cwd: Option<&Path>) -> (i32, String, String) {
        let mut cmd = Command::new(server_bin());
        cmd.args(args)
            .env("OPENPROGRAM_STATE_DIR", &self.state_dir)
            .env_remove("OPENPROGRAM_URL");
        if let Some(dir) = cwd {
            cmd.current_dir(dir);
        }
        let out = cmd.output().expect("run openprogram");
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    /// GET raw bytes (status, content type, body).
    pub fn get_bytes(&self, path: &str) -> (u16, String, Vec<u8>) {
        let resp = match self.agent.get(&format!("{}{path}", self.url)).call() {
            Ok(r) => r,
            Err(ureq::Error::Status(_, r)) => r,
            Err(e) => panic!("request failed: {e}"),
        };
        let (status, ctype) = (resp.status(), resp.content_type().to_string());
        let mut body = Vec::new();
        std::io::Read::read_to_end(&mut resp.into_reader(), &mut body).expect("read body");
        (status, ctype, body)
    }

    pub fn put(&self, path: &str, body: Value) -> (u16, Value) {
        self.call(self.agent.put(&format!("{}{path}", self.url)), Some(&body))
    }

    /// One turn in a session bound to `project` (created by the message).
    pub fn turn_in_project(&self, session: &str, project: &str) -> Value {
        self.append(session, serde_json::json!({"role": "user", "content": "work", "session": {"project_id": project}}));
        self.append(
            session,
            serde_json::json!({"role": "assistant", "content": "done"}),
        );
        self.end_turn(session, serde_json::json!({}))
    }

    /// The session's graph nodes of tool/runtime name `name`.
    pub fn nodes_named(&self, session: &str, name: &str) -> Vec<Value> {
        let (_, nodes) = self.get(&format!("/api/sessions/{session}/nodes"));
        nodes["nodes"]
            .as_array()
            .map(|a| a.iter().filter(|n| n["name"] == name).cloned().collect())
            .unwrap_or_default()
    }

    pub fn raw_delete(&self, path: &str) -> (u16, Value) {
        self.call(self.agent.delete(&format!("{}{path}", self.url)), None)
    }

    /// POST a raw body with a content type.
    pub fn post_raw(&self, path: &str, content_type: &str, body: &[u8]) -> (u16, Value) {
        let req = self
            .agent
            .post(&format!("{}{path}", self.url))
            .set("Content-Type", content_type);
        let res = match req.send_bytes(body) {
            Ok(r) => r,
            Err(ureq::Error::Status(_, r)) => r,
            Err(e) => panic!("request failed: {e}"),
        };
        let status = res.status();
        (status, res.into_json().unwrap_or(Value::Null))
    }

    /// Send `head` (request line and headers, without the blank line) and
    /// `body` byte for byte; the status and the parsed JSON body.
    pub fn raw_http(&self, head: &str, body: &[u8]) -> (u16, Value) {
        use std::io::{Read, Write};
        let addr = self.url.trim_start_matches("http://");
        let mut stream = std::net::TcpStream::connect(addr).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        let mut req = head.replace("{addr}", addr).into_bytes();
        req.extend_from_slice(b"\r\nConnection: close\r\n\r\n");
        req.extend_from_slice(body);
        stream.write_all(&req).expect("write");
        let mut resp = Vec::new();
        let _ = stream.read_to_end(&mut resp);
        let text = String::from_utf8_lossy(&resp).into_owned();
        let status = text
            .split_whitespace()
            .nth(1)
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        let body = text.split_once("\r\n\r\n").map_or("", |(_, b)| b);
        // A chunked body: take the JSON object inside.
        let json = body
            .find('{')
            .and_then(|i| body.rfind('}').map(|j| (i, j)))
            .and_then(|(i, j)| body.get(i..=j))
            .and_then(|b| serde_json::from_str(b).ok())
            .unwrap_or(Value::Null);
        (status, json)
    }

    /// Send a request byte for byte (no client-side path normalisation);
    /// returns the status code.
    pub fn raw_request(&self, method: &str, path: &str, body: &str) -> u16 {
        use std::io::{Read, Write};
        let addr = self.url.trim_start_matches("http://");
        let mut stream = std::net::TcpStream::connect(addr).expect("connect");
        write!(
            stream,
            "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .expect("write");
        let mut resp = String::new();
        stream.read_to_string(&mut resp).expect("read");
        resp.split_whitespace()
            .nth(1)
            .and_then(|c| c.parse().ok())
            .expect("status line")
    }

    /// Append a node and assert it was accepted.
    pub fn append(&self, session: &str, body: Value) -> Value {
        let (status, v) = self.post(&format!("/api/sessions/{session}/messages"), body);
        assert!(
            status == 201 || status == 200,
            "append failed: {status} {v}\n{}",
            self.log()
        );
        v
    }

    pub fn end_turn(&self, session: &str, body: Value) -> Value {
        let (status, v) = self.post(&format!("/api/sessions/{session}/turns"), body);
        assert_eq!(status, 201, "end turn failed: {v}\n{}", self.log());
        v
    }

    /// One whole turn: user, assistant placeholder, tools, fill, end.
    pub fn turn(&self, session: &str, user: &str, reply: &str, tools: &[&str]) -> Value {
        let u = self.append(
            session,
            serde_json::json!({"role": "user", "content": user}),
        );
        let a = self.append(
            session,
            serde_json::json!({"role": "assistant", "content": ""}),
        );
        let aid = a["node"]["id"].as_str().expect("assistant id").to_string();
        for t in tools {
            self.append(
                session,
                serde_json::json!({"role": "tool", "name": t, "caller": aid, "content": "ok"}),
            );
        }
        let (s, _) = self.patch(
            &format!("/api/sessions/{session}/messages/{aid}"),
            serde_json::json!({"content": reply}),
        );
        assert_eq!(s, 200);
        assert!(u["turn"].is_u64());
        self.end_turn(session, serde_json::json!({}))
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        match &mut self.in_process {
            Some(server) => server.stop(),
            None => self.kill(),
        }
    }
}

/// The turn commits on `rev`, by the git CLI: `git rev-list --count` less
/// the `session init` root every session starts with (checked to be there).
pub fn turn_commits(dir: &Path, rev: &str) -> String {
    let all: usize = git(dir, &["rev-list", "--count", rev])
        .trim()
        .parse()
        .expect("a count");
    let root = git(dir, &["rev-list", "--max-parents=0", rev]);
    let subject = git(dir, &["log", "-1", "--format=%s", root.trim()]);
    let init = usize::from(subject.trim() == "session init");
    (all - init).to_string()
}

/// Run `git` in `dir` and return stdout; panics on failure.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir)
        .output()
        .expect("run git");
    assert!(
        out.status.success(),
        "git {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The repo is an ordinary, healthy git repository with a clean tree.
pub fn assert_clean_repo(dir: &Path) {
    git(dir, &["fsck", "--strict", "--no-progress"]);
    assert_eq!(
        git(dir, &["status", "--porcelain"]),
        "",
        "work tree not clean in {}",
        dir.display()
    );
}

/// The ids of a `GET …/nodes` answer, in order.
pub fn node_ids(nodes: &Value) -> Vec<String> {
    nodes["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["id"].as_str().unwrap().to_string())
        .collect()
}

/// The texts of a `GET …/messages` answer, in order.
pub fn message_texts(msgs: &Value) -> Vec<String> {
    msgs["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["content"].as_str().map(str::to_owned))
        .collect()
}

/// The Python the SDK and client tests run (`OPENPROGRAM_SDK_PYTHON`);
/// `None` when it is not set: the test says it skipped, unless
/// `OPENPROGRAM_SDK_REQUIRED` is set (CI), which fails it instead.
pub fn sdk_python() -> Option<String> {
    let Ok(python) = std::env::var("OPENPROGRAM_SDK_PYTHON") else {
        assert!(
            std::env::var("OPENPROGRAM_SDK_REQUIRED").is_err(),
            "OPENPROGRAM_SDK_PYTHON is not set"
        );
        eprintln!("skipped: OPENPROGRAM_SDK_PYTHON (a Python with the SDKs) is not set");
        return None;
    };
    Some(python)
}
