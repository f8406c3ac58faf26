//! The commit and trees of the last commit a session made, kept in memory.
//!
//! The next turn's commit builds on exactly these objects: its parent, the
//! parent's root tree and the trees along the paths it changes (a turn
//! writes into the same history folders as the one before). Served from
//! here, a commit reads nothing from the session's packs; read from disk,
//! each object was a search through every pack index, and the newest pack,
//! written after the repository was opened, was found only after libgit2
//! re-listed `objects/pack`.
//!
//! Entries are keyed by object id, so they can never be stale: an object
//! found here is the object of that id, whatever the branch or HEAD did
//! since. A miss is read from the repository.

use std::collections::HashMap;

use git2::{ObjectType, Oid, Repository};

use super::Trailers;

#[derive(Default)]
pub struct RecentObjects {
    objects: HashMap<Oid, (ObjectType, Vec<u8>)>,
}

impl RecentObjects {
    pub fn new() -> RecentObjects {
        RecentObjects::default()
    }

    pub fn get(&self, id: Oid) -> Option<(ObjectType, &[u8])> {
        self.objects.get(&id).map(|(k, b)| (*k, b.as_slice()))
    }

    /// Keep the commits and trees of `objects` (blobs are never read back
    /// by a commit), dropping what was kept before.
    pub fn replace(&mut self, objects: &[(Oid, ObjectType, Vec<u8>)]) {
        self.objects.clear();
        for (id, kind, bytes) in objects {
            if *kind != ObjectType::Blob {
                self.objects.insert(*id, (*kind, bytes.clone()));
            }
        }
    }

    /// The trailers of commit `id`, from memory when it is the last
    /// commit kept here, else read from the repository.
    pub fn trailers_of(&self, repo: &Repository, id: Oid) -> Result<Trailers, git2::Error> {
        match self.get(id) {
            Some((ObjectType::Commit, raw)) => Ok(Trailers::parse(&commit_message(raw))),
            _ => Ok(Trailers::parse(
                repo.find_commit(id)?.message().unwrap_or(""),
            )),
        }
    }
}

/// The id HEAD resolves to, without reading the object; `None` on an
/// unborn branch.
pub fn head_id(repo: &Repository) -> Result<Option<Oid>, git2::Error> {
    match repo.refname_to_id("HEAD") {
        Ok(id) => Ok(Some(id)),
        Err(e) if e.code() == git2::ErrorCode::NotFound => {
            // HEAD names a branch without commits, or HEAD itself is gone.
            repo.find_reference("HEAD")?;
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// The message of a raw commit object: everything after the first empty
/// line (the headers end there).
fn commit_message(raw: &[u8]) -> String {
    let body = raw
        .windows(2)
        .position(|w| w == b"\n\n")
        .map_or(&[][..], |at| &raw[at + 2..]);
    String::from_utf8_lossy(body).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The trailers of HEAD's commit (all zero without commits), from
    /// memory when HEAD is the last commit kept there.
    fn head_trailers(recent: &RecentObjects, repo: &Repository) -> Result<Trailers, git2::Error> {
        match head_id(repo)? {
            None => Ok(Trailers::default()),
            Some(id) => recent.trailers_of(repo, id),
        }
    }

    #[test]
    fn head_trailers_from_memory_match_the_repository() {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::init(dir.path()).unwrap();
        let recent = RecentObjects::new();
        assert_eq!(head_trailers(&recent, &repo).unwrap(), Trailers::default());
        let sig = git2::Signature::now("t", "t@example.com").unwrap();
        let tree = repo
            .find_tree(repo.treebuilder(None).unwrap().write().unwrap())
            .unwrap();
        let message = "turn 3: hi\n\nbody line\n\nOpenprogram-Turn: 3\nOpenprogram-Head-Node: n9\nOpenprogram-Last-Seq: 12\n";
        let id = repo
            .commit(Some("HEAD"), &sig, &sig, message, &tree, &[])
            .unwrap();
        let raw = repo.odb().unwrap().read(id).unwrap().data().to_vec();
        let mut recent = RecentObjects::new();
        recent.replace(&[(id, ObjectType::Commit, raw)]);
        let from_memory = head_trailers(&recent, &repo).unwrap();
        assert_eq!(from_memory, crate::git::head_trailers(&repo).unwrap());
        assert_eq!(from_memory.turn, 3);
        assert_eq!(from_memory.head_node.as_deref(), Some("n9"));
        assert_eq!(head_id(&repo).unwrap(), Some(id));
        // Served from memory: bytes kept under HEAD's id are what is read.
        let edited = String::from_utf8(raw_of(&repo, id))
            .unwrap()
            .replace("Turn: 3", "Turn: 4");
        recent.replace(&[(id, ObjectType::Commit, edited.into_bytes())]);
        assert_eq!(head_trailers(&recent, &repo).unwrap().turn, 4);
    }

    fn raw_of(repo: &Repository, id: Oid) -> Vec<u8> {
        repo.odb().unwrap().read(id).unwrap().data().to_vec()
    }
}
