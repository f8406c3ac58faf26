use git2::{Repository, RepositoryState, StatusOptions};

/// Whether a user's working tree is clean, and what is dirty if not
/// (modified, staged, deleted and untracked files; ignored ones excluded).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TreeState {
    pub dirty: Vec<String>,
    /// Set when the repository is mid-merge, mid-rebase, etc.
    pub busy: Option<String>,
}

impl TreeState {
    pub fn is_clean(&self) -> bool {
        self.dirty.is_empty() && self.busy.is_none()
    }
}

pub fn worktree_status(repo: &Repository) -> Result<TreeState, git2::Error> {
    let busy = match repo.state() {
        RepositoryState::Clean => None,
        other => Some(format!(
            "the repository is in the middle of an operation ({other:?})"
        )),
    };
    let mut opts = StatusOptions::new();
    opts.include_untracked(true)
        .recurse_untracked_dirs(true)
        .include_ignored(false)
        .exclude_submodules(true);
    let mut dirty: Vec<String> = repo
        .statuses(Some(&mut opts))?
        .iter()
        .filter_map(|s| s.path().map(str::to_owned))
        .collect();
    dirty.sort();
    Ok(TreeState { dirty, busy })
}
