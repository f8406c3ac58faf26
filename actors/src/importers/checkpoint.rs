//! Where each imported file was left: `<state>/imports/<tool>.json`, one
//! entry per file with its size and modification time when it was last
//! read whole. A file whose size and time are unchanged is not read again;
//! any other is read again, and the turns already imported are recognised
//! by their node ids (so a checkpoint lost or stale costs time, never a
//! duplicate).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::model::Tool;
use crate::fsio;

/// The folder of the checkpoints in the state directory.
pub const IMPORTS: &str = "imports";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileMark {
    pub size: u64,
    /// Modification time, nanoseconds since the epoch.
    pub mtime_ns: u128,
    pub session: String,
}

#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Checkpoint {
    #[serde(default)]
    pub files: BTreeMap<PathBuf, FileMark>,
    #[serde(skip)]
    path: PathBuf,
    #[serde(skip)]
    changed: bool,
}

impl Checkpoint {
    /// The tool's checkpoint in `state_dir` (empty when there is none or it
    /// cannot be read: everything is read again).
    pub fn load(state_dir: &Path, tool: Tool) -> Checkpoint {
        let path = state_dir
            .join(IMPORTS)
            .join(format!("{}.json", tool.as_str()));
        let mut cp: Checkpoint = fsio::read_json(&path).unwrap_or_default();
        cp.path = path;
        cp
    }

    pub fn unchanged(&self, file: &Path, mark: &FileMark) -> bool {
        self.files.get(file) == Some(mark)
    }

    pub fn set(&mut self, file: &Path, mark: FileMark) {
        self.files.insert(file.to_path_buf(), mark);
        self.changed = true;
    }

    pub fn forget(&mut self, file: &Path) {
        self.changed |= self.files.remove(file).is_some();
    }

    /// Write it (atomically, private) if anything changed.
    pub fn save(&mut self) -> std::io::Result<()> {
        if !self.changed {
            return Ok(());
        }
        if let Some(dir) = self.path.parent() {
            fsio::create_private_dir_all(dir)?;
        }
        fsio::atomic_write_json(&self.path, self)?;
        self.changed = false;
        Ok(())
    }
}

/// A file's size and modification time now; a database's write-ahead
/// file beside it (`<file>-wal`, SQLite's) counts as part of it.
pub fn mark_of(file: &Path, session: &str) -> std::io::Result<FileMark> {
    let stamp = |m: &std::fs::Metadata| -> std::io::Result<(u64, u128)> {
        let ns = m
            .modified()?
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        Ok((m.len(), ns))
    };
    let (mut size, mut mtime_ns) = stamp(&std::fs::metadata(file)?)?;
    let mut wal = file.as_os_str().to_owned();
    wal.push("-wal");
    if let Ok(m) = std::fs::metadata(PathBuf::from(wal)) {
        let (s, t) = stamp(&m)?;
        size += s;
        mtime_ns = mtime_ns.max(t);
    }
    Ok(FileMark {
        size,
        mtime_ns,
        session: session.to_string(),
    })
}
