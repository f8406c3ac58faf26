//! A small blocking HTTP client for the CLI and the runners, and the
//! `server.json` file through which it finds a running server.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::cli::ServerTarget;
use crate::config::state_dir_or_default;

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("no openprogram server is running (looked for {0}); start one with `openprogram serve` or pass --url")]
    NoServer(String),
    #[error("cannot reach the server at {url}: {reason}")]
    Unreachable { url: String, reason: String },
    /// Connected, then the answer did not come (the server may go on).
    #[error("the connection to the server at {url} was lost: {reason}")]
    Lost { url: String, reason: String },
    #[error("{message}")]
    Api { status: u16, message: String },
    #[error("{0}")]
    Other(String),
}

pub struct Client {
    base: String,
    agent: ureq::Agent,
    /// Sent as a bearer token when known.
    token: Option<String>,
}

impl Client {
    pub fn connect(target: &ServerTarget) -> Result<Client, ClientError> {
        let configured = target
            .state_dir
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        let dir = state_dir_or_default(&configured).ok();
        let token = target
            .token
            .clone()
            .filter(|t| !t.trim().is_empty())
            .or_else(|| dir.as_deref().and_then(crate::security::token::read));
        let base = match &target.url {
            Some(u) => u.trim_end_matches('/').to_string(),
            None => {
                let dir = dir.ok_or_else(|| {
                    ClientError::Other("no state directory: pass --state-dir or --url".into())
                })?;
                let path = dir.join(SERVER_INFO);
                let info: ServerInfo = std::fs::read(&path)
                    .ok()
                    .and_then(|b| serde_json::from_slice(&b).ok())
                    .ok_or_else(|| ClientError::NoServer(path.display().to_string()))?;
                info.url
            }
        };
        Ok(Client::new(base, token))
    }

    /// A client of the server at `base` (`http://host:port`).
    pub fn new(base: String, token: Option<String>) -> Client {
        let agent = ureq::AgentBuilder::new()
            .timeout(Duration::from_secs(30))
            .build();
        Client {
            base: base.trim_end_matches('/').to_string(),
            agent,
            token,
        }
    }

    /// The same client with no limit on how long an answer takes (only
    /// on connecting): for a call that lasts as long as its work does.
    pub fn patient(mut self) -> Client {
        self.agent = ureq::AgentBuilder::new()
            .timeout_connect(Duration::from_secs(10))
            .build();
        self
    }

    /// The server's base URL.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// The token sent, if any.
    pub fn token(&self) -> Option<&str> {
        self.token.as_deref()
    }

    /// POST `body` as it is to `path` with `headers`: the answer's status,
    /// content type and body (an MCP message goes through unread).
    pub fn post_raw(
        &self,
        path: &str,
        body: &str,
        headers: &[(&str, &str)],
    ) -> Result<(u16, String, String), ClientError> {
        let url = format!("{}{path}", self.base);
        let mut req = self.agent.post(&url);
        if let Some(t) = &self.token {
            req = req.set("Authorization", &format!("Bearer {t}"));
        }
        for (k, v) in headers {
            req = req.set(k, v);
        }
        let r = match req.send_string(body) {
            Ok(r) => r,
            Err(ureq::Error::Status(_, r)) => r,
            Err(e) => return Err(self.transport_error(e)),
        };
        let status = r.status();
        let kind = r.content_type().to_string();
        let text = r
            .into_string()
            .map_err(|e| ClientError::Other(e.to_string()))?;
        Ok((status, kind, text))
    }

    pub fn call(
        &self,
        method: &str,
        path: &str,
        body: Option<Value>,
    ) -> Result<Value, ClientError> {
        let url = format!("{}{path}", self.base);
        let mut req = self.agent.request(method, &url);
        if let Some(t) = &self.token {
            req = req.set("Authorization", &format!("Bearer {t}"));
        }
        let res = match body {
            Some(b) => req.send_json(b),
            None => req.call(),
        };
        match res {
            Ok(r) => r.into_json().map_err(|e| ClientError::Other(e.to_string())),
            Err(ureq::Error::Status(status, r)) => {
                let v: Value = r.into_json().unwrap_or(Value::Null);
                let message = v["error"].as_str().unwrap_or("request failed").to_string();
                Err(ClientError::Api { status, message })
            }
            Err(e) => Err(self.transport_error(e)),
        }
    }

    /// A failure before any answer: unreachable when no connection was
    /// made, lost when one was.
    fn transport_error(&self, e: ureq::Error) -> ClientError {
        let (url, reason) = (self.base.clone(), e.to_string());
        match e.kind() {
            ureq::ErrorKind::ConnectionFailed | ureq::ErrorKind::Dns => {
                ClientError::Unreachable { url, reason }
            }
            _ => ClientError::Lost { url, reason },
        }
    }
}

/// Written to `<state>/server.json` so the CLI and tests find the server.
#[derive(Debug, Serialize, Deserialize)]
pub struct ServerInfo {
    pub url: String,
    pub pid: u32,
    /// When the server started (seconds since the epoch).
    #[serde(default)]
    pub started_at: f64,
}

pub const SERVER_INFO: &str = "server.json";
pub const LOCK_FILE: &str = "server.lock";
