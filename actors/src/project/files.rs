//! A read-only listing of one folder of a registered project, for a file
//! panel: only inside the project's folder (no absolute paths, no `..`, no
//! symbolic link leading out), the repository's `.git` and the sessions'
//! `.openprogram` left out, git-ignored entries marked.

use std::path::{Component, Path, PathBuf};
use std::time::UNIX_EPOCH;

use serde::Serialize;

use super::error::ProjectError;
use super::model::OPENPROGRAM_DIR;

/// At most this many entries of one folder are listed.
pub const MAX_ENTRIES: usize = 5_000;

#[derive(Debug, Clone, Serialize)]
pub struct FileEntry {
    pub name: String,
    /// `file`, `dir` or `symlink` (a link is listed, never followed).
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub size: u64,
    /// Modification time, seconds since the epoch.
    pub mtime: f64,
    /// Matched by the project's `.gitignore`.
    pub ignored: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct Listing {
    pub entries: Vec<FileEntry>,
    /// More entries than `MAX_ENTRIES`: the rest are left out.
    pub truncated: bool,
}

const HIDDEN: [&str; 2] = [".git", OPENPROGRAM_DIR];

/// At most this many bytes of a file are read.
pub const MAX_READ: u64 = 1_000_000;

/// One text file of a project.
#[derive(Debug, Clone, Serialize)]
pub struct FileText {
    /// The text; `None` when the file is binary or too large.
    pub content: Option<String>,
    pub size: u64,
    pub mtime: f64,
    pub binary: bool,
    pub too_large: bool,
}

/// `root` and `rel` resolved inside the project (`dir`: a folder is
/// wanted, else a file), with the project's canonical top.
fn resolve(root: &Path, rel: &str, dir: bool) -> Result<(PathBuf, PathBuf), ProjectError> {
    let what = if dir { "folder" } else { "file" };
    let escape =
        || ProjectError::InvalidPath(format!("'{rel}' is not a {what} inside the project"));
    let rel_path = Path::new(rel);
    for part in rel_path.components() {
        match part {
            Component::Normal(p) if HIDDEN.iter().any(|h| p == *h) => return Err(escape()),
            Component::Normal(_) | Component::CurDir => {}
            _ => return Err(escape()),
        }
    }
    let top = root.canonicalize().map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => ProjectError::PathMissing(root.to_path_buf()),
        _ => ProjectError::Io(e),
    })?;
    let target = top.join(rel_path).canonicalize().map_err(|_| escape())?;
    let kind_ok = if dir {
        target.is_dir()
    } else {
        target.is_file()
    };
    if !target.starts_with(&top) || !kind_ok {
        return Err(escape());
    }
    Ok((top, target))
}

fn mtime_of(md: &std::fs::Metadata) -> f64 {
    md.modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0.0, |d| d.as_secs_f64())
}

/// The text of the file `rel` of the project at `root` (at most
/// `MAX_READ` bytes; a NUL byte in the first 8 KiB marks it binary).
pub fn read(root: &Path, rel: &str) -> Result<FileText, ProjectError> {
    use std::io::Read;
    let (_, path) = resolve(root, rel, false)?;
    let md = std::fs::metadata(&path)?;
    let (size, mtime) = (md.len(), mtime_of(&md));
    if size > MAX_READ {
        return Ok(FileText {
            content: None,
            size,
            mtime,
            binary: false,
            too_large: true,
        });
    }
    let mut bytes = Vec::new();
    std::fs::File::open(&path)?
        .take(MAX_READ)
        .read_to_end(&mut bytes)?;
    let binary = bytes.iter().take(8192).any(|b| *b == 0);
    let content = (!binary).then(|| String::from_utf8_lossy(&bytes).into_owned());
    Ok(FileText {
        content,
        size,
        mtime,
        binary,
        too_large: false,
    })
}

/// The folder `rel` (relative, "" for the top) of the project at `root`.
pub fn list(root: &Path, rel: &str) -> Result<Listing, ProjectError> {
    let (top, dir) = resolve(root, rel, true)?;
    let repo = git2::Repository::open(&top).ok();
    let inside: PathBuf = dir
        .strip_prefix(&top)
        .map(Path::to_path_buf)
        .unwrap_or_default();
    let mut entries = Vec::new();
    let mut truncated = false;
    for item in std::fs::read_dir(&dir)? {
        let item = item?;
        let name = item.file_name().to_string_lossy().into_owned();
        if inside.as_os_str().is_empty() && HIDDEN.contains(&name.as_str()) {
            continue;
        }
        if entries.len() >= MAX_ENTRIES {
            truncated = true;
            break;
        }
        let Ok(md) = std::fs::symlink_metadata(item.path()) else {
            continue;
        };
        let kind = if md.file_type().is_symlink() {
            "symlink"
        } else if md.is_dir() {
            "dir"
        } else {
            "file"
        };
        let mtime = mtime_of(&md);
        let ignored = repo
            .as_ref()
            .and_then(|r| r.is_path_ignored(inside.join(&name)).ok())
            .unwrap_or(false);
        entries.push(FileEntry {
            name,
            kind,
            size: if md.is_file() { md.len() } else { 0 },
            mtime,
            ignored,
        });
    }
    entries.sort_by(|a, b| {
        (a.kind != "dir")
            .cmp(&(b.kind != "dir"))
            .then_with(|| a.name.to_lowercase().cmp(&b.name.to_lowercase()))
    });
    Ok(Listing { entries, truncated })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_inside_the_project_only_and_never_follows_a_link_out() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("proj");
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::create_dir_all(root.join(".openprogram/x")).unwrap();
        std::fs::write(root.join("src/main.rs"), "fn main() {}").unwrap();
        std::fs::write(root.join("README"), "hi").unwrap();
        let outside = tmp.path().join("secret");
        std::fs::create_dir_all(&outside).unwrap();
        std::os::unix::fs::symlink(&outside, root.join("out")).unwrap();

        let top = list(&root, "").unwrap();
        let names: Vec<_> = top
            .entries
            .iter()
            .map(|e| (e.name.as_str(), e.kind))
            .collect();
        assert_eq!(
            names,
            [("src", "dir"), ("out", "symlink"), ("README", "file")]
        );
        assert_eq!(list(&root, "src").unwrap().entries[0].name, "main.rs");
        assert_eq!(
            read(&root, "src/main.rs").unwrap().content.as_deref(),
            Some("fn main() {}")
        );
        std::fs::write(outside.join("key"), "secret").unwrap();
        assert!(
            read(&root, "out/key").is_err(),
            "a link out is not followed"
        );
        assert!(read(&root, "src").is_err(), "a folder is not a file");
        for bad in ["/etc", "..", "src/../..", "out", ".git", ".openprogram/x"] {
            assert!(
                matches!(list(&root, bad), Err(ProjectError::InvalidPath(_))),
                "{bad} must be refused"
            );
        }
    }
}
