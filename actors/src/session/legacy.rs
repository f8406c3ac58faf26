//! Sessions in an older layout become sessions of this one, once, without
//! losing anything (spec 001 §2.6):
//! - the specification's flat layout, `history/NNNNNN-<r>-<id>.json` (spec
//!   000 §2; `messages/` in spec 001 §2.1), nodes much like ours;
//! - the original system's, `history/<seq:04d>-<u|l|c>-<id>.json`, seq from
//!   0, nodes `{id, created_at, seq, role: user|llm|code, name, input,
//!   output, caller, predecessor, reads, metadata}`, the text in `output`.
//!
//! Each node is converted to the current format and written to its sharded
//! path; then the old file is moved to `legacy/` (kept, and committed);
//! then the conversation is committed turn by turn, in sequence order, each
//! commit with the spec's message and the turn's own time. The original
//! system's own turn commits (`turn: …` on `main`) are kept as they are,
//! below: every turn, those they hold and those appended but never
//! committed, gets a commit of its own on top of them, numbered from 1, so
//! replay, checkout, rewind and retry work as in a native session, and the
//! next message continues `main` with the next number. Every step is
//! idempotent (a converted file is not written twice, numbering comes from
//! the old files wherever they are), so a crash midway leaves a state the
//! next start finishes. A file that cannot be read is left where it is and
//! reported, never deleted.

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::core::SessionCore;
use super::error::SessionError;
use super::layout::{self, HISTORY, META};
use crate::fsio;
use crate::git;
use crate::ids;
use crate::meta::{SessionMeta, TurnRecord};
use crate::node::{Node, Role};
use crate::store::Store;

/// Where migrated files are kept, relative to the session directory.
pub const LEGACY: &str = "legacy";

/// In a session folder while its migration is under way (written before
/// the first file moves, removed after the last commit): a start that finds
/// it finishes the migration, whatever point a crash cut it at.
pub const UNDER_WAY: &str = ".migration-under-way";

/// What migrating one session did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Migrated {
    pub nodes: usize,
    pub turns: usize,
    /// Files left in place, with the reason.
    pub skipped: Vec<(PathBuf, String)>,
}

/// A node file of an older layout: where it is (relative to the session),
/// and its old sequence number for ordering.
struct OldFile {
    rel: PathBuf,
    old_seq: u64,
}

/// Old-layout node files of `dir`: directly in `history/` or `messages/`,
/// or already moved to `legacy/` by a migration cut short.
fn old_files(dir: &Path) -> Vec<OldFile> {
    let mut out = Vec::new();
    for folder in [HISTORY, "messages", LEGACY] {
        let Ok(entries) = fs::read_dir(dir.join(folder)) else {
            continue;
        };
        for e in entries.flatten() {
            if !e.file_type().is_ok_and(|t| t.is_file()) {
                continue;
            }
            let name = e.file_name().to_string_lossy().into_owned();
            let Some(old_seq) = old_name_seq(&name) else {
                continue;
            };
            out.push(OldFile {
                rel: Path::new(folder).join(&name),
                old_seq,
            });
        }
    }
    out.sort_by(|a, b| (a.old_seq, a.rel.file_name()).cmp(&(b.old_seq, b.rel.file_name())));
    out
}

/// The sequence number of an old-layout name `<digits>-<letter>-<id>.json`.
fn old_name_seq(name: &str) -> Option<u64> {
    let stem = name.strip_suffix(".json")?;
    let (seq, rest) = stem.split_once('-')?;
    let (letter, id) = rest.split_once('-')?;
    if seq.is_empty()
        || !seq.bytes().all(|b| b.is_ascii_digit())
        || letter.len() != 1
        || id.is_empty()
    {
        return None;
    }
    seq.parse().ok()
}

/// How many old-layout node files `dir` still has to migrate.
pub fn pending_files(dir: &Path) -> usize {
    old_files(dir)
        .iter()
        .filter(|f| !f.rel.starts_with(LEGACY))
        .count()
}

