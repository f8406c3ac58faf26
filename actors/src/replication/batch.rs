//! Many sessions pushed to a shared-layout remote in one connection: a
//! staging repository borrows the sessions' objects (git alternates) and
//! names their branches (`refs/stage/<id>/heads/*`, one `packed-refs`
//! file), so one push sends every session's new objects in one pack and
//! the server runs one `receive-pack` for the whole batch. A loopback
//! `git daemon` spends about 50 ms per connection before any object moves
//! (its `receive-pack` process); per-session pushes cap a remote at about
//! 15 sessions a second, a batch pushes them all in one.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use git2::{Direction, Oid, PushOptions, Repository};

use super::credentials::callbacks;
use super::error::{describe, PushError};
use super::push::{classify, local_branches, Pushed};
use super::remote::RemoteConfig;

/// One session of a batch as it was read before the push.
struct Member {
    id: String,
    head: Option<String>,
    branches: Vec<(String, Oid)>,
}

/// Push every session of `sessions` (id, folder) in one connection, through
/// the staging repository `stage`. One answer per session, in order.
pub fn push_batch(
    remote: &RemoteConfig,
    stage: &Path,
    sessions: &[(String, PathBuf)],
) -> Vec<(String, Result<Pushed, PushError>)> {
    let mut answers: HashMap<String, Result<Pushed, PushError>> = HashMap::new();
    let mut members = Vec::new();
    let mut alternates = String::new();
    for (id, dir) in sessions {
        match read_member(id, dir) {
            Ok((m, objects)) => {
                let _ = writeln!(alternates, "{}", objects.display());
                members.push(m);
            }
            Err(e) => {
                answers.insert(id.clone(), Err(e));
            }
        }
    }
    if !members.is_empty() {
        match push_members(remote, stage, &members, &alternates) {
            Ok(per) => answers.extend(per),
            Err(e) => {
                for m in &members {
                    answers.insert(m.id.clone(), Err(e.clone()));
                }
            }
        }
    }
    sessions
        .iter()
        .map(|(id, _)| {
            let a = answers
                .remove(id)
                .unwrap_or_else(|| Err(PushError::Local("not pushed".into())));
            (id.clone(), a)
        })
        .collect()
}

fn read_member(id: &str, dir: &Path) -> Result<(Member, PathBuf), PushError> {
    let repo = crate::git::open_repo(dir).map_err(|e| PushError::Local(describe(&e)))?;
    let branches = local_branches(&repo).map_err(|e| PushError::Local(describe(&e)))?;
    let head = repo
        .head()
        .ok()
        .and_then(|h| h.target())
        .map(|o| o.to_string());
    let objects = repo.path().join("objects");
    Ok((
        Member {
            id: id.to_string(),
            head,
            branches,
        },
        objects,
    ))
}

fn stage_ref(id: &str, local: &str) -> String {
    let branch = local.strip_prefix("refs/").unwrap_or(local);
    format!("refs/stage/{id}/{branch}")
}

/// Point the staging repository at this batch: its alternates and refs.
fn prepare_stage(
    stage: &Path,
    members: &[Member],
    alternates: &str,
) -> Result<Repository, PushError> {
    let local = |e: std::io::Error| PushError::Local(format!("staging repository: {e}"));
    if !stage.join("HEAD").exists() {
        Repository::init_bare(stage).map_err(|e| PushError::Local(describe(&e)))?;
    }
    let info = stage.join("objects/info");
    std::fs::create_dir_all(&info).map_err(local)?;
    // Scratch files, rebuilt for every batch: no fsync needed.
    crate::fsio::atomic_write_unsynced(&info.join("alternates"), alternates.as_bytes())
        .map_err(local)?;
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
    crate::fsio::atomic_write_unsynced(&stage.join("packed-refs"), packed.as_bytes())
        .map_err(local)?;
    // Opened after the files are written: alternates are read at open.
    crate::git::open_repo(stage).map_err(|e| PushError::Local(describe(&e)))
}

fn push_members(
    remote: &RemoteConfig,
    stage: &Path,
    members: &[Member],
    alternates: &str,
) -> Result<Vec<(String, Result<Pushed, PushError>)>, PushError> {
    let repo = prepare_stage(stage, members, alternates)?;
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
    let mut specs = Vec::new();
    // Remote ref → session, for the server's answers.
    let mut owner: HashMap<String, usize> = HashMap::new();
    let mut diverged: HashMap<usize, Vec<String>> = HashMap::new();
    let mut updated = vec![0usize; members.len()];
    for (i, m) in members.iter().enumerate() {
        for (branch, oid) in &m.branches {
            let target = remote.remote_ref(&m.id, branch);
            let push = match advertised.get(&target) {
                Some(theirs) if theirs == oid => false,
                Some(theirs) => {
                    let follows = repo.find_commit(*theirs).is_ok()
                        && repo.graph_descendant_of(*oid, *theirs).unwrap_or(false);
                    if !follows {
                        diverged.entry(i).or_default().push(target.clone());
                    }
                    follows
                }
                None => true,
            };
            if push {
                specs.push(format!("{}:{target}", stage_ref(&m.id, branch)));
                owner.insert(target, i);
                updated[i] += 1;
            }
        }
    }
    let mut refused: HashMap<usize, (Vec<String>, String)> = HashMap::new();
    if !specs.is_empty() {
        let mut answers: Vec<(String, String)> = Vec::new();
        {
            let mut cbs = callbacks(remote);
            cbs.push_update_reference(|name, status| {
                if let Some(msg) = status {
                    answers.push((name.to_string(), msg.to_string()));
                }
                Ok(())
            });
            let mut opts = PushOptions::new();
            opts.remote_callbacks(cbs);
            conn.remote()
                .push(&specs, Some(&mut opts))
                .map_err(|e| classify(&e))?;
        }
        for (name, msg) in answers {
            if let Some(i) = owner.get(&name) {
                let entry = refused.entry(*i).or_insert_with(|| (Vec::new(), msg));
                entry.0.push(name);
            }
        }
    }
    Ok(members
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let answer = if let Some((refs, message)) = refused.remove(&i) {
                Err(PushError::Refused {
                    refs: refs.join(", "),
                    message,
                })
            } else if let Some(refs) = diverged.remove(&i) {
                Err(PushError::Diverged(refs.join(", ")))
            } else {
                Ok(Pushed {
                    head: m.head.clone(),
                    updated: updated[i],
                })
            };
            (m.id.clone(), answer)
        })
        .collect())
}
