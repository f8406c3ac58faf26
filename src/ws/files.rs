//! The original web client's project file panel, read-only: a folder's
//! entries and a text file of a registered project (never outside its
//! folder; see `project::files`). The panel's writing actions (create,
//! rename, copy, delete, write) belong to an agent runtime, not to a memory
//! service: they are answered with `ok: false` and say so.

use serde::Deserialize;
use serde_json::{json, Value};

use super::frames::{frame, reply_error, Call, Frames};

#[derive(Deserialize)]
struct FileRef {
    #[serde(default)]
    project_id: Option<String>,
    #[serde(default)]
    path: Option<String>,
}

/// `project_file_tree {project_id, path}` → `project_file_tree_result
/// {project_id, path, entries: [{name, type, size, mtime, ignored}],
/// truncated, error?}`.
pub async fn tree(c: &Call<'_>, v: Value) -> Result<Frames, Value> {
    let r: FileRef = c.parse(v)?;
    let pid = r.project_id.unwrap_or_default();
    let path = r.path.unwrap_or_default();
    let mut data = json!({"project_id": pid, "path": path, "entries": []});
    match c.engine().project_files(&pid, &path).await {
        Ok(listing) => {
            data["entries"] = serde_json::to_value(&listing.entries).unwrap_or_default();
            data["truncated"] = listing.truncated.into();
        }
        Err(e) => {
            let (error, code) = reply_error(e);
            data["error"] = error.into();
            data["code"] = code.into();
        }
    }
    Ok(vec![frame("project_file_tree_result", data)])
}

/// `project_file_read {project_id, path}` → `project_file_read_result
/// {project_id, path, content?, size, mtime, binary?, too_large?, error?}`.
pub async fn read(c: &Call<'_>, v: Value) -> Result<Frames, Value> {
    let r: FileRef = c.parse(v)?;
    let pid = r.project_id.unwrap_or_default();
    let path = r.path.unwrap_or_default();
    let mut data = json!({"project_id": pid, "path": path});
    match c.engine().project_file(&pid, &path).await {
        Ok(file) => {
            data["size"] = file.size.into();
            data["mtime"] = file.mtime.into();
            if let Some(text) = file.content {
                data["content"] = text.into();
            }
            if file.binary {
                data["binary"] = true.into();
            }
            if file.too_large {
                data["too_large"] = true.into();
            }
        }
        Err(e) => {
            let (error, code) = reply_error(e);
            data["error"] = error.into();
            data["code"] = code.into();
        }
    }
    Ok(vec![frame("project_file_read_result", data)])
}

/// The panel's writing actions: `<action>_result {…request fields, ok:
/// false, error, code: "read_only"}`.
pub fn refuse_write(c: &Call<'_>, v: &Value) -> Frames {
    let mut data = json!({
        "project_id": v.get("project_id"),
        "path": v.get("path"),
        "ok": false,
        "error": "project files are read-only here: this memory service does not change a project's files",
        "code": "read_only",
    });
    for key in ["new_path", "kind"] {
        if let Some(x) = v.get(key) {
            data[key] = x.clone();
        }
    }
    vec![frame(&format!("{}_result", c.action), data)]
}
