//! What is already stored, scanned for secrets: every node of every branch
//! of every session (as git holds them) and each session's title, by the
//! global rules, whatever the configured mode (data written before
//! redaction existed, or with it off). A report names sessions, turns,
//! nodes, kinds and counts, never a secret.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::Path;

use git2::{ObjectType, Oid, TreeWalkMode, TreeWalkResult};
use serde::Serialize;
use serde_json::Value;

use crate::redact::{Redaction, Redactor};
use crate::session::layout;
use crate::store::Store;

/// One kind of secret found in a session.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct KindFound {
    pub kind: String,
    pub count: usize,
    /// The turns holding it (0: before the first turn ended, or the title).
    pub turns: Vec<u64>,
    /// Node ids holding it (`title` for the session's title).
    pub nodes: Vec<String>,
}

/// A session holding secrets.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SessionSecrets {
    pub session: String,
    pub kinds: Vec<KindFound>,
}

/// The whole scan.
#[derive(Debug, Clone, Default, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ScanReport {
    pub sessions_scanned: usize,
    pub nodes_scanned: usize,
    pub secrets: usize,
    /// Sessions with at least one secret, by id.
    pub sessions: Vec<SessionSecrets>,
    /// Sessions that could not be read, with why: `[id, why]` pairs.
    #[cfg_attr(feature = "openapi", schema(value_type = Vec<Vec<String>>))]
    pub unreadable: Vec<(String, String)>,
}

/// Scan every session of `store`; `each` is called once per session.
pub fn scan_store(store: &Store, redactor: &Redactor, mut each: impl FnMut()) -> ScanReport {
    let mut report = ScanReport::default();
    let folders = match store.all_session_folders() {
        Ok(f) => f,
        Err(e) => {
            report.unreadable.push((String::new(), e.to_string()));
            return report;
        }
    };
    for (id, dir) in folders {
        each();
        report.sessions_scanned += 1;
        match scan_session(redactor, &id, &dir) {
            Ok((nodes, found)) => {
                report.nodes_scanned += nodes;
                if let Some(s) = found {
                    report.secrets += s.kinds.iter().map(|k| k.count).sum::<usize>();
                    report.sessions.push(s);
                }
            }
            Err(e) => report.unreadable.push((id, e.message().to_string())),
        }
    }
    report
}

/// One session: (nodes scanned, what was found).
fn scan_session(
    redactor: &Redactor,
    id: &str,
    dir: &Path,
) -> Result<(usize, Option<SessionSecrets>), git2::Error> {
    let repo = crate::git::open_repo(dir)?;
    let policy = redactor.scan_policy();
    // Turn of each node: the commits of every branch, their last node.
    let mut turn_ends: BTreeMap<u64, u64> = BTreeMap::new();
    let mut blobs: Vec<(Oid, u64, String)> = Vec::new();
    let mut seen: HashSet<Oid> = HashSet::new();
    let mut titles: BTreeSet<Oid> = BTreeSet::new();
    for tip in crate::git::list_branches(&repo)? {
        let mut walk = repo.revwalk()?;
        walk.push(tip.oid)?;
        for oid in walk {
            let commit = repo.find_commit(oid?)?;
            let t = crate::git::Trailers::parse(commit.message().unwrap_or(""));
            if t.turn > 0 {
                turn_ends.entry(t.last_seq).or_insert(t.turn);
            }
        }
        let tree = repo.find_commit(tip.oid)?.tree()?;
        if let Some(e) = tree.get_name(layout::META) {
            titles.insert(e.id());
        }
        tree.walk(TreeWalkMode::PreOrder, |_, entry| {
            if entry.kind() == Some(ObjectType::Blob) && seen.insert(entry.id()) {
                if let Some((seq, _, node)) = entry.name().and_then(layout::parse_node_file_name) {
                    blobs.push((entry.id(), seq, node));
                }
            }
            TreeWalkResult::Ok
        })?;
    }
    let turn_of = |seq: u64| turn_ends.range(seq..).next().map_or(0, |(_, t)| *t);
    let mut by_kind: BTreeMap<String, KindFound> = BTreeMap::new();
    let mut add = |found: Vec<Redaction>, turn: u64, node: &str| {
        for r in found {
            let k = by_kind.entry(r.kind.clone()).or_insert_with(|| KindFound {
                kind: r.kind,
                count: 0,
                turns: Vec::new(),
                nodes: Vec::new(),
            });
            k.count += 1;
            if !k.turns.contains(&turn) {
                k.turns.push(turn);
            }
            if !k.nodes.iter().any(|n| n == node) {
                k.nodes.push(node.to_string());
            }
        }
    };
    for (oid, seq, node) in &blobs {
        let Ok(mut v) = serde_json::from_slice::<Value>(repo.find_blob(*oid)?.content()) else {
            continue;
        };
        if let Some(m) = v.get_mut("metadata").and_then(Value::as_object_mut) {
            m.remove(crate::redact::METADATA_KEY);
        }
        let mut found = Vec::new();
        // Mode `redact` whatever is configured: only what is found counts.
        let _ = redactor.redact_value(&policy, &mut v, "", &mut found);
        add(found, turn_of(*seq), node);
    }
    for oid in titles {
        let meta: Value =
            serde_json::from_slice(repo.find_blob(oid)?.content()).unwrap_or_default();
        if let Some(title) = meta["title"].as_str() {
            let mut found = Vec::new();
            let _ = redactor.redact_text(&policy, title, "title", &mut found);
            add(found, 0, "title");
        }
    }
    let kinds: Vec<KindFound> = by_kind
        .into_values()
        .map(|mut k| {
            k.turns.sort_unstable();
            k
        })
        .collect();
    let found = (!kinds.is_empty()).then(|| SessionSecrets {
        session: id.to_string(),
        kinds,
    });
    Ok((blobs.len(), found))
}
