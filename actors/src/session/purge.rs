//! `purge`: the one deliberate exception to "never rewrite". The
//! session's whole history is rewritten with every secret the global rules
//! find replaced by its placeholder (`git::rewrite`): every turn, branch,
//! commit message, author, time and trailer kept, one new commit per old
//! one. Then the old objects go (`git::rewrite::expunge`: no other pack,
//! no loose object, no reflog), the work tree's files (committed or not:
//! an open turn's nodes, queued messages, `meta.json`) are redacted in
//! place, the git index is made from the new HEAD, and the purge is
//! recorded in `.git/openprogram-purges.json`: old and new commit ids,
//! who, when, which kinds.
//!
//! Crash safety: the new objects are in a fsynced pack before anything
//! refers to them; the purge's record is written to
//! `.git/openprogram-purge.json` before a ref moves, and a load that finds
//! it finishes the purge (moving refs is idempotent), so a kill at any
//! point leaves either the old history whole or the new one reachable.
//! The write-ahead log is checkpointed first: no segment still holds the
//! session's old bytes for a replay to write back.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::error::SessionError;
use super::layout::{self, META};
use super::redaction::merge_redactions;
use crate::fsio;
use crate::git::{self, rewrite::RefMove};
use crate::meta::{now, SessionMeta};
use crate::node::Node;
use crate::redact::{Policy, Redaction, RedactionConfig, Redactor, METADATA_KEY};
use crate::store::Store;

/// A purge under way (in `.git`): finished by the next load.
pub const PENDING: &str = "openprogram-purge.json";
/// The purges made (in `.git`), oldest first.
pub const RECORDS: &str = "openprogram-purges.json";
/// Kept refs are named after the commit they keep.
const KEPT_PREFIX: &str = "refs/openprogram/kept/";

/// A ref a purge moved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct MovedRef {
    pub name: String,
    pub old: String,
    pub new: String,
}

/// One purge of a session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PurgeRecord {
    pub id: String,
    /// When (seconds since the epoch).
    #[cfg_attr(feature = "openapi", schema(value_type = f64))]
    pub at: OrderedTime,
    /// Who asked (the client's name, or `cli`).
    pub by: String,
    /// Secrets replaced, by kind (texts in history and in the work tree).
    pub kinds: BTreeMap<String, usize>,
    /// Stored files of history rewritten.
    pub blobs: usize,
    /// Files of the work tree rewritten (committed or not).
    pub files: usize,
    /// Every rewritten commit, `[old, new]`, parents first: a client
    /// holding an old id finds its new one here.
    pub commits: Vec<[String; 2]>,
    pub refs: Vec<MovedRef>,
    /// The one pack the repository keeps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pack: Option<String>,
}

/// A time that compares equal to itself (an `f64` in JSON).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct OrderedTime(pub f64);

impl Eq for OrderedTime {}

impl PurgeRecord {
    /// The commit `old` became, if a purge rewrote it (following later
    /// purges too).
    pub fn resolve(records: &[PurgeRecord], old: &str) -> Option<String> {
        let mut id = old.to_string();
        let mut moved = false;
        for r in records {
            if let Some([_, new]) = r.commits.iter().find(|[o, _]| *o == id) {
                id = new.clone();
                moved = true;
            }
        }
        moved.then_some(id)
    }
}

/// The purges recorded for the session at `dir`.
pub fn records(dir: &Path) -> Result<Vec<PurgeRecord>, SessionError> {
    match fsio::read_json(&dir.join(".git").join(RECORDS)) {
        Ok(r) => Ok(r),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(e.into()),
    }
}

/// Stored texts with the global rules' secrets replaced.
struct Cleaner<'a> {
    redactor: &'a Redactor,
    policy: Policy<'a>,
    kinds: BTreeMap<String, usize>,
}

