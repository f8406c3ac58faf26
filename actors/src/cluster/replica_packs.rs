//! A replica repository's packs kept few: each push adds one pack, and
//! libgit2 looks an object up in every pack, so once a replica holds more
//! than `MAX_PACKS` the smaller ones are merged into one (the largest
//! stays as it is). Each merge copies the packs merged, not the history:
//! its cost follows what was pushed since the last one.

use std::io::Write;
use std::path::{Path, PathBuf};

use git2::Repository;

use super::error::ClusterError;

/// Packs a replica keeps before its smaller ones are merged.
pub const MAX_PACKS: usize = 16;

/// Merge the smaller packs of the repository at `dir` when it has more
/// than `MAX_PACKS`. The merged pack is written (and fsync'd) before the
/// packs it replaces are removed: a crash in between leaves objects twice,
/// never missing. Whoever calls this holds the session's replica lock.
pub fn tidy(repo: &Repository, dir: &Path) -> Result<bool, ClusterError> {
    let pack_dir = dir.join("objects").join("pack");
    let mut packs: Vec<(u64, PathBuf)> = Vec::new();
    for entry in std::fs::read_dir(&pack_dir)? {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "pack") {
            let size = std::fs::metadata(&path)?.len();
            packs.push((size, path));
        }
    }
    if packs.len() <= MAX_PACKS {
        return Ok(false);
    }
    packs.sort();
    packs.pop();
    let mut builder = repo.packbuilder()?;
    for (_, pack) in &packs {
        let bytes = std::fs::read(pack.with_extension("idx"))?;
        let (entries, _) =
            crate::git::pack::read_index(&bytes).map_err(|e| ClusterError::Local(e.to_string()))?;
        for (oid, _, _) in entries {
            builder.insert_object(oid, None)?;
        }
    }
    let mut buf = git2::Buf::new();
    builder.write_buf(&mut buf)?;
    let odb = repo.odb()?;
    let mut writer = odb.packwriter()?;
    writer.write_all(&buf)?;
    writer.commit()?;
    for (_, pack) in packs {
        for ext in ["idx", "rev", "keep"] {
            let _ = std::fs::remove_file(pack.with_extension(ext));
        }
        std::fs::remove_file(&pack)?;
    }
    Ok(true)
}
