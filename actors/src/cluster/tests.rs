//! The replica side without a cluster: pushes built from a repository
//! and taken by a replica area, the epoch fence, and the pack merges.

use git2::{Oid, Repository, Signature};

use super::replica::Replicas;
use super::wire::Push;
use super::ClusterError;

fn commit(repo: &Repository, n: usize) -> Oid {
    let sig = Signature::now("t", "t@example").unwrap();
    let blob = repo.blob(format!("turn {n}\n").as_bytes()).unwrap();
    let mut tree = repo.treebuilder(None).unwrap();
    tree.insert(format!("t{n}.txt"), blob, 0o100644).unwrap();
    let tree = repo.find_tree(tree.write().unwrap()).unwrap();
    let parent = repo.head().ok().and_then(|h| h.peel_to_commit().ok());
    let parents: Vec<&git2::Commit> = parent.iter().collect();
    repo.commit(
        Some("HEAD"),
        &sig,
        &sig,
        &format!("turn {n}"),
        &tree,
        &parents,
    )
    .unwrap()
}

fn git(dir: &std::path::Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn a_replica_takes_each_turn_keeps_few_packs_and_refuses_an_older_epoch() {
    let tmp = tempfile::tempdir().unwrap();
    let owner = Repository::init(tmp.path().join("owner")).unwrap();
    let replicas = Replicas::new(tmp.path().join("replicas"));
    let mut known: Vec<(String, Oid)> = Vec::new();
    for n in 0..60 {
        commit(&owner, n);
        let push = Push::build(owner.path().parent().unwrap(), 2, "a", &known)
            .unwrap()
            .expect("something to push");
        let wire = Push::decode(&push.encode().unwrap()).unwrap();
        known = replicas.receive("s1", &wire).unwrap();
    }
    let dir = replicas.dir("s1");
    let tip = owner.head().unwrap().target().unwrap().to_string();
    assert_eq!(git(&dir, &["rev-parse", "HEAD"]).trim(), tip);
    assert_eq!(git(&dir, &["rev-list", "--count", "HEAD"]).trim(), "60");
    git(&dir, &["fsck", "--strict", "--no-progress"]);
    let packs = std::fs::read_dir(dir.join("objects/pack"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "pack")
        })
        .count();
    assert!(
        packs <= super::replica_packs::MAX_PACKS + 1,
        "{packs} packs"
    );
    // Nothing new: no push at all.
    assert!(Push::build(owner.path().parent().unwrap(), 2, "a", &known)
        .unwrap()
        .is_none());
    // An older owner is fenced; a newer one is taken, from nothing known
    // or from a base the replica lacks (it must send everything).
    commit(&owner, 60);
    let stale = Push::build(owner.path().parent().unwrap(), 1, "old", &known)
        .unwrap()
        .unwrap();
    assert_eq!(
        replicas.receive("s1", &stale).unwrap_err(),
        ClusterError::StaleEpoch { got: 1, seen: 2 }
    );
    // A replica lacking the base the owner believes it has asks for all.
    let head = owner.head().unwrap();
    let branch = head.name().unwrap().to_string();
    let parent = head.peel_to_commit().unwrap().parent_id(0).unwrap();
    let thin = Push::build(owner.path().parent().unwrap(), 3, "b", &[(branch, parent)])
        .unwrap()
        .unwrap();
    assert_eq!(
        replicas.receive("s2", &thin).unwrap_err(),
        ClusterError::ReplicaBehind
    );
    let full = Push::build(owner.path().parent().unwrap(), 3, "b", &[])
        .unwrap()
        .unwrap();
    assert_eq!(replicas.receive("s1", &full).unwrap().len(), 1);
    assert_eq!(git(&dir, &["rev-list", "--count", "HEAD"]).trim(), "61");
    assert!(
        Push::decode(b"\0\0\0\x05{}").is_err(),
        "a short body is refused"
    );
}