impl Cleaner<'_> {
    fn count(&mut self, found: &[Redaction]) {
        for r in found {
            *self.kinds.entry(r.kind.clone()).or_default() += 1;
        }
    }

    fn text(&mut self, text: &str, field: &str) -> Option<String> {
        let mut found = Vec::new();
        let out = self
            .redactor
            .redact_text(&self.policy, text, field, &mut found)
            .ok()
            .flatten();
        self.count(&found);
        out
    }

    fn value(&mut self, v: &mut Value, field: &str, found: &mut Vec<Redaction>) {
        let _ = self.redactor.redact_value(&self.policy, v, field, found);
    }

    /// A stored file named `name`, redacted (None: nothing to replace).
    fn file(&mut self, name: &str, bytes: &[u8]) -> Option<Vec<u8>> {
        if layout::parse_node_file_name(name).is_some() {
            if let Ok(mut node) = serde_json::from_slice::<Node>(bytes) {
                let mut found = Vec::new();
                self.value(&mut node.content, "/content", &mut found);
                if let Some(out) = node.output.as_mut() {
                    self.value(out, "/output", &mut found);
                }
                for (k, v) in node.metadata.iter_mut() {
                    if k != METADATA_KEY {
                        let key = k.replace('~', "~0").replace('/', "~1");
                        self.value(v, &format!("/metadata/{key}"), &mut found);
                    }
                }
                if found.is_empty() {
                    return None;
                }
                self.count(&found);
                merge_redactions(&mut node.metadata, found, &[]);
                return fsio::json_bytes(&node).ok();
            }
        }
        if name.ends_with(".json") {
            if let Ok(mut v) = serde_json::from_slice::<Value>(bytes) {
                let mut found = Vec::new();
                self.value(&mut v, "", &mut found);
                if found.is_empty() {
                    return None;
                }
                self.count(&found);
                if name == META {
                    if let Ok(meta) = serde_json::from_value::<SessionMeta>(v.clone()) {
                        return fsio::json_bytes(&meta).ok();
                    }
                }
                return fsio::json_bytes(&v).ok();
            }
        }
        let text = std::str::from_utf8(bytes).ok()?;
        self.text(text, name).map(String::into_bytes)
    }
}

/// The default rules, for a store without a redactor of its own.
fn default_redactor(store: &Store) -> Result<Option<Redactor>, SessionError> {
    match store.redactor() {
        Some(_) => Ok(None),
        None => Ok(Some(Redactor::new(
            &RedactionConfig::default(),
            store.state_dir(),
        )?)),
    }
}

/// Purge the session at `dir` (its actor holds it: nothing else writes
/// it). None when nothing held a secret.
pub fn purge_folder(
    store: &Store,
    dir: &Path,
    by: &str,
) -> Result<Option<PurgeRecord>, SessionError> {
    if store.awaits_replay(dir) {
        return Err(SessionError::Unavailable);
    }
    // No log segment may keep the old bytes for a replay to write back.
    store.checkpoint_log()?;
    let fallback = default_redactor(store)?;
    let Some(redactor) = store.redactor().or(fallback.as_ref()) else {
        return Err(SessionError::Unavailable);
    };
    let record = prepare(redactor, dir, by)?;
    if record.pack.is_some() {
        fsio::atomic_write_json(&dir.join(".git").join(PENDING), &record)?;
    }
    complete(redactor, dir, record)
}

/// A session that arrived whole, not through the write path (a git
/// bundle imported, in its temporary folder; a session of an older layout
/// migrated in place), redacted as the write path would: nothing with mode
/// `off` (or no redactor), its history purged with `redact`; with `refuse`
/// a bundle holding a secret is refused (`logged`: the folder's writes went
/// through the write-ahead log, which is checkpointed first; a migration
/// never refuses what is already stored, it redacts).
pub fn redact_arrived(
    store: &Store,
    dir: &Path,
    by: &str,
    logged: bool,
) -> Result<Option<PurgeRecord>, SessionError> {
    let Some(redactor) = store.redactor() else {
        return Ok(None);
    };
    match redactor.policy(crate::project::DEFAULT_PROJECT, None).mode {
        crate::redact::Mode::Off => Ok(None),
        crate::redact::Mode::Refuse if !logged => {
            let record = prepare(redactor, dir, by)?;
            match record.kinds.keys().next() {
                Some(kind) => Err(SessionError::Secret {
                    kind: kind.clone(),
                    field: "the bundle's history".into(),
                }),
                None => Ok(None),
            }
        }
        _ if logged => purge_folder(store, dir, by),
        _ => {
            let record = prepare(redactor, dir, by)?;
            if record.pack.is_some() {
                fsio::atomic_write_json(&dir.join(".git").join(PENDING), &record)?;
            }
            complete(redactor, dir, record)
        }
    }
}

