//! A held agent turn: the agent's changes of a turn that could not land on
//! the user's branch (the tree was dirty when it began), kept as a commit
//! on the user's HEAD under a private ref,
//! `refs/openprogram/sessions/<session>/turn-<n>`. Built from trees only:
//! the user's index, work tree, HEAD and stash are never touched.

use std::path::Path;

use git2::{build::TreeUpdateBuilder, FileMode, Oid, Repository, Signature};

use super::head_commit;
use super::trailers::Trailers;

/// Where a session's held turns live.
pub const HELD_PREFIX: &str = "refs/openprogram/sessions/";

/// The private ref of a session's held turn `turn` (`extra` tells two
/// turns of one number apart: a retry branch's turn has its own).
pub fn held_ref_name(session_id: &str, turn: u64, extra: Option<u64>) -> String {
    match extra {
        None => format!("{HELD_PREFIX}{session_id}/turn-{turn}"),
        Some(seq) => format!("{HELD_PREFIX}{session_id}/turn-{turn}-{seq}"),
    }
}

fn file_mode(raw: i32) -> Option<FileMode> {
    match raw {
        0o100644 => Some(FileMode::Blob),
        0o100755 => Some(FileMode::BlobExecutable),
        0o120000 => Some(FileMode::Link),
        0o160000 => Some(FileMode::Commit),
        _ => None,
    }
}

/// Tree `base` with each of `paths` as it is in tree `from` (removed
/// where `from` has no such file).
pub fn tree_with_paths(
    repo: &Repository,
    base: Oid,
    from: Oid,
    paths: &[String],
) -> Result<Oid, git2::Error> {
    let (base_tree, from_tree) = (repo.find_tree(base)?, repo.find_tree(from)?);
    let mut updates = TreeUpdateBuilder::new();
    // Removals first: libgit2 applies the updates in order.
    for p in paths {
        let gone = from_tree.get_path(Path::new(p)).is_err();
        if gone && base_tree.get_path(Path::new(p)).is_ok() {
            updates.remove(p.as_str());
        }
    }
    for p in paths {
        if let Ok(entry) = from_tree.get_path(Path::new(p)) {
            if let Some(mode) = file_mode(entry.filemode()) {
                updates.upsert(p.as_str(), entry.id(), mode);
            }
        }
    }
    updates.create_updated(repo, &base_tree)
}

/// A held turn as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Held {
    pub reference: String,
    pub commit: Oid,
}

/// Keep `tree` as a commit on HEAD under the session's private ref for
/// the turn (`turn`, `first_seq`). `None` when the tree is HEAD's (the
/// agent changed nothing of its own). Idempotent: a ref already holding
/// this turn (same session and first sequence number) is returned.
pub fn hold_turn(
    repo: &Repository,
    author: &Signature<'_>,
    message: &str,
    session_id: &str,
    (turn, first_seq): (u64, u64),
    tree: Oid,
) -> Result<Option<Held>, git2::Error> {
    let parent = head_commit(repo)?;
    let parent_tree = match &parent {
        Some(p) => p.tree_id(),
        None => super::worktree_snapshot::empty_tree(repo)?,
    };
    if parent_tree == tree {
        return Ok(None);
    }
    for extra in [None, Some(first_seq)] {
        let name = held_ref_name(session_id, turn, extra);
        let existing = match repo.find_reference(&name) {
            Ok(r) => r.peel_to_commit().ok(),
            Err(e) if e.code() == git2::ErrorCode::NotFound => {
                let t = repo.find_tree(tree)?;
                let parents: Vec<&git2::Commit<'_>> = parent.iter().collect();
                let oid = repo.commit(None, author, author, message, &t, &parents)?;
                repo.reference(&name, oid, false, "openprogram: hold the agent's turn")?;
                return Ok(Some(Held {
                    reference: name,
                    commit: oid,
                }));
            }
            Err(e) => return Err(e),
        };
        if let Some(c) = existing {
            let t = Trailers::parse(c.message().unwrap_or(""));
            if t.session.as_deref() == Some(session_id) && t.first_seq == Some(first_seq) {
                return Ok(Some(Held {
                    reference: name,
                    commit: c.id(),
                }));
            }
        }
    }
    Err(git2::Error::from_str(
        "both private refs of this turn number hold other turns",
    ))
}
