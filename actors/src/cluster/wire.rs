//! A replica push on the wire, and the pack in it: a 4-byte big-endian
//! header length, the header (JSON: epoch, owner, branches, HEAD), then a
//! git pack of the objects the replica lacks (empty when it lacks none).

use std::path::Path;

use git2::{Oid, Repository};
use serde::{Deserialize, Serialize};

use super::error::ClusterError;

/// What a push says besides its objects.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Header {
    pub epoch: i64,
    pub owner: String,
    /// Every branch of the session (`refs/heads/…`) and its tip.
    pub refs: Vec<(String, String)>,
    /// The branch HEAD names.
    pub head: Option<String>,
    /// The commits the pack builds on (the replica's tips as the owner
    /// last heard them); empty: the pack holds the whole history.
    #[serde(default)]
    pub base: Vec<String>,
    /// The session's `meta.json` as it is now (a rename or a flag is not
    /// committed until the next turn, so it travels beside the pack).
    #[serde(default)]
    pub meta: Option<serde_json::Value>,
    /// The owner purged the session: its history was rewritten, and the
    /// replica keeps only what the pushed branches reach.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub purged: bool,
}

/// A push made from a session's repository.
pub struct Push {
    pub header: Header,
    pub pack: Vec<u8>,
}

impl Push {
    /// The branches and HEAD of the session at `dir`, and a pack of what
    /// `known` (the replica's acknowledged tips) does not reach. None when
    /// the replica has every tip already.
    pub fn build(
        dir: &Path,
        epoch: i64,
        owner: &str,
        known: &[(String, Oid)],
    ) -> Result<Option<Push>, ClusterError> {
        Self::build_with_meta(dir, epoch, owner, known, None)
    }

    /// `build`, also when only `meta.json` changed since `known_meta` (the
    /// `meta.json` the replica acknowledged).
    pub fn build_with_meta(
        dir: &Path,
        epoch: i64,
        owner: &str,
        known: &[(String, Oid)],
        known_meta: Option<&serde_json::Value>,
    ) -> Result<Option<Push>, ClusterError> {
        let repo = Repository::open(dir)?;
        let branches = crate::replication::push::local_branches(&repo)?;
        let head = repo
            .find_reference("HEAD")
            .ok()
            .and_then(|h| h.symbolic_target().map(str::to_string));
        let meta: Option<serde_json::Value> = std::fs::read(dir.join(crate::session::layout::META))
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok());
        let same = branches.len() == known.len() && branches.iter().zip(known).all(|(a, b)| a == b);
        if same && (known_meta.is_none() || meta.as_ref() == known_meta) {
            return Ok(None);
        }
        let mut walk = repo.revwalk()?;
        for (_, oid) in &branches {
            walk.push(*oid)?;
        }
        let mut base = Vec::new();
        for (_, oid) in known {
            // A tip this repository lacks (rewritten elsewhere) is no base.
            if repo.find_commit(*oid).is_ok() {
                walk.hide(*oid)?;
                base.push(oid.to_string());
            }
        }
        let mut builder = repo.packbuilder()?;
        builder.insert_walk(&mut walk)?;
        let mut pack = Vec::new();
        if builder.object_count() > 0 {
            let mut buf = git2::Buf::new();
            builder.write_buf(&mut buf)?;
            pack = buf.to_vec();
        }
        Ok(Some(Push {
            header: Header {
                epoch,
                owner: owner.to_string(),
                refs: branches
                    .iter()
                    .map(|(n, o)| (n.clone(), o.to_string()))
                    .collect(),
                head,
                base,
                meta,
                purged: false,
            },
            pack,
        }))
    }

    pub fn encode(&self) -> Result<Vec<u8>, ClusterError> {
        let header =
            serde_json::to_vec(&self.header).map_err(|e| ClusterError::Local(e.to_string()))?;
        let len = u32::try_from(header.len()).map_err(|_| ClusterError::Local("header".into()))?;
        let mut out = Vec::with_capacity(4 + header.len() + self.pack.len());
        out.extend_from_slice(&len.to_be_bytes());
        out.extend_from_slice(&header);
        out.extend_from_slice(&self.pack);
        Ok(out)
    }

    pub fn decode(body: &[u8]) -> Result<Push, ClusterError> {
        let bad = |m: &str| ClusterError::BadPush(m.to_string());
        let len_bytes: [u8; 4] = body
            .get(..4)
            .and_then(|b| b.try_into().ok())
            .ok_or_else(|| bad("shorter than its header length"))?;
        let len = u32::from_be_bytes(len_bytes) as usize;
        let header = body
            .get(4..4 + len)
            .ok_or_else(|| bad("shorter than its header"))?;
        let header: Header =
            serde_json::from_slice(header).map_err(|e| ClusterError::BadPush(e.to_string()))?;
        for (name, oid) in &header.refs {
            if !name.starts_with("refs/heads/") || !git2::Reference::is_valid_name(name) {
                return Err(bad("a ref outside refs/heads/"));
            }
            Oid::from_str(oid).map_err(|_| bad("a ref without an object id"))?;
        }
        for oid in &header.base {
            Oid::from_str(oid).map_err(|_| bad("a base that is not an object id"))?;
        }
        if let Some(h) = &header.head {
            if !h.starts_with("refs/heads/") || !git2::Reference::is_valid_name(h) {
                return Err(bad("HEAD outside refs/heads/"));
            }
        }
        let pack = body.get(4 + len..).unwrap_or_default().to_vec();
        Ok(Push { header, pack })
    }

    /// The branches as object ids.
    pub fn tips(&self) -> Vec<(String, Oid)> {
        self.header
            .refs
            .iter()
            .filter_map(|(n, o)| Oid::from_str(o).ok().map(|o| (n.clone(), o)))
            .collect()
    }
}
