//! Many sessions pushed to a shared-layout remote in one connection.
//!
//! A staging bare repository (`<remote>.stage.git`) names each session's
//! branches (`refs/stage/<id>/heads/*`, one `packed-refs` file) and holds,
//! in memory only (a libgit2 mempack backend), exactly the objects the
//! push reads: the commits the remote lacks with their trees and new
//! blobs, and the remote's tips with their trees and a few ancestors (what
//! libgit2's walk and edge marking look at). Each object is read once from
//! its own session's repository, so the cost follows what is sent, not the
//! number of sessions; the server runs one `receive-pack` for the batch
//! (a loopback `git daemon` spends about 50 ms per connection before any
//! object moves). A batch stops growing at `MAX_BATCH_BYTES` of objects.
//! If libgit2 still misses an object, the batch's sessions are pushed one
//! by one from their own repositories.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use git2::{Direction, Odb, Oid, Repository};

use super::credentials::callbacks;
use super::error::{describe, PushError};
use super::push::{local_branches, push_session, send, Pushed};
use super::remote::RemoteConfig;

/// Object bytes held in memory for one push at most (a session alone may
/// exceed it: it is then its own batch).
pub const MAX_BATCH_BYTES: usize = 32 << 20;
/// Ancestors of a remote tip copied beside it (libgit2's walk looks a few
/// commits past the last one it sends).
const TIP_ANCESTORS: usize = 16;

/// One session of a batch.
struct Member {
    id: String,
    dir: PathBuf,
    repo: Repository,
    head: Option<String>,
    branches: Vec<(String, Oid)>,
}

/// What a member sends: refspecs (stage ref → remote ref), and what is
/// refused before sending.
#[derive(Default)]
struct Plan {
    specs: Vec<(String, String)>,
    diverged: Vec<String>,
    want: Vec<Oid>,
    have: Vec<Oid>,
}

/// Push every session of `sessions` (id, folder), in as few connections
/// as the byte budget allows. One answer per session, in order.
pub fn push_batch(
    remote: &RemoteConfig,
    stage: &Path,
    sessions: &[(String, PathBuf)],
) -> Vec<(String, Result<Pushed, PushError>)> {
    let mut answers: HashMap<String, Result<Pushed, PushError>> = HashMap::new();
    let mut members = Vec::new();
    for (id, dir) in sessions {
        match read_member(id, dir) {
            Ok(m) => members.push(m),
            Err(e) => {
                answers.insert(id.clone(), Err(e));
            }
        }
    }
    let mut rest: &[Member] = &members;
    while !rest.is_empty() {
        match push_some(remote, stage, rest) {
            Ok((taken, per)) => {
                answers.extend(per);
                rest = &rest[taken.max(1).min(rest.len())..];
            }
            Err(e) if e.remote_wide() => {
                for m in rest {
                    answers.insert(m.id.clone(), Err(e.clone()));
                }
                break;
            }
            Err(e) => {
                // libgit2 wanted an object the batch lacks (or the like):
                // each session on its own, from its own repository.
                tracing::warn!(remote = %remote.name, error = %e, "batched push failed; pushing one by one");
                metrics::counter!("openprogram_replication_batch_fallbacks_total", "remote" => remote.name.clone()).increment(1);
                for m in rest {
                    answers.insert(m.id.clone(), push_session(remote, &m.id, &m.dir));
                }
                break;
            }
        }
    }
    sessions
        .iter()
        .map(|(id, dir)| {
            let a = match answers.remove(id) {
                // Judged again on its own, where a purged session's
                // rewritten branches, or a turn committed again after a
                // crash, replace the remote's under a lease (a true
                // divergence is reported as such there).
                Some(Err(PushError::Diverged(_))) => push_session(remote, id, dir),
                Some(a) => a,
                None => Err(PushError::Local("not pushed".into())),
            };
            (id.clone(), a)
        })
        .collect()
}

fn read_member(id: &str, dir: &Path) -> Result<Member, PushError> {
    let repo = crate::git::open_repo(dir).map_err(|e| PushError::Local(describe(&e)))?;
    let branches = local_branches(&repo).map_err(|e| PushError::Local(describe(&e)))?;
    let head = repo
        .head()
        .ok()
        .and_then(|h| h.target())
        .map(|o| o.to_string());
    Ok(Member {
        id: id.to_string(),
        dir: dir.to_path_buf(),
        repo,
        head,
        branches,
    })
}

