//! A minimal OpenAI-compatible chat-completions client (OpenAI, Ollama,
//! vLLM, llama.cpp's server, LM Studio): `POST {base_url}/chat/completions`.
//! Blocking; called only from the titler's worker threads.

use std::time::Duration;

use serde_json::{json, Value};

/// The prompt of spec 000 §3.3.
pub const PROMPT: &str = "Generate a short, descriptive title (3-7 words) for this conversation, \
in the language of the conversation. Return ONLY the title, no quotes, no prefix.";

#[derive(Debug, Clone)]
pub struct LlmConfig {
    /// Ends in `/v1` as in the OpenAI SDKs. Empty: no LLM.
    pub base_url: String,
    pub model: String,
    pub api_key: String,
    pub timeout: Duration,
}

impl LlmConfig {
    pub fn enabled(&self) -> bool {
        !self.base_url.trim().is_empty()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    #[error("no model configured")]
    NoModel,
    #[error("LLM request failed: {0}")]
    Request(String),
    #[error("LLM answer has no title")]
    Empty,
}

pub struct LlmClient {
    config: LlmConfig,
    agent: ureq::Agent,
}

impl LlmClient {
    pub fn new(config: LlmConfig) -> LlmClient {
        let agent = ureq::AgentBuilder::new().timeout(config.timeout).build();
        LlmClient { config, agent }
    }

    /// Ask for a title of `conversation`; `model` overrides the configured one.
    pub fn title(&self, conversation: &str, model: Option<&str>) -> Result<String, LlmError> {
        let model = model
            .filter(|m| !m.is_empty())
            .unwrap_or(&self.config.model);
        if model.is_empty() {
            return Err(LlmError::NoModel);
        }
        let url = format!(
            "{}/chat/completions",
            self.config.base_url.trim_end_matches('/')
        );
        let body = json!({
            "model": model,
            "messages": [
                {"role": "system", "content": PROMPT},
                {"role": "user", "content": conversation},
            ],
            "max_tokens": 50,
            "temperature": 0.3,
        });
        let mut req = self
            .agent
            .post(&url)
            .set("Content-Type", "application/json");
        if !self.config.api_key.is_empty() {
            req = req.set("Authorization", &format!("Bearer {}", self.config.api_key));
        }
        let resp: Value = req
            .send_json(body)
            .map_err(|e| LlmError::Request(e.to_string()))?
            .into_json()
            .map_err(|e| LlmError::Request(e.to_string()))?;
        let content = resp["choices"][0]["message"]["content"]
            .as_str()
            .unwrap_or("");
        super::text::clean_llm_title(content).ok_or(LlmError::Empty)
    }
}