/// The history rewritten and packed (nothing moved yet): the record of
/// what a purge does, with the kinds found in history.
pub(super) fn prepare(
    redactor: &Redactor,
    dir: &Path,
    by: &str,
) -> Result<PurgeRecord, SessionError> {
    let cleaner = RefCell::new(Cleaner {
        redactor,
        policy: redactor.scan_policy(),
        kinds: BTreeMap::new(),
    });
    let rewritten = git::rewrite::rewrite(
        dir,
        |name, bytes| cleaner.borrow_mut().file(name, bytes),
        |message| cleaner.borrow_mut().text(message, "message"),
    )?;
    Ok(PurgeRecord {
        id: crate::ids::new_id(),
        at: OrderedTime(now()),
        by: by.to_string(),
        kinds: cleaner.into_inner().kinds,
        blobs: rewritten.blobs,
        files: 0,
        commits: rewritten
            .commits
            .iter()
            .map(|(o, n)| [o.to_string(), n.to_string()])
            .collect(),
        refs: rewritten.refs.iter().map(moved).collect(),
        pack: rewritten.pack.clone(),
    })
}

/// Everything after `prepare` (see `finish`), then the record kept and the
/// pending one removed. None when nothing changed.
fn complete(
    redactor: &Redactor,
    dir: &Path,
    mut record: PurgeRecord,
) -> Result<Option<PurgeRecord>, SessionError> {
    let mut cleaner = Cleaner {
        redactor,
        policy: redactor.scan_policy(),
        kinds: std::mem::take(&mut record.kinds),
    };
    record.files += finish(dir, &record, &mut cleaner)?;
    record.kinds = cleaner.kinds;
    if record.commits.is_empty() && record.files == 0 {
        return Ok(None);
    }
    if !records(dir)?.iter().any(|r| r.id == record.id) {
        append(dir, &record)?;
    }
    remove_pending(dir)?;
    Ok(Some(record))
}

fn moved(m: &RefMove) -> MovedRef {
    MovedRef {
        name: m.name.clone(),
        old: m.old.to_string(),
        new: m.new.to_string(),
    }
}

/// A purge a kill interrupted, finished (at a load, before anything reads
/// the session).
pub fn finish_pending(store: &Store, dir: &Path) -> Result<(), SessionError> {
    let pending = dir.join(".git").join(PENDING);
    let record: PurgeRecord = match fsio::read_json(&pending) {
        Ok(r) => r,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e.into()),
    };
    let fallback = default_redactor(store)?;
    let Some(redactor) = store.redactor().or(fallback.as_ref()) else {
        return Err(SessionError::Unavailable);
    };
    tracing::warn!(dir = %dir.display(), purge = %record.id, "finishing an interrupted purge");
    complete(redactor, dir, record)?;
    remove_pending(dir)
}

/// Refs moved, the old objects dropped, the work tree redacted and the
/// index made from HEAD; the number of work-tree files rewritten.
fn finish(
    dir: &Path,
    record: &PurgeRecord,
    cleaner: &mut Cleaner<'_>,
) -> Result<usize, SessionError> {
    if let Some(pack) = &record.pack {
        let repo = git::open_repo(dir)?;
        move_refs(&repo, &record.refs)?;
        git::rewrite::expunge(repo.path(), pack, None)?;
    }
    let files = clean_work_tree(dir, cleaner)?;
    if record.pack.is_some() {
        let repo = git::open_repo(dir)?;
        let tree = repo.head().ok().and_then(|h| h.peel_to_tree().ok());
        git::GitIndex::from_tree(&repo, tree.as_ref(), &[Path::new(META)])?.write()?;
    }
    Ok(files)
}