fn stage_ref(id: &str, local: &str) -> String {
    let branch = local.strip_prefix("refs/").unwrap_or(local);
    format!("refs/stage/{id}/{branch}")
}

/// A fresh staging repository for this batch: its refs, no objects on
/// disk, a mempack backend in front (objects written go there).
fn open_stage(stage: &Path, members: &[Member]) -> Result<Repository, PushError> {
    let local = |e: std::io::Error| PushError::Local(format!("staging repository: {e}"));
    if !stage.join("HEAD").exists() {
        Repository::init_bare(stage).map_err(|e| PushError::Local(describe(&e)))?;
    }
    let mut refs: Vec<(String, Oid)> = members
        .iter()
        .flat_map(|m| m.branches.iter().map(|(b, o)| (stage_ref(&m.id, b), *o)))
        .collect();
    refs.sort();
    let mut packed = String::from("# pack-refs with: peeled fully-peeled sorted \n");
    for (name, oid) in &refs {
        let _ = writeln!(packed, "{oid} {name}");
    }
    let _ = std::fs::remove_dir_all(stage.join("refs/stage"));
    let _ = std::fs::remove_file(stage.join("objects/info/alternates"));
    // A scratch file, rebuilt for every batch: no fsync needed.
    crate::fsio::atomic_write_unsynced(&stage.join("packed-refs"), packed.as_bytes())
        .map_err(local)?;
    crate::git::open_repo(stage).map_err(|e| PushError::Local(describe(&e)))
}

/// Push as many of `members` (from the first) as fit the byte budget in
/// one connection; how many were taken, and their answers.
#[allow(clippy::type_complexity)]
fn push_some(
    remote: &RemoteConfig,
    stage: &Path,
    members: &[Member],
) -> Result<(usize, Vec<(String, Result<Pushed, PushError>)>), PushError> {
    let repo = open_stage(stage, members)?;
    let odb = repo.odb().map_err(|e| PushError::Local(describe(&e)))?;
    let _mempack = odb
        .add_new_mempack_backend(1000)
        .map_err(|e| PushError::Local(describe(&e)))?;
    let mut anon = repo
        .remote_anonymous(&remote.url)
        .map_err(|e| PushError::Unreachable(describe(&e)))?;
    let mut conn = anon
        .connect_auth(Direction::Push, Some(callbacks(remote)), None)
        .map_err(|e| PushError::Unreachable(describe(&e)))?;
    let advertised: HashMap<String, Oid> = conn
        .list()
        .map_err(|e| PushError::Unreachable(describe(&e)))?
        .iter()
        .map(|h| (h.name().to_string(), h.oid()))
        .collect();
    let mut plans = Vec::new();
    let mut bytes = 0usize;
    for m in members {
        if bytes >= MAX_BATCH_BYTES && !plans.is_empty() {
            break;
        }
        let plan = plan(remote, m, &advertised);
        bytes += copy_objects(&m.repo, &odb, &plan.want, &plan.have)
            .map_err(|e| PushError::Local(describe(&e)))?;
        plans.push(plan);
    }
    let taken = plans.len();
    let specs: Vec<String> = plans
        .iter()
        .flat_map(|p| p.specs.iter().map(|(from, to)| format!("{from}:{to}")))
        .collect();
    let owner: HashMap<&str, usize> = plans
        .iter()
        .enumerate()
        .flat_map(|(i, p)| p.specs.iter().map(move |(_, to)| (to.as_str(), i)))
        .collect();
    let mut refused: HashMap<usize, (Vec<String>, String)> = HashMap::new();
    if !specs.is_empty() {
        let answers = send(remote, conn.remote(), &specs)?;
        for (name, msg) in answers {
            if let Some(i) = owner.get(name.as_str()) {
                let entry = refused.entry(*i).or_insert_with(|| (Vec::new(), msg));
                entry.0.push(name);
            }
        }
    }
    let per = plans
        .iter()
        .zip(members)
        .enumerate()
        .map(|(i, (p, m))| {
            let answer = if let Some((refs, message)) = refused.remove(&i) {
                Err(PushError::Refused {
                    refs: refs.join(", "),
                    message,
                })
            } else if !p.diverged.is_empty() {
                Err(PushError::Diverged(p.diverged.join(", ")))
            } else {
                Ok(Pushed {
                    head: m.head.clone(),
                    updated: p.specs.len(),
                })
            };
            (m.id.clone(), answer)
        })
        .collect();
    Ok((taken, per))
}

