//! Git operations, one per module, as plain blocking functions over git2
//! (the asyncgit `sync/` layout). Callers run them off the event loop.

mod agent_commit;
mod branches;
mod bundle;
mod commit;
mod fork;
mod git_index;
mod held_turn;
mod init;
mod locks;
mod log;
pub mod pack;
mod recent;
pub mod repack;
mod revert_turns;
pub mod rewrite;
mod trailers;
mod tree_diff;
mod tree_edit;
mod tree_files;
mod worktree_snapshot;
mod worktree_status;
mod worktree_sync;

pub use agent_commit::{agent_commit, AgentCommit};
pub use branches::{
    all_commits, attach_head, branch_tip_oids, create_branch, current_branch, delete_branch,
    list_branches, new_branch_name, BranchTip, CommitRow, MAIN,
};
pub use bundle::{read_bundle, write_bundle, BundleError, ImportLimits};
pub use commit::{
    acked_ref, acknowledge_branches, commit_paths, finish_commit, prepare_commit, CommitOutcome,
    Head, PreparedCommit, ACKED_PREFIX,
};
pub use fork::fork_repo;
pub use git_index::GitIndex;
pub use held_turn::{held_ref_name, hold_turn, tree_with_paths, Held, HELD_PREFIX};
pub use init::{disable_reflogs, init_repo, init_session_repo, open_repo, remove_sample_hooks};
pub use locks::remove_stale_locks;
pub use log::{log, short_sha, CommitInfo};
pub use recent::{head_id, RecentObjects};
pub use repack::repack_all;
pub use revert_turns::{land, plan_apply, plan_revert, LaterCommit, Plan};
pub use trailers::{head_trailers, Trailers};
pub use tree_diff::{tree_diff, tree_diff_of, FileChange, TreeDiff};
pub use tree_files::{blobs_added_under, blobs_under};
pub use worktree_snapshot::{
    changed_paths, empty_tree, head_tree_id, path_matches, worktree_snapshot,
};
pub use worktree_status::{worktree_status, TreeState};
pub use worktree_sync::sync_worktree;
pub mod trailers_keys {
    pub use super::trailers::{
        BRANCH, FIRST_SEQ, HEAD_NODE, LAST_SEQ, PROJECT_COMMIT, SESSION, TURN,
    };
}

#[derive(Debug, thiserror::Error)]
pub enum GitError {
    #[error("git: {0}")]
    Git(#[from] git2::Error),
    #[error("io: {0}")]
    Io(#[from] std::io::Error),
    #[error("nothing to commit")]
    Empty,
}

/// Most bytes of pack files libgit2 keeps mapped across every repository
/// of the process (its default is 8 GiB: with hundreds of small packs per
/// busy session, and the maps of merged packs kept until a window is
/// recycled, the mapped files grew the server's resident memory without
/// bound). A turn's commit builds on objects kept in memory; views of
/// history, the search indexer and merges read packs, and a full 64 MiB
/// of windows was most of what a server under load held beyond its live
/// data.
pub const MAPPED_LIMIT: usize = 16 << 20;
/// libgit2's limit on pack files open at once stays off (its default).
/// With a limit, registering a pack closes the least recently used pack
/// file after releasing the lock that keeps packs alive: a pack freed by
/// another thread in between is then written to after it was freed. Under
/// the mixed load this crashed the server in `git_mwindow_scan_recently_used`
/// (a general protection fault) and, once, glibc's "unaligned tcache
/// chunk" abort. Open packs are bounded by the merges instead, and the
/// server raises its open-file limit at start (`fsio::raise_open_files`).
pub const MAPPED_FILES: usize = 0;
/// Most bytes of parsed objects libgit2 caches across every repository
/// (default 256 MiB; the store keeps what it needs in memory itself).
pub const OBJECT_CACHE: usize = 16 << 20;

/// Turn on libgit2's fsync of objects, refs and the index, once per process.
/// Without it an acknowledged commit could vanish on power loss. Also
/// bounds libgit2's process-wide memory: mapped pack windows
/// (`MAPPED_LIMIT`) and its object cache (`OBJECT_CACHE`); libgit2 unmaps
/// the least recently used beyond them. Open pack files are not limited
/// (`MAPPED_FILES`).
pub fn enable_fsync() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // Any git2 option call runs libgit2's global init first.
        git2::opts::enable_caching(true);
        // Objects read back are not re-hashed (git does not either): the
        // check cost a SHA-1 of every object each read, ~9 % of a
        // server's CPU under whole turns (the turn's own commit read, the
        // search indexer's tree diffs). `fsck` hashes what it reads.
        git2::opts::strict_hash_verification(false);
        // Objects written are not checked against the object store for
        // the objects they name (libgit2's "strict object creation"):
        // every tree entry libgit2 inserts (a project's agent commit, a
        // held turn, a work-tree snapshot) was a lookup through every
        // pack. What the engine writes names objects it just wrote or
        // read; `git fsck` in the tests checks every repository whole.
        git2::opts::strict_object_creation(false);
        // SAFETY: git_libgit2_opts with ENABLE_FSYNC_GITDIR takes one int
        // argument; libgit2 has been initialised by the call above.
        unsafe {
            libgit2_sys::git_libgit2_opts(
                libgit2_sys::GIT_OPT_ENABLE_FSYNC_GITDIR as std::ffi::c_int,
                1 as std::ffi::c_int,
            );
        }
        // SAFETY: plain setters of libgit2's global limits (size_t and
        // ssize_t arguments), called once before any repository is used.
        unsafe {
            let _ = git2::opts::set_mwindow_mapped_limit(MAPPED_LIMIT);
            let _ = git2::opts::set_mwindow_file_limit(MAPPED_FILES);
            libgit2_sys::git_libgit2_opts(
                libgit2_sys::GIT_OPT_SET_CACHE_MAX_SIZE as std::ffi::c_int,
                OBJECT_CACHE as libc::ssize_t,
            );
        }
    });
}

/// The commit HEAD points at; `None` on an unborn branch (no commits yet).
pub fn head_commit(repo: &git2::Repository) -> Result<Option<git2::Commit<'_>>, git2::Error> {
    match repo.head() {
        Ok(head) => head.peel_to_commit().map(Some),
        Err(e) if e.code() == git2::ErrorCode::UnbornBranch => Ok(None),
        Err(e) => Err(e),
    }
}

/// The identity of session-repo commits.
pub fn store_signature() -> Result<git2::Signature<'static>, git2::Error> {
    git2::Signature::now("OpenProgram", "sessions@openprogram.local")
}

/// Run the git CLI in `dir` (unit tests check our files with git itself);
/// its standard output, or a panic with its error.
#[cfg(test)]
pub(crate) fn run_git(dir: &std::path::Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}
