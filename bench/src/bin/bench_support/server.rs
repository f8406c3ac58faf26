//! The real server started in process for the benchmarks, and full turns
//! driven against it over HTTP. Shared by `bench` and `search_bench`
//! (`#[path]`), each of which uses a part: hence the dead-code allowance.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

use openprogram::config::Config;
use serde_json::json;

/// Start the real server in process on `state` (`tweak` edits its
/// configuration first); returns its address.
pub fn start_server(state: &Path, tweak: impl FnOnce(&mut Config) + Send + 'static) -> SocketAddr {
    let server = start_stoppable(state, tweak);
    let addr = server.addr;
    // Serves until the bench ends.
    std::mem::forget(server);
    addr
}

/// A server in this process that `stop` shuts down.
pub struct Stoppable {
    pub addr: SocketAddr,
    stop: tokio::sync::oneshot::Sender<()>,
    thread: std::thread::JoinHandle<()>,
}

impl Stoppable {
    /// Shut the server down as a signal would (requests drained, its
    /// maintenance stopped, the log closed) and wait for it: a later
    /// phase of the bench then runs without its background work (the
    /// idle merges of the sessions it was loaded with took 0.6 ms of CPU
    /// per turn of the next load).
    pub fn stop(self) {
        let _ = self.stop.send(());
        let _ = self.thread.join();
    }
}

/// A server in this process, on its own thread, until `Stoppable::stop`.
pub fn start_stoppable(
    state: &Path,
    tweak: impl FnOnce(&mut Config) + Send + 'static,
) -> Stoppable {
    let state = state.to_path_buf();
    let (tx, rx) = std::sync::mpsc::channel();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let thread = std::thread::spawn(move || {
        let mut config = Config::load(&Default::default()).expect("config");
        config.store.state_dir = state.display().to_string();
        config.server.bind = "127.0.0.1:0".into();
        tweak(&mut config);
        actix_web::rt::System::new().block_on(async move {
            let app = openprogram::startup::Application::build(&config).expect("start server");
            tx.send(app.addr()).expect("send addr");
            let _ = app
                .run_until(async move {
                    let _ = stopped.await;
                })
                .await;
        });
    });
    Stoppable {
        addr: rx.recv().expect("server address"),
        stop,
        thread,
    }
}

/// One session of a server, driven by full turns over HTTP.
pub struct HttpSession {
    agent: ureq::Agent,
    base: String,
}

impl HttpSession {
    pub fn new(addr: SocketAddr, id: &str) -> HttpSession {
        HttpSession::at(&format!("http://{addr}"), id)
    }

    /// A session of the server at `url` (`http://host:port`).
    pub fn at(url: &str, id: &str) -> HttpSession {
        HttpSession {
            agent: ureq::agent(),
            base: format!("{url}/api/sessions/{id}"),
        }
    }

    /// Create the session with its first user message; the time it took.
    pub fn create(&self) -> Duration {
        let start = Instant::now();
        self.post(
            "/messages",
            json!({"role": "user", "content": "a first message"}),
        );
        start.elapsed()
    }

    /// End the open turn.
    pub fn end(&self) {
        self.post("/turns", json!({}));
    }

    fn post(&self, path: &str, body: serde_json::Value) -> serde_json::Value {
        self.agent
            .post(&format!("{}{path}", self.base))
            .send_json(body)
            .expect("request")
            .into_json()
            .expect("json")
    }

    /// A full durable turn: user, assistant and tool appends, the
    /// assistant's reply filled in, end of turn. `words` go in the reply.
    /// A whole turn in one request (user, assistant, two tool results it
    /// called; about 3 KB): one log entry, one flush, one commit.
    pub fn whole_turn(&self, t: usize) -> Duration {
        self.whole_turn_acked(t).0
    }

    /// A whole turn as `whole_turn`, and the commit it made with when it
    /// was acknowledged.
    pub fn whole_turn_acked(&self, t: usize) -> (Duration, String, Instant) {
        let text = |what: &str, n: usize| format!("{what} {t}: {}", "lorem ipsum ".repeat(n));
        let aid = format!("w{t}");
        let start = Instant::now();
        let end = self.post(
            "/turns",
            json!({"nodes": [
                {"role": "user", "content": text("question", 80)},
                {"id": aid, "role": "assistant", "content": text("answer", 80)},
                {"role": "tool", "name": "read", "caller": aid, "content": text("file", 40)},
                {"role": "tool", "name": "grep", "caller": aid, "content": text("hits", 40)},
            ]}),
        );
        let acked = Instant::now();
        let commit = end["commit"].as_str().unwrap_or_default().to_string();
        (acked - start, commit, acked)
    }

    /// One full turn (user, assistant placeholder, tool, fill, end).
    pub fn turn(&self, t: usize, words: &str) -> Duration {
        self.turn_acked(t, words).0
    }

    /// A turn as `turn`, and the commit it made with when its end was
    /// acknowledged.
    pub fn turn_acked(&self, t: usize, words: &str) -> (Duration, String, Instant) {
        let start = Instant::now();
        self.post(
            "/messages",
            json!({"role": "user", "content": format!("question {t}")}),
        );
        let a = self.post("/messages", json!({"role": "assistant", "content": ""}));
        let aid = a["node"]["id"].as_str().expect("id").to_string();
        self.post(
            "/messages",
            json!({"role": "tool", "name": "read", "caller": aid, "content": "file"}),
        );
        self.agent
            .request("PATCH", &format!("{}/messages/{aid}", self.base))
            .send_json(json!({"content": format!("the answer {words}")}))
            .expect("patch");
        let end = self.post("/turns", json!({}));
        let acked = Instant::now();
        let commit = end["commit"].as_str().unwrap_or_default().to_string();
        (acked - start, commit, acked)
    }
}