/// Each ref to its new commit (a kept ref renamed after it); a ref on
/// neither commit (moved since) is left alone.
fn move_refs(repo: &git2::Repository, refs: &[MovedRef]) -> Result<(), SessionError> {
    for m in refs {
        let new = git2::Oid::from_str(&m.new)?;
        if let Some(kept) = m.name.strip_prefix(KEPT_PREFIX) {
            if kept == m.old {
                if let Ok(mut r) = repo.find_reference(&m.name) {
                    repo.reference(&format!("{KEPT_PREFIX}{}", m.new), new, true, "purge")?;
                    r.delete()?;
                }
                continue;
            }
        }
        let now = repo.find_reference(&m.name).ok().and_then(|r| r.target());
        match now {
            Some(at) if at.to_string() == m.old || at == new => {
                repo.reference(&m.name, new, true, "purge")?;
            }
            None => {
                repo.reference(&m.name, new, true, "purge")?;
            }
            Some(at) => {
                tracing::warn!(r#ref = %m.name, at = %at, "a purge left a ref that moved meanwhile");
            }
        }
    }
    Ok(())
}

/// Every file of the session's work tree but `.git` and the agent's
/// scratch folder, redacted in place (atomically).
fn clean_work_tree(dir: &Path, cleaner: &mut Cleaner<'_>) -> Result<usize, SessionError> {
    let mut changed = 0;
    let mut stack: Vec<PathBuf> = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d)? {
            let entry = entry?;
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            let kind = entry.file_type()?;
            if d == dir && (name == ".git" || name == layout::WORKDIR) {
                continue;
            }
            if kind.is_dir() {
                stack.push(path);
            } else if kind.is_file() && !name.starts_with(".tmp-") {
                let bytes = std::fs::read(&path)?;
                if let Some(clean) = cleaner.file(&name, &bytes) {
                    if clean != bytes {
                        fsio::atomic_write(&path, &clean)?;
                        changed += 1;
                    }
                }
            }
        }
    }
    Ok(changed)
}

fn append(dir: &Path, record: &PurgeRecord) -> Result<(), SessionError> {
    let mut all = records(dir)?;
    all.push(record.clone());
    fsio::atomic_write_json(&dir.join(".git").join(RECORDS), &all)?;
    Ok(())
}

fn remove_pending(dir: &Path) -> Result<(), SessionError> {
    match std::fs::remove_file(dir.join(".git").join(PENDING)) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e.into()),
        _ => Ok(fsio::fsync_dir(&dir.join(".git"))?),
    }
}

/// Purge the session (`purge_folder`) while its actor holds it, then load
/// it again from the rewritten folder.
#[derive(actix::Message, Clone)]
#[rtype(result = "Result<Option<PurgeRecord>, SessionError>")]
pub struct Purge {
    pub by: String,
}

impl actix::Handler<Purge> for super::actor::SessionActor {
    type Result = actix::AtomicResponse<Self, Result<Option<PurgeRecord>, SessionError>>;

    fn handle(&mut self, msg: Purge, _: &mut Self::Context) -> Self::Result {
        use super::actor::Slot;
        use actix::prelude::*;
        // A merged pack being written in the folder is waited for.
        let lock = self.upkeep.lock.clone();
        let fut = async move { lock.lock_owned().await }
            .into_actor(self)
            .then(move |guard, act, _| {
                let store = act.store.clone();
                act.blocking(move |slot, dir| {
                    if slot.live()?.commit_is_pending() {
                        return Err(SessionError::Unavailable);
                    }
                    // The old repository handle goes before its packs do.
                    *slot = Slot::Busy;
                    let purged = purge_folder(&store, dir, &msg.by);
                    let mut core = super::core::SessionCore::load(&store, dir)?;
                    let record = purged?;
                    if let Some(r) = &record {
                        core.announce_purged(r)?;
                    }
                    *slot = Slot::Live(Box::new(core));
                    drop(guard);
                    Ok(record)
                })
            });
        AtomicResponse::new(Box::pin(fut.map(|res, act, ctx| {
            if matches!(act.slot, Slot::Busy) {
                // Not loaded again: the next request loads it.
                ctx.stop();
            }
            if matches!(res, Ok(Some(_))) {
                act.notify(crate::messages::ChangeKind::Updated);
            }
            res
        })))
    }
}
