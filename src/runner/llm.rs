//! One run answered by an OpenAI-compatible chat-completions endpoint:
//! the session's current branch as the conversation, the answer streamed
//! into an assistant node (`PATCH` in pieces), then the end of the turn.
//! Blocking; each run on a thread of its own.

use std::io::{BufRead, BufReader};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::RunnerError;
use crate::client::Client;

/// How often the streamed answer is written (pieces in between are joined).
const PIECE_EVERY: Duration = Duration::from_millis(100);

pub struct Llm {
    pub base_url: String,
    pub model: String,
    pub api_key: String,
    pub agent: ureq::Agent,
}

/// The session's current branch as chat messages (up to `head`, for a
/// retry: the message answered again).
fn conversation(
    api: &Client,
    session: &str,
    head: Option<&str>,
) -> Result<Vec<Value>, RunnerError> {
    let path = match head {
        Some(h) => format!("/api/sessions/{session}/messages?head={h}"),
        None => format!("/api/sessions/{session}/messages"),
    };
    let page = api.call("GET", &path, None)?;
    Ok(page["messages"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .filter_map(|m| {
            let role = m["role"].as_str()?;
            matches!(role, "user" | "assistant" | "system").then(|| {
                let content = match &m["content"] {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                json!({"role": role, "content": content})
            })
        })
        .filter(|m| m["content"].as_str().is_some_and(|c| !c.is_empty()))
        .collect())
}

/// The text of one streamed chunk or of a whole answer.
fn piece(v: &Value) -> Option<&str> {
    v["choices"][0]["delta"]["content"]
        .as_str()
        .or_else(|| v["choices"][0]["message"]["content"].as_str())
}

impl Llm {
    /// Ask for the answer to `messages`, calling `on_text` with the whole
    /// text so far as it streams (an endpoint that does not stream answers
    /// once).
    fn answer(
        &self,
        model: &str,
        messages: Vec<Value>,
        cancelled: &AtomicBool,
        mut on_text: impl FnMut(&str) -> Result<(), RunnerError>,
    ) -> Result<String, RunnerError> {
        let url = format!("{}/chat/completions", self.base_url.trim_end_matches('/'));
        let mut req = self
            .agent
            .post(&url)
            .set("Content-Type", "application/json");
        if !self.api_key.is_empty() {
            req = req.set("Authorization", &format!("Bearer {}", self.api_key));
        }
        let resp = req
            .send_json(json!({"model": model, "messages": messages, "stream": true}))
            .map_err(|e| match e {
                ureq::Error::Status(code, r) => RunnerError::Llm(format!(
                    "the LLM answered {code}: {}",
                    r.into_string()
                        .unwrap_or_default()
                        .chars()
                        .take(500)
                        .collect::<String>()
                )),
                other => RunnerError::Llm(format!("the LLM cannot be reached: {other}")),
            })?;
        let streamed = resp.content_type() == "text/event-stream";
        let mut text = String::new();
        if !streamed {
            let v: Value = resp
                .into_json()
                .map_err(|e| RunnerError::Llm(e.to_string()))?;
            text = piece(&v).unwrap_or_default().to_string();
            on_text(&text)?;
            return Ok(text);
        }
        let mut last_write = Instant::now();
        let mut written = 0;
        for line in BufReader::new(resp.into_reader()).lines() {
            if cancelled.load(Ordering::SeqCst) {
                break;
            }
            let line = line.map_err(|e| RunnerError::Llm(e.to_string()))?;
            let Some(data) = line.strip_prefix("data:").map(str::trim) else {
                continue;
            };
            if data == "[DONE]" {
                break;
            }
            if let Some(p) = serde_json::from_str::<Value>(data)
                .ok()
                .as_ref()
                .and_then(piece)
            {
                text.push_str(p);
            }
            if text.len() > written && last_write.elapsed() >= PIECE_EVERY {
                on_text(&text)?;
                written = text.len();
                last_write = Instant::now();
            }
        }
        if text.len() > written {
            on_text(&text)?;
        }
        Ok(text)
    }
}

/// One claimed run.
pub struct Run<'a> {
    pub session: &'a str,
    /// A retry: the message the new answer follows.
    pub predecessor: Option<&'a str>,
    /// Set when the user stops the run.
    pub cancelled: &'a AtomicBool,
}

/// Answer a claimed run; the turn ends `failed` with the error when the
/// LLM fails. Nothing more is written once cancelled. The reply names the
/// runner and the model (`metadata.runner`, `metadata.model`).
pub fn run(api: &Client, llm: &Llm, run: Run<'_>) -> Result<(), RunnerError> {
    let Run {
        session,
        predecessor,
        cancelled,
    } = run;
    let meta = api.call("GET", &format!("/api/sessions/{session}"), None)?;
    let model = meta["model"]
        .as_str()
        .filter(|m| !m.is_empty())
        .unwrap_or(&llm.model)
        .to_string();
    let messages = conversation(api, session, predecessor)?;
    let mut reply =
        json!({"role": "assistant", "content": "", "metadata": {"runner": "llm", "model": model}});
    if let Some(p) = predecessor {
        reply["predecessor"] = json!(p);
    }
    let node = api.call(
        "POST",
        &format!("/api/sessions/{session}/messages"),
        Some(reply),
    )?;
    let id = node["node"]["id"].as_str().unwrap_or_default().to_string();
    let path = format!("/api/sessions/{session}/messages/{id}");
    let answered = llm.answer(&model, messages, cancelled, |text| {
        api.call("PATCH", &path, Some(json!({"content": text})))
            .map(|_| ())
            .map_err(RunnerError::from)
    });
    if cancelled.load(Ordering::SeqCst) {
        return Ok(());
    }
    let end = match &answered {
        Ok(_) => json!({}),
        Err(e) => {
            let _ = api.call(
                "PATCH",
                &path,
                Some(json!({"content": format!("(no answer: {e})")})),
            );
            json!({"outcome": "failed", "error": e.to_string()})
        }
    };
    api.call("POST", &format!("/api/sessions/{session}/turns"), Some(end))?;
    answered.map(|_| ())
}