/// Whether `dir` holds sessions files in an older layout still to migrate,
/// or a migration a crash cut short.
pub fn needs_migration(dir: &Path) -> bool {
    dir.join(UNDER_WAY).exists()
        || ["history", "messages"].iter().any(|folder| {
            fs::read_dir(dir.join(folder)).is_ok_and(|entries| {
                entries.flatten().any(|e| {
                    e.file_type().is_ok_and(|t| t.is_file())
                        && old_name_seq(&e.file_name().to_string_lossy()).is_some()
                })
            })
        })
}

/// Convert one old node (either format) into a current one with `seq`.
fn convert(v: &Value, seq: u64, name_id: &str) -> Result<Node, String> {
    let obj = v.as_object().ok_or("not a JSON object")?;
    let text = |k: &str| obj.get(k).and_then(Value::as_str).map(str::to_owned);
    let id = text("id").unwrap_or_else(|| name_id.to_string());
    ids::validate("node id", &id).map_err(|e| e.to_string())?;
    let mut metadata: Map<String, Value> = obj
        .get("metadata")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let raw_role = text("role").ok_or("no role")?;
    // The original writes `caller: ""` on every node it did not call, and
    // `"ROOT"` on the runtime nodes it records (a relocation): no caller.
    let caller = text("caller").filter(|c| !c.is_empty() && c != "ROOT");
    // The original system keeps every text in `output`; the spec's nodes in
    // `content`.
    let original = matches!(raw_role.as_str(), "llm" | "code")
        || (!obj.contains_key("content") && obj.contains_key("output"));
    let role = match raw_role.as_str() {
        "llm" if metadata.get("role").and_then(Value::as_str) == Some("system") => Role::System,
        "llm" => Role::Assistant,
        "code" if caller.is_some() => Role::Tool,
        "code" => Role::Code,
        other => Role::parse(other).ok_or_else(|| format!("unknown role '{other}'"))?,
    };
    let mut name = text("name");
    let (content, output) = if original {
        let out = obj.get("output").cloned().unwrap_or(Value::Null);
        if role == Role::Assistant {
            // An llm node's name is its model.
            if let Some(model) = name.take() {
                metadata.insert("model".into(), model.into());
            }
        }
        let tool_output = matches!(role, Role::Tool | Role::Code).then(|| out.clone());
        (out, tool_output)
    } else {
        (
            obj.get("content").cloned().unwrap_or(Value::Null),
            obj.get("output").cloned(),
        )
    };
    for key in ["input", "reads"] {
        if let Some(v) = obj.get(key).filter(|v| !v.is_null()) {
            metadata.insert(key.into(), v.clone());
        }
    }
    if role.needs_name() && name.as_deref().is_none_or(str::is_empty) {
        name = Some("tool".into());
    }
    Ok(Node {
        id,
        role,
        content,
        predecessor: text("predecessor").or_else(|| text("parent_id")),
        caller,
        seq,
        created_at: obj.get("created_at").and_then(Value::as_f64).unwrap_or(0.0),
        metadata,
        name,
        output,
    })
}

/// Migrate the session at `dir` (see the module's doc). Blocks.
pub fn migrate(store: &Store, dir: &Path) -> Result<Migrated, SessionError> {
    let mut report = Migrated::default();
    let files = old_files(dir);
    let under_way = dir.join(UNDER_WAY);
    if files.is_empty() {
        remove_durably(&under_way)?;
        return Ok(report);
    }
    if !dir.join(META).exists() {
        return Err(SessionError::Invalid("no meta.json".into()));
    }
    fsio::atomic_write(&under_way, b"")?;
    let ours_committed = commits_of_this_store(dir);
    // 1. and 2.: the nodes converted, the old files kept under legacy/.
    convert_files(dir, &files, &mut report)?;
    // 3. Commit the conversation turn by turn: the first commit also takes
    //    the old files out of the tree (those an older commit holds) and
    //    puts the kept copies in.
    let mut meta = SessionMeta::read_lenient(&dir.join(META))?;
    let mut changed = false;
    if meta.head.is_none() {
        adopt_original_head(&mut meta);
        changed = true;
    }
    // Nothing of this store is committed on top of the original's turns
    // yet: a turn record in meta.json is one a run cut short wrote before
    // its commit, and is made again (kept, the start's check would commit
    // the turns it names on their own).
    if !ours_committed
        && (meta.last_turn.is_some() || meta.turn_count != 0 || meta.open_turn.is_some())
    {
        meta.last_turn = None;
        meta.turn_count = 0;
        meta.open_turn = None;
        changed = true;
    }
    if changed {
        fsio::atomic_write_json(&dir.join(META), &meta)?;
    }
    let mut core = SessionCore::load(store, dir)?;
    // What the first commit records, read from HEAD (not from what this
    // run moved: a run a crash cut short moved some, or committed them).
    let paths = paths_to_record(&core.repo, dir)?;
    core.pending_paths.extend(paths);
    report.turns = core.backfill()?;
    drop(core);
    // Redacted as any write is (the original stored its secrets as they
    // came): its history purged once migrated.
    super::purge::redact_arrived(store, dir, "migration", true)?;
    remove_durably(&under_way)?;
    Ok(report)
}