/// Which branches of `m` to push (fast-forward only), judged in the
/// session's own repository.
fn plan(remote: &RemoteConfig, m: &Member, advertised: &HashMap<String, Oid>) -> Plan {
    let mut p = Plan::default();
    for (branch, oid) in &m.branches {
        let target = remote.remote_ref(&m.id, branch);
        match advertised.get(&target) {
            Some(theirs) if theirs == oid => {
                p.have.push(*theirs);
            }
            Some(theirs) => {
                let follows = m.repo.find_commit(*theirs).is_ok()
                    && m.repo.graph_descendant_of(*oid, *theirs).unwrap_or(false);
                if follows {
                    p.have.push(*theirs);
                    p.want.push(*oid);
                    p.specs.push((stage_ref(&m.id, branch), target));
                } else {
                    p.diverged.push(target);
                }
            }
            None => {
                p.want.push(*oid);
                p.specs.push((stage_ref(&m.id, branch), target));
            }
        }
    }
    p
}

/// Copy into `dst` what a push of `want` over `have` reads: the commits
/// between, every tree under them, their blobs that `have` lacks, and
/// `have`'s commits, trees and first ancestors. The bytes copied.
fn copy_objects(
    src: &Repository,
    dst: &Odb<'_>,
    want: &[Oid],
    have: &[Oid],
) -> Result<usize, git2::Error> {
    if want.is_empty() {
        return Ok(0);
    }
    let sodb = src.odb()?;
    let mut copied: HashSet<Oid> = HashSet::new();
    // Trees already walked (content-addressed: an unchanged subtree has
    // the same id, so each is walked once for the whole batch member).
    let mut seen: HashSet<Oid> = HashSet::new();
    let mut bytes = 0usize;
    let mut copy = |oid: Oid, copied: &mut HashSet<Oid>| -> Result<(), git2::Error> {
        if copied.insert(oid) {
            let o = sodb.read(oid)?;
            bytes += o.len();
            dst.write(o.kind(), o.data())?;
        }
        Ok(())
    };
    // The remote's side: tips, their ancestors, every tree (blobs are
    // only named by the trees: their ids are enough to skip them).
    let mut have_blobs: HashSet<Oid> = HashSet::new();
    for h in have {
        let mut queue = vec![*h];
        let mut n = 0;
        while let Some(c) = queue.pop() {
            if n > TIP_ANCESTORS || copied.contains(&c) {
                continue;
            }
            n += 1;
            let Ok(commit) = src.find_commit(c) else {
                continue;
            };
            copy(c, &mut copied)?;
            queue.extend(commit.parent_ids());
        }
        if let Ok(commit) = src.find_commit(*h) {
            walk_tree(src, commit.tree_id(), &mut seen, &mut |oid, is_tree| {
                if is_tree {
                    copy(oid, &mut copied)
                } else {
                    have_blobs.insert(oid);
                    Ok(())
                }
            })?;
        }
    }
    // The new side.
    let mut walk = src.revwalk()?;
    for w in want {
        walk.push(*w)?;
    }
    for h in have {
        walk.hide(*h)?;
    }
    for c in walk {
        let c = c?;
        copy(c, &mut copied)?;
        let tree = src.find_commit(c)?.tree_id();
        walk_tree(src, tree, &mut seen, &mut |oid, is_tree| {
            if is_tree || !have_blobs.contains(&oid) {
                copy(oid, &mut copied)
            } else {
                Ok(())
            }
        })?;
    }
    Ok(bytes)
}

/// Call `f(oid, is_tree)` for `tree` and everything under it, skipping
/// trees in `seen` (and adding those walked).
fn walk_tree(
    repo: &Repository,
    tree: Oid,
    seen: &mut HashSet<Oid>,
    f: &mut dyn FnMut(Oid, bool) -> Result<(), git2::Error>,
) -> Result<(), git2::Error> {
    let mut stack = vec![tree];
    while let Some(t) = stack.pop() {
        if !seen.insert(t) {
            continue;
        }
        f(t, true)?;
        let tree = repo.find_tree(t)?;
        for e in tree.iter() {
            match e.kind() {
                Some(git2::ObjectType::Tree) => stack.push(e.id()),
                Some(git2::ObjectType::Blob) => f(e.id(), false)?,
                _ => {}
            }
        }
    }
    Ok(())
}
