//! Actions the original web client sends to its agent runtime on every
//! session and project view. They belong to the runtime (whether the agent
//! may ask the user, the sandbox, permission rules, per-project run
//! defaults), not to a memory service: each is answered with the frame
//! the client expects when the feature is off, so nothing is shown as an
//! error and nothing is stored.

use serde_json::{json, Value};

use super::frames::{frame, Frames};

fn field(v: &Value, key: &str) -> Value {
    v.get(key)
        .filter(|x| x.as_str().is_none_or(|s| !s.is_empty()))
        .cloned()
        .unwrap_or(Value::Null)
}

/// `set_attended {session_id, attended}` → `attended_changed {session_id,
/// attended}`: echoed for this client (no runtime asks the user here).
pub fn attended(v: &Value) -> Frames {
    let attended = v.get("attended").and_then(Value::as_bool).unwrap_or(false);
    vec![frame(
        "attended_changed",
        json!({"session_id": field(v, "session_id"), "attended": attended}),
    )]
}

/// `set_sandbox {session_id, sandbox_enabled?}` → `sandbox_changed
/// {session_id, sandbox: false, sandbox_available: false}`: no sandbox
/// runs tools here.
pub fn sandbox(v: &Value) -> Frames {
    vec![frame(
        "sandbox_changed",
        json!({"session_id": field(v, "session_id"), "sandbox": false,
               "sandbox_available": false,
               "sandbox_unavailable_reason": "no sandbox runs tools in this memory service"}),
    )]
}

/// `list_permission_rules {project_id? | session_id?}` →
/// `permission_rules {project_id, allow: [], deny: [], ask: []}`.
pub fn permission_rules(v: &Value) -> Frames {
    vec![frame(
        "permission_rules",
        json!({"project_id": field(v, "project_id"), "allow": [], "deny": [], "ask": []}),
    )]
}

/// `get_project_config {project_id}` → `project_config {project_id,
/// config: {}}`: no per-project run defaults are kept here.
pub fn project_config(v: &Value) -> Frames {
    vec![frame(
        "project_config",
        json!({"project_id": field(v, "project_id"), "config": {}}),
    )]
}