/// The paths the migration's first commit records: the old-layout node
/// files HEAD's tree holds (in `history/` or `messages/`) that are no
/// longer in the folder (they leave the tree), and the kept copies under
/// `legacy/` it does not hold yet (they enter it).
fn paths_to_record(repo: &git2::Repository, dir: &Path) -> Result<Vec<PathBuf>, SessionError> {
    let tree = git::head_commit(repo)?.map(|c| c.tree()).transpose()?;
    let mut out = Vec::new();
    for folder in [HISTORY, "messages"] {
        let Some(sub) = tree
            .as_ref()
            .and_then(|t| t.get_path(Path::new(folder)).ok())
            .and_then(|e| repo.find_tree(e.id()).ok())
        else {
            continue;
        };
        for e in sub.iter() {
            let Some(name) = e.name() else {
                continue;
            };
            let rel = Path::new(folder).join(name);
            if old_name_seq(name).is_some() && !dir.join(&rel).exists() {
                out.push(rel);
            }
        }
    }
    if let Ok(entries) = fs::read_dir(dir.join(LEGACY)) {
        out.extend(
            entries
                .flatten()
                .map(|e| Path::new(LEGACY).join(e.file_name()))
                .filter(|p| tree.as_ref().is_none_or(|t| t.get_path(p).is_err())),
        );
    }
    Ok(out)
}

