//! Server frames of the WebSocket protocol: `{"type": ..., "data": ...}`,
//! the `action_error` frame, and the call context every action handler
//! gets (which action, which session, how its failures are worded).

use openprogram_actors::EngineError;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Value};

use crate::error::ApiError;
use crate::state::AppState;

/// The frames an action answers its client with.
pub type Frames = Vec<Value>;

/// `{"type": kind, "data": data}`.
pub fn frame(kind: &str, data: impl Serialize) -> Value {
    json!({ "type": kind, "data": data })
}

/// `action_error {action, session_id, error, code}`.
pub fn action_error(
    action: Option<&str>,
    session_id: Option<&str>,
    error: &str,
    code: &str,
) -> Value {
    frame(
        "action_error",
        json!({ "action": action, "session_id": session_id, "error": error, "code": code }),
    )
}

/// The frames as text, each reply carrying the client's `request_id`.
pub fn to_text(frames: Frames, request_id: Option<&Value>) -> Vec<String> {
    frames
        .into_iter()
        .map(|mut f| {
            if let (Some(id), Some(obj)) = (request_id, f.as_object_mut()) {
                obj.insert("request_id".into(), id.clone());
            }
            f.to_string()
        })
        .collect()
}

/// One action being answered: the handlers' shared context.
pub struct Call<'a> {
    pub state: &'a AppState,
    pub action: &'a str,
    /// The frame's `session_id`, named in its error frames.
    pub session_id: Option<String>,
}

impl<'a> Call<'a> {
    /// The call of `action`, naming the frame's `session_id` (`fields`: the
    /// frame without its `action`).
    pub fn for_frame(
        state: &'a AppState,
        action: &'a str,
        fields: &serde_json::Map<String, Value>,
    ) -> Call<'a> {
        Call {
            state,
            action,
            session_id: fields
                .get("session_id")
                .and_then(Value::as_str)
                .map(str::to_owned),
        }
    }

    pub fn engine(&self) -> &openprogram_actors::Engine {
        &self.state.engine
    }

    pub fn error(&self, code: &str, message: &str) -> Value {
        crate::error::count_error(code);
        action_error(Some(self.action), self.session_id.as_deref(), message, code)
    }

    /// An engine failure with the code and message an HTTP client gets
    /// (the one mapping in `crate::error`).
    pub fn fail(&self, e: EngineError) -> Value {
        let e = ApiError::from(e);
        let mut frame = self.error(e.code, &e.message);
        if let (Some(Value::Object(extra)), Some(data)) = (
            &e.details,
            frame.get_mut("data").and_then(Value::as_object_mut),
        ) {
            for (k, v) in extra {
                data.entry(k.clone()).or_insert_with(|| v.clone());
            }
        }
        frame
    }

    /// The frame's fields as `T`; keys `T` does not name are ignored.
    pub fn parse<T: DeserializeOwned>(&self, v: Value) -> Result<T, Value> {
        serde_json::from_value(v)
            .map_err(|e| self.error("invalid_fields", &format!("invalid fields: {e}")))
    }
}

/// An engine failure as the text a reply frame's `error` field carries
/// (`ok: false` replies): the original's wording where it has one.
pub fn reply_error(e: EngineError) -> (String, &'static str) {
    let e = ApiError::from(e);
    (e.message, e.code)
}
