//! Which files hold a tool's histories: under the paths given, or the
//! tool's own folders (Aider's: the registered projects, looked in, not
//! walked); and which file a changed path belongs to.

use std::path::{Path, PathBuf};

use super::{aider, codex, gemini, opencode, Tool};

/// Where `discover` looks: `paths`, or the tool's own folders.
pub fn roots(tool: Tool, paths: &[PathBuf]) -> Vec<PathBuf> {
    if paths.is_empty() {
        default_roots(tool)
    } else {
        paths.to_vec()
    }
}

/// The files of `tool` under `paths` (or its default folder), sorted.
pub fn discover(tool: Tool, paths: &[PathBuf]) -> Vec<PathBuf> {
    let roots = roots(tool, paths);
    let mut found = Vec::new();
    for root in roots {
        match tool {
            // Aider writes its history at the top of the repository: a
            // folder is looked in, not walked (a repository may be huge).
            Tool::Aider if root.is_dir() => {
                let file = root.join(aider::FILE_NAME);
                if file.is_file() {
                    found.push(file);
                }
            }
            _ => walk(&root, tool, &mut found),
        }
    }
    found.sort();
    found.dedup();
    found
}

pub(super) fn default_roots(tool: Tool) -> Vec<PathBuf> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    match tool {
        Tool::ClaudeCode => std::env::var_os("CLAUDE_CONFIG_DIR")
            .map(PathBuf::from)
            .or_else(|| home.map(|h| h.join(".claude")))
            .map(|d| vec![d.join("projects")])
            .unwrap_or_default(),
        Tool::Codex => std::env::var_os("CODEX_HOME")
            .map(PathBuf::from)
            .or_else(|| home.map(|h| h.join(".codex")))
            .map(|d| vec![d.join("sessions"), d.join("archived_sessions")])
            .unwrap_or_default(),
        Tool::GeminiCli => std::env::var_os("GEMINI_CLI_HOME")
            .map(PathBuf::from)
            .or(home)
            .map(|d| vec![d.join(".gemini").join("tmp")])
            .unwrap_or_default(),
        Tool::Opencode => std::env::var_os("XDG_DATA_HOME")
            .map(PathBuf::from)
            .or_else(|| home.map(|h| h.join(".local/share")))
            .map(|d| {
                let base = d.join("opencode");
                vec![
                    base.join(opencode::DATABASE),
                    base.join("storage").join("session"),
                ]
            })
            .unwrap_or_default(),
        // In each repository Aider ran in: the registered projects.
        Tool::Aider => Vec::new(),
    }
}

fn walk(path: &Path, tool: Tool, out: &mut Vec<PathBuf>) {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return;
    };
    if meta.is_file() {
        if is_history_file(tool, path) {
            out.push(path.to_path_buf());
        }
        return;
    }
    // No tool keeps its history inside a repository's git folder.
    if !meta.is_dir() || path.file_name().is_some_and(|n| n == ".git") {
        return;
    }
    let Ok(entries) = std::fs::read_dir(path) else {
        return;
    };
    for e in entries.flatten() {
        walk(&e.path(), tool, out);
    }
}

/// The history file a changed path belongs to: itself, or for SQLite's
/// write-ahead file (`<db>-wal`) the database.
pub(super) fn history_file_of(tool: Tool, path: &Path) -> Option<PathBuf> {
    if is_history_file(tool, path) {
        return Some(path.to_path_buf());
    }
    let name = path.file_name()?.to_str()?;
    let db = path.with_file_name(name.strip_suffix("-wal")?);
    is_history_file(tool, &db).then_some(db)
}

fn is_history_file(tool: Tool, path: &Path) -> bool {
    match tool {
        Tool::ClaudeCode => path.extension().is_some_and(|e| e == "jsonl"),
        Tool::Codex => codex::is_rollout(path),
        Tool::GeminiCli => gemini::is_chat(path),
        Tool::Opencode => opencode::is_store(path),
        Tool::Aider => aider::is_history(path),
    }
}
