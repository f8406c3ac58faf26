//! What two trees differ by, for a person to read before a change lands:
//! per file its status and line counts, and the unified diff (bounded).

use git2::{DiffFormat, DiffOptions, Oid, Patch, Repository};
use serde::Serialize;

/// One file of a diff.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct FileChange {
    pub path: String,
    /// `added`, `modified`, `deleted`, `typechange` or `renamed`.
    pub status: &'static str,
    pub additions: usize,
    pub deletions: usize,
    pub binary: bool,
}

/// The diff from tree `a` to tree `b`.
#[derive(Debug, Clone, Default, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TreeDiff {
    pub files: Vec<FileChange>,
    pub additions: usize,
    pub deletions: usize,
    /// The unified diff (`git diff` form), at most `max_patch` bytes.
    pub patch: String,
    /// The patch was cut at `max_patch` bytes.
    pub truncated: bool,
}

fn status_word(s: git2::Delta) -> &'static str {
    match s {
        git2::Delta::Added | git2::Delta::Untracked => "added",
        git2::Delta::Deleted => "deleted",
        git2::Delta::Typechange => "typechange",
        git2::Delta::Renamed => "renamed",
        _ => "modified",
    }
}

/// The diff from `a` to `b`; with `max_patch == 0` no patch text.
pub fn tree_diff(
    repo: &Repository,
    a: Oid,
    b: Oid,
    max_patch: usize,
) -> Result<TreeDiff, git2::Error> {
    tree_diff_of(repo, a, b, max_patch, None)
}

/// `tree_diff` of one file only (`path`, taken literally).
pub fn tree_diff_of(
    repo: &Repository,
    a: Oid,
    b: Oid,
    max_patch: usize,
    path: Option<&str>,
) -> Result<TreeDiff, git2::Error> {
    let (ta, tb) = (repo.find_tree(a)?, repo.find_tree(b)?);
    let mut opts = DiffOptions::new();
    opts.include_typechange(true);
    if let Some(p) = path {
        opts.pathspec(p).disable_pathspec_match(true);
    }
    let diff = repo.diff_tree_to_tree(Some(&ta), Some(&tb), Some(&mut opts))?;
    let mut out = TreeDiff::default();
    for i in 0..diff.deltas().len() {
        let Some(delta) = diff.get_delta(i) else {
            continue;
        };
        let path = delta
            .new_file()
            .path()
            .or_else(|| delta.old_file().path())
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_default();
        let (mut additions, mut deletions, mut binary) = (0, 0, delta.flags().is_binary());
        match Patch::from_diff(&diff, i)? {
            Some(patch) => {
                let (_, adds, dels) = patch.line_stats()?;
                (additions, deletions) = (adds, dels);
            }
            None => binary = true,
        }
        out.additions += additions;
        out.deletions += deletions;
        out.files.push(FileChange {
            path,
            status: status_word(delta.status()),
            additions,
            deletions,
            binary,
        });
    }
    if max_patch > 0 {
        let mut text: Vec<u8> = Vec::new();
        diff.print(DiffFormat::Patch, |_, _, line| {
            if text.len() >= max_patch {
                out.truncated = true;
                return false;
            }
            if matches!(line.origin(), '+' | '-' | ' ') {
                text.push(line.origin() as u8);
            }
            text.extend_from_slice(line.content());
            true
        })
        .or_else(|e| {
            // Stopping early is reported as a user abort.
            if out.truncated {
                Ok(())
            } else {
                Err(e)
            }
        })?;
        text.truncate(max_patch);
        out.patch = String::from_utf8_lossy(&text).into_owned();
    }
    Ok(out)
}
