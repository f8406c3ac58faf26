//! The built-in runner (`openprogram runner llm`, or `[runner] builtin =
//! "llm"` with `serve`): a separate client of the server's WebSocket that
//! answers the composer's messages with the configured OpenAI-compatible
//! endpoint (`llm.*`), streaming, with no tools. It speaks the runner
//! protocol like any other runtime (docs/RUNNERS.md).

pub mod llm;

use std::collections::HashMap;
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use crate::client::Client;
use tungstenite::client::IntoClientRequest;
use tungstenite::stream::MaybeTlsStream;
use tungstenite::{Message, WebSocket};

#[derive(Debug, thiserror::Error)]
pub enum RunnerError {
    #[error("server: {0}")]
    Api(#[from] crate::client::ClientError),
    #[error("{0}")]
    Llm(String),
    #[error("websocket: {0}")]
    Socket(String),
}

/// Where the runner connects and what it answers with.
pub struct RunnerConfig {
    /// The server's base URL (`http://host:port`).
    pub url: String,
    pub token: Option<String>,
    pub name: String,
    pub llm: crate::config::LlmSection,
}

type Socket = WebSocket<MaybeTlsStream<TcpStream>>;

fn connect(cfg: &RunnerConfig) -> Result<Socket, RunnerError> {
    let ws_url = format!("{}/ws", cfg.url.replacen("http", "ws", 1));
    let mut req = ws_url
        .into_client_request()
        .map_err(|e| RunnerError::Socket(e.to_string()))?;
    if let Some(t) = &cfg.token {
        let value = format!("Bearer {t}")
            .parse()
            .map_err(|_| RunnerError::Socket("the token is not a header value".into()))?;
        req.headers_mut().insert("Authorization", value);
    }
    let (mut sock, _) =
        tungstenite::connect(req).map_err(|e| RunnerError::Socket(e.to_string()))?;
    if let MaybeTlsStream::Plain(t) = sock.get_ref() {
        let _ = t.set_read_timeout(Some(Duration::from_millis(200)));
    }
    let register = json!({"action": "register_runner", "name": cfg.name, "sessions": "all"});
    sock.send(Message::text(register.to_string()))
        .map_err(|e| RunnerError::Socket(e.to_string()))?;
    Ok(sock)
}

/// Run until `stop` is set: connect (again after a failure, with backoff),
/// claim what is offered, answer each claimed run on a thread of its own.
pub fn run(cfg: RunnerConfig, stop: Arc<AtomicBool>) {
    let agent = ureq::AgentBuilder::new()
        .timeout_connect(Duration::from_secs(10))
        .timeout_read(Duration::from_secs(cfg.llm.timeout.max(1) * 6))
        .build();
    let api = Arc::new(Client::new(cfg.url.clone(), cfg.token.clone()));
    let model = Arc::new(llm::Llm {
        base_url: cfg.llm.base_url.clone(),
        model: cfg.llm.model.clone(),
        api_key: cfg.llm.api_key.clone(),
        agent,
    });
    let mut backoff = Duration::from_millis(200);
    while !stop.load(Ordering::SeqCst) {
        match connect(&cfg) {
            Ok(sock) => {
                backoff = Duration::from_millis(200);
                tracing::info!(url = %cfg.url, name = %cfg.name, "runner connected");
                if let Err(e) = serve(sock, &api, &model, &stop) {
                    tracing::warn!(error = %e, "runner disconnected; reconnecting");
                }
            }
            Err(e) => tracing::warn!(error = %e, "runner cannot connect; retrying"),
        }
        std::thread::sleep(backoff);
        backoff = (backoff * 2).min(Duration::from_secs(5));
    }
}

fn serve(
    mut sock: Socket,
    api: &Arc<Client>,
    model: &Arc<llm::Llm>,
    stop: &AtomicBool,
) -> Result<(), RunnerError> {
    // The runs being answered, by session: their cancel flags.
    let mut running: HashMap<String, Arc<AtomicBool>> = HashMap::new();
    loop {
        if stop.load(Ordering::SeqCst) {
            let _ = sock.close(None);
            return Ok(());
        }
        let text = match sock.read() {
            Ok(Message::Text(t)) => t.to_string(),
            Ok(Message::Close(_)) => {
                return Err(RunnerError::Socket("closed by the server".into()))
            }
            Ok(_) => continue,
            Err(tungstenite::Error::Io(e))
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                // Answer the server's pings.
                sock.flush()
                    .map_err(|e| RunnerError::Socket(e.to_string()))?;
                running.retain(|_, flag| Arc::strong_count(flag) > 1);
                continue;
            }
            Err(e) => return Err(RunnerError::Socket(e.to_string())),
        };
        let frame: Value = serde_json::from_str(&text).unwrap_or_default();
        let data = &frame["data"];
        let session = data["session_id"].as_str().unwrap_or_default().to_string();
        match frame["type"].as_str() {
            Some("run_requested") => {
                let claim =
                    json!({"action": "claim_run", "session_id": session, "msg_id": data["msg_id"]});
                sock.send(Message::text(claim.to_string()))
                    .map_err(|e| RunnerError::Socket(e.to_string()))?;
            }
            Some("run_claimed") => {
                let cancelled = Arc::new(AtomicBool::new(false));
                running.insert(session.clone(), cancelled.clone());
                let (api, model) = (api.clone(), model.clone());
                // A retry names the message its answer follows.
                let predecessor = data["predecessor"].as_str().map(str::to_string);
                std::thread::spawn(move || {
                    let run = llm::Run {
                        session: &session,
                        predecessor: predecessor.as_deref(),
                        cancelled: &cancelled,
                    };
                    if let Err(e) = llm::run(&api, &model, run) {
                        tracing::warn!(session = %session, error = %e, "the run failed");
                    }
                });
            }
            Some("run_cancelled") => {
                if let Some(flag) = running.remove(&session) {
                    flag.store(true, Ordering::SeqCst);
                }
            }
            _ => {}
        }
    }
}