fn remove_durably(path: &Path) -> Result<(), SessionError> {
    match fs::remove_file(path) {
        Ok(()) => {
            if let Some(parent) = path.parent() {
                fsio::fsync_dir(parent)?;
            }
            Ok(())
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// Convert every old node to its place in the current layout (the
/// numbering follows the old files, wherever they are now), then keep
/// each old file under legacy/. A file that does not convert is left in
/// place and reported.
fn convert_files(dir: &Path, files: &[OldFile], report: &mut Migrated) -> Result<(), SessionError> {
    // 1. Convert every old node to its place in the current layout. The
    //    numbering follows the old files, wherever they are now.
    let mut seq = 0;
    for f in files {
        let full = dir.join(&f.rel);
        let parsed = fs::read(&full)
            .map_err(|e| e.to_string())
            .and_then(|b| serde_json::from_slice::<Value>(&b).map_err(|e| e.to_string()));
        let name = f
            .rel
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let name_id = name
            .strip_suffix(".json")
            .and_then(|s| s.splitn(3, '-').nth(2))
            .unwrap_or("")
            .to_string();
        let node = match parsed.and_then(|v| convert(&v, seq + 1, &name_id)) {
            Ok(n) => n,
            Err(why) => {
                tracing::warn!(file = %full.display(), reason = %why, "old node file not migrated; left in place");
                report.skipped.push((f.rel.clone(), why));
                continue;
            }
        };
        seq += 1;
        let target = dir.join(layout::node_rel_path(node.seq, node.role, &node.id));
        if !target.exists() {
            if let Some(parent) = target.parent() {
                fsio::create_dir_durable(parent)?;
            }
            fsio::atomic_write_json(&target, &node)?;
        }
        report.nodes += 1;
        // 2. Keep the old file under legacy/ (and record both paths for
        //    the first commit: the old one leaves the tree, the new one
        //    enters it).
        if !f.rel.starts_with(LEGACY) {
            let kept = Path::new(LEGACY).join(
                f.rel
                    .strip_prefix(HISTORY)
                    .or_else(|_| f.rel.strip_prefix("messages"))
                    .unwrap_or(&f.rel),
            );
            fsio::create_dir_durable(&dir.join(LEGACY))?;
            fs::rename(&full, dir.join(&kept))?;
        }
    }
    if dir.join(LEGACY).is_dir() {
        fsio::fsync_dir(&dir.join(LEGACY))?;
    }
    Ok(())
}

/// Whether HEAD's line holds a commit of this store (one with turn
/// trailers): the original system's own `turn: …` commits have none.
fn commits_of_this_store(dir: &Path) -> bool {
    let Ok(repo) = git2::Repository::open(dir) else {
        return false;
    };
    let Ok(head) = repo.head().and_then(|h| h.peel_to_commit()) else {
        return false;
    };
    let mut cursor = Some(head);
    while let Some(commit) = cursor {
        if git::Trailers::parse(commit.message().unwrap_or("")).turn > 0 {
            return true;
        }
        cursor = commit.parent(0).ok();
    }
    false
}

impl SessionCore {
    /// Commit, one commit per turn and in sequence order, every node that
    /// no commit holds yet: a turn starts at each user message. For a
    /// session converted from an older layout (nothing is running: the
    /// open turn is ended too). Returns the number of turns committed.
    pub(super) fn backfill(&mut self) -> Result<usize, SessionError> {
        self.backfill_before(u64::MAX)
    }

    /// `backfill` of the nodes below `bound` only (startup validation: the
    /// turns before a recorded end of turn that git lacks).
    pub(super) fn backfill_before(&mut self, bound: u64) -> Result<usize, SessionError> {
        let committed = git::list_branches(&self.repo)?
            .iter()
            .map(|t| t.trailers.last_seq)
            .max()
            .unwrap_or(0);
        let pending: Vec<(u64, bool, f64)> = self
            .dag
            .iter()
            .filter(|n| n.seq() > committed && n.seq() < bound)
            .map(|n| (n.seq(), n.is_user_message(), n.created_at()))
            .collect();
        // Turn boundaries: each user message opens one.
        let mut turns: Vec<(u64, u64, f64)> = Vec::new();
        for (seq, opens, at) in pending {
            match turns.last_mut() {
                Some(t) if !opens => {
                    t.1 = seq;
                    t.2 = t.2.max(at);
                }
                _ => turns.push((seq, seq, at)),
            }
        }
        if turns.is_empty() && !self.pending_paths.is_empty() && bound == u64::MAX {
            // Only moved files: commit them on their own.
            let last = self.last_seq();
            turns.push((last + 1, last, crate::meta::now()));
        }
        let count = turns.len();
        for (first_seq, last_seq, ended_at) in turns {
            let number = git::head_trailers(&self.repo)?.turn + 1;
            let record = self.record_backfilled(number, first_seq, last_seq, ended_at)?;
            self.commit_turn(&record)?;
        }
        Ok(count)
    }
}

impl SessionCore {
    /// Record turn `number` (nodes `first_seq..=last_seq`, ended at
    /// `ended_at`) as the last ended one in `meta.json`, its head the last
    /// conversational node up to `last_seq`: the step before a backfilled
    /// or adopted turn's commit.
    fn record_backfilled(
        &mut self,
        number: u64,
        first_seq: u64,
        last_seq: u64,
        ended_at: f64,
    ) -> Result<TurnRecord, SessionError> {
        let head = self
            .dag
            .iter()
            .rev()
            .filter(|n| n.seq() <= last_seq)
            .find(|n| n.is_conversational())
            .map(|n| n.id().to_string());
        let record = TurnRecord {
            number,
            first_seq,
            last_seq,
            head: head.clone(),
            ended_at,
            ..TurnRecord::default()
        };
        self.meta.open_turn = None;
        if head.is_some() {
            self.meta.head = head;
        }
        self.meta.turn_count = number;
        self.meta.last_turn = Some(record.clone());
        self.meta.updated_at = self.meta.updated_at.max(ended_at);
        self.write_meta()?;
        Ok(record)
    }
}

/// Where an original system's meta keeps its head: `head_id`.
pub fn adopt_original_head(meta: &mut SessionMeta) {
    if meta.head.is_none() {
        if let Some(h) = meta.extra.get("head_id").and_then(Value::as_str) {
            meta.head = Some(h.to_string());
        }
    }
}
