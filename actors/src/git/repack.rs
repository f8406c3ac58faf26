//! Geometric pack consolidation. Every commit adds one small pack; merging
//! the smallest packs whenever they are no longer each at least twice the
//! sum of the smaller ones keeps the number of packs logarithmic in the
//! number of objects, and the amortised cost per object constant.
//!
//! In steps, so that the long one never holds the session: `plan` picks
//! the packs to merge, `build` (or `build_copy` for a busy session) writes
//! one pack of their objects beside them (read-only on the session's
//! objects: a concurrent commit only adds packs of its own) and names it,
//! `drop_packs` marks the merged ones retired (they stay in `objects/pack`
//! for a grace period, so a reader that listed them, a user's `git fsck`
//! or the session's own handle, can still open them), and `purge_merged`
//! removes the retired packs whose grace is over.
//!
//! The pack a merge writes is named by its content: merging a pack with
//! duplicates of its own objects (a crash can bring merged packs back)
//! writes a pack of the same name as one of the victims. That pack is the
//! result, never a victim.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use git2::{Oid, Repository};

use super::GitError;

/// Merging starts once there are more packs than this.
pub const MAX_PACKS: usize = 8;
/// An idle session's packs are merged into one once those beside the
/// largest hold at least 1/`CONSOLIDATE` as many objects as it: a pack's
/// objects find delta bases only among themselves, so a 1,000-turn session
/// in two packs took 2.2 MiB where one pack takes 1.5. Each object is then
/// rewritten about `CONSOLIDATE` + 1 times over the session's life (the
/// whole rewrites follow a geometric series): a constant per turn.
pub const CONSOLIDATE: usize = 16;
/// ... for sessions of at most this many objects (about 20,000 turns, a
/// few seconds of the keeper's time); bigger ones keep geometric packs.
pub const CONSOLIDATE_MAX_OBJECTS: usize = 250_000;

struct Pack {
    idx: PathBuf,
    objects: usize,
}

/// Object ids listed in a version-2 pack index.
fn idx_oids(path: &Path) -> Result<Vec<Oid>, GitError> {
    let (entries, _) = super::pack::read_index(&fs::read(path)?)?;
    Ok(entries.into_iter().map(|(oid, _, _)| oid).collect())
}

fn object_count(path: &Path) -> io::Result<usize> {
    // The count is the last fan-out entry; no need to read the whole file.
    use std::io::{Read, Seek, SeekFrom};
    let mut f = fs::File::open(path)?;
    f.seek(SeekFrom::Start(8 + 255 * 4))?;
    let mut n = [0u8; 4];
    f.read_exact(&mut n)?;
    Ok(u32::from_be_bytes(n) as usize)
}

/// The packs of `pack_dir` that are not retired.
fn packs(pack_dir: &Path) -> io::Result<Vec<Pack>> {
    let retired = pack_dir
        .parent()
        .and_then(Path::parent)
        .map(retired_names)
        .unwrap_or_default();
    let mut out = Vec::new();
    for entry in fs::read_dir(pack_dir)? {
        let path = entry?.path();
        // The retired ones are left out before any of their files is
        // looked at: a busy session keeps hundreds of them in their grace.
        if path.extension().is_some_and(|e| e == "idx")
            && !path
                .file_stem()
                .is_some_and(|stem| retired.contains(stem.to_string_lossy().as_ref()))
            && path.with_extension("pack").exists()
        {
            let objects = object_count(&path)?;
            out.push(Pack { idx: path, objects });
        }
    }
    out.sort_by_key(|p| p.objects);
    Ok(out)
}

/// How many packs a repository has (`git_dir` is its `.git`).
pub fn pack_count(git_dir: &Path) -> usize {
    packs(&git_dir.join("objects/pack")).map_or(0, |p| p.len())
}

/// Whether an idle session's packs are all merged into one (`CONSOLIDATE`).
fn consolidate(all: &[Pack]) -> bool {
    let Some(largest) = all.last() else {
        return false;
    };
    let total: usize = all.iter().map(|p| p.objects).sum();
    all.len() >= 2
        && total <= CONSOLIDATE_MAX_OBJECTS
        && (total - largest.objects) * CONSOLIDATE >= largest.objects
}

/// The packs to merge (their `.idx` paths), if there are too many; with
/// `cap`, only the smallest of them whose objects add up to at most `cap`
/// (a busy session's merge stays small, so its write stays short).
/// Without `cap` (the session is idle), all of them when the newer packs
/// have grown enough beside the largest (`CONSOLIDATE`).
pub fn plan(git_dir: &Path, cap: Option<usize>) -> Result<Option<Vec<PathBuf>>, GitError> {
    let all = packs(&git_dir.join("objects/pack"))?;
    if cap.is_none() && consolidate(&all) {
        return Ok(Some(all.into_iter().map(|p| p.idx).collect()));
    }
    if all.len() <= MAX_PACKS {
        return Ok(None);
    }
    // Smallest prefix to merge so that what remains is geometric: find the
    // largest i where pack i is smaller than twice the sum of packs 0..i.
    let mut merge_upto = 0;
    let mut sum = 0usize;
    for (i, p) in all.iter().enumerate() {
        if i > 0 && p.objects < 2 * sum {
            merge_upto = i + 1;
        }
        sum += p.objects;
    }
    let mut merge_upto = merge_upto.max(all.len() - MAX_PACKS + 1).min(all.len());
    if let Some(cap) = cap {
        let mut total = 0;
        let fits = all
            .iter()
            .take_while(|p| {
                total += p.objects;
                total <= cap
            })
            .count();
        merge_upto = merge_upto.min(fits);
    }
    if merge_upto < 2 {
        return Ok(None);
    }
    Ok(Some(
        all.into_iter().take(merge_upto).map(|p| p.idx).collect(),
    ))
}

/// Write one pack holding every object of the packs `victims` (durable:
/// libgit2 fsyncs it), beside them; its `.idx` path. They stay until
/// `drop_packs`.
pub fn build(repo: &Repository, victims: &[PathBuf]) -> Result<PathBuf, GitError> {
    let started = std::time::Instant::now();
    let mut builder = repo.packbuilder()?;
    let mut oids: Vec<Oid> = Vec::new();
    for idx in victims {
        oids.extend(idx_oids(idx)?);
    }
    oids.sort();
    oids.dedup();
    let names = path_names(repo, &oids);
    for oid in oids {
        builder.insert_object(oid, names.get(&oid).map(String::as_str))?;
    }
    let pack_dir = repo.path().join("objects/pack");
    builder.write(&pack_dir, 0o444)?;
    let written = builder
        .name()
        .map(|name| pack_dir.join(format!("pack-{name}.idx")))
        .ok_or_else(|| git2::Error::from_str("the merged pack has no name"))?;
    metrics::counter!("openprogram_maintenance_runs_total").increment(1);
    metrics::histogram!("openprogram_maintenance_duration_seconds")
        .record(started.elapsed().as_secs_f64());
    Ok(written)
}

/// A busy session's merge: the packs `victims` copied into one
/// (`pack::concat`: no delta search, no recompression, so it keeps up with
/// a session's turns), fsynced, beside them; with the packbuilder
/// (`build`) when two of them share an object. The idle merges compress.
/// The written pack's `.idx` path.
pub fn build_copy(repo: &Repository, victims: &[PathBuf]) -> Result<PathBuf, GitError> {
    let started = std::time::Instant::now();
    let Some(written) = super::pack::concat(victims)? else {
        return build(repo, victims);
    };
    metrics::counter!("openprogram_maintenance_runs_total").increment(1);
    metrics::histogram!("openprogram_maintenance_duration_seconds")
        .record(started.elapsed().as_secs_f64());
    Ok(written)
}

/// The path of each tree and blob among `oids` in the commits among
/// them. libgit2 orders delta candidates by a hash of the name, so a
/// version of `meta.json` or of `history/00/12` meets its predecessors in
/// the delta window (without names, objects pair by size only). Only
/// trees that are themselves among `oids` are entered: a commit changes a
/// few paths, so the walk stays small.
fn path_names(repo: &Repository, oids: &[Oid]) -> std::collections::HashMap<Oid, String> {
    use std::collections::{HashMap, HashSet};
    let wanted: HashSet<Oid> = oids.iter().copied().collect();
    let mut names: HashMap<Oid, String> = HashMap::new();
    let mut stack: Vec<(Oid, String)> = Vec::new();
    for oid in oids {
        if let Ok(commit) = repo.find_commit(*oid) {
            let tree = commit.tree_id();
            if wanted.contains(&tree) && !names.contains_key(&tree) {
                names.insert(tree, String::new());
                stack.push((tree, String::new()));
            }
        }
    }
    while let Some((tree_id, prefix)) = stack.pop() {
        let Ok(tree) = repo.find_tree(tree_id) else {
            continue;
        };
        for entry in tree.iter() {
            let id = entry.id();
            if !wanted.contains(&id) || names.contains_key(&id) {
                continue;
            }
            let name = entry.name().unwrap_or_default();
            let path = if prefix.is_empty() {
                name.to_string()
            } else {
                format!("{prefix}/{name}")
            };
            if entry.kind() == Some(git2::ObjectType::Tree) {
                stack.push((id, path.clone()));
            }
            names.insert(id, path);
        }
    }
    names
}

/// Under a session's `.git`: one empty file per retired pack, named
/// after it (`pack-<hash>`), made when `drop_packs` retired it. The pack
/// itself stays in `objects/pack` (a duplicate of objects in a pack that
/// was fsynced first) until `purge_merged` finds its grace over.
pub const MERGED: &str = "openprogram-merged";

/// The names (`pack-<hash>`) of the retired packs of the `.git` at
/// `git_dir`.
fn retired_names(git_dir: &Path) -> std::collections::HashSet<String> {
    let Ok(entries) = fs::read_dir(git_dir.join(MERGED)) else {
        return Default::default();
    };
    entries
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect()
}

/// A pack's name (`pack-<hash>`) from the path of its `.idx`.
fn pack_name(idx: &Path) -> Option<String> {
    idx.file_stem().map(|s| s.to_string_lossy().into_owned())
}

/// Retire the merged packs `victims`, all but `written` (the pack the
/// merge wrote: when it has the same content as a victim, it has the same
/// name, and it is the result). Retiring only marks them (`MERGED`): git,
/// libgit2 and this store's listing (`plan`, `pack_count`) go on as if
/// they were gone, while a reader that listed them before can still open
/// them. `written` is un-retired if an earlier merge had retired a pack of
/// its name. The marks are not fsynced: a crash may forget one, and a
/// pack whose objects are in another is only a duplicate, taken by the
/// next merge.
pub fn drop_packs(victims: &[PathBuf], written: &Path) -> Result<(), GitError> {
    let Some(git_dir) = written
        .parent()
        .and_then(Path::parent)
        .and_then(Path::parent)
    else {
        return Ok(());
    };
    let merged = git_dir.join(MERGED);
    let kept = pack_name(written);
    if let Some(kept) = &kept {
        match fs::remove_file(merged.join(kept)) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e.into()),
            // An earlier retirement of this name dated it back: undone.
            Ok(()) => set_pack_time(written, std::time::SystemTime::now()),
            _ => {}
        }
    }
    for idx in victims {
        let Some(name) = pack_name(idx) else {
            continue;
        };
        if Some(&name) == kept.as_ref() || !idx.exists() {
            continue;
        }
        // Never `create_dir_all`: a session deleted meanwhile must not get
        // a folder back (the log's replay would take it for the session).
        match fs::create_dir(&merged) {
            Ok(()) => crate::fsio::make_dir_private(&merged)?,
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e.into()),
        }
        fs::File::create(merged.join(name))?;
        // libgit2 looks for an object in the packs newest first (by the
        // `.pack` file's time) and maps each index it looks in: a retired
        // pack dated back to 1970 is looked in last, so a repository handle
        // opened during the grace (the session's own, fresh after each
        // merge, or a restarted server's) never maps it for an object the
        // live packs hold. The grace counts from the mark's own time.
        set_pack_time(idx, std::time::UNIX_EPOCH);
    }
    Ok(())
}

/// Set the modification time of a pack (its `.pack` and `.idx`); packs are
/// read-only, and the owner may still set their times. Best effort: a pack
/// left with its time is only looked in sooner.
fn set_pack_time(idx: &Path, to: std::time::SystemTime) {
    for path in [idx.with_extension("pack"), idx.to_path_buf()] {
        if let Err(e) = fs::File::open(&path).and_then(|f| f.set_modified(to)) {
            tracing::debug!(path = %path.display(), error = %e, "pack time not set");
        }
    }
}

/// Remove the retired packs of the repository at `git_dir` retired at
/// least `grace` ago; how many packs went. The index goes first (git and
/// libgit2 find packs by it, and never open a pack whose index is gone),
/// the mark last.
pub fn purge_merged(git_dir: &Path, grace: std::time::Duration) -> io::Result<usize> {
    purge_merged_with(git_dir, grace, &mut |files| {
        for f in files {
            match fs::remove_file(f) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
                _ => {}
            }
        }
        Ok(())
    })
}

/// `purge_merged`, the files of each retired pack removed by `remove`
/// (the engine logs their removal in the write-ahead log, so that a
/// replay of the log never writes a merged pack back).
pub fn purge_merged_with(
    git_dir: &Path,
    grace: std::time::Duration,
    remove: &mut dyn FnMut(&[PathBuf]) -> io::Result<()>,
) -> io::Result<usize> {
    let merged = git_dir.join(MERGED);
    let entries = match fs::read_dir(&merged) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(e),
    };
    let pack_dir = git_dir.join("objects/pack");
    let mut removed = 0;
    let mut left = 0;
    for entry in entries {
        let entry = entry?;
        let due = entry
            .metadata()
            .and_then(|m| m.modified())
            .map(|t| t.elapsed().map_or(true, |age| age >= grace))
            .unwrap_or(true);
        if !due {
            left += 1;
            continue;
        }
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.starts_with("pack-") || name.contains('/') {
            // Not a mark of ours (an older layout kept pack files here).
            fs::remove_file(entry.path())?;
            continue;
        }
        let files: Vec<PathBuf> = ["idx", "pack", "rev", "bitmap", "keep"]
            .iter()
            .map(|ext| pack_dir.join(format!("{name}.{ext}")))
            .filter(|f| f.exists())
            .collect();
        if !files.is_empty() {
            remove(&files)?;
            removed += usize::from(
                files
                    .iter()
                    .any(|f| f.extension().is_some_and(|x| x == "idx")),
            );
        }
        fs::remove_file(entry.path())?;
    }
    if left == 0 {
        // A folder that once listed a few hundred marks keeps its size
        // (52 KiB) on ext4; the next retirement makes it again.
        let _ = fs::remove_dir(&merged);
    }
    Ok(removed)
}

/// Merge every pack into one (`openprogram gc`); false when there was at
/// most one.
pub fn repack_all(repo: &Repository) -> Result<bool, GitError> {
    let all = packs(&repo.path().join("objects/pack"))?;
    if all.len() < 2 {
        return Ok(false);
    }
    let victims: Vec<PathBuf> = all.into_iter().map(|p| p.idx).collect();
    let written = build(repo, &victims)?;
    drop_packs(&victims, &written)?;
    // No server runs (`openprogram gc` refuses beside one): no grace.
    purge_merged(repo.path(), std::time::Duration::ZERO)?;
    Ok(true)
}

/// Plan, build and drop at once (tests; the store does it in steps).
pub fn maybe_repack(repo: &Repository) -> Result<bool, GitError> {
    let Some(victims) = plan(repo.path(), None)? else {
        return Ok(false);
    };
    let written = build(repo, &victims)?;
    drop_packs(&victims, &written)?;
    purge_merged(repo.path(), std::time::Duration::ZERO)?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    const BUSY_CAP: usize = 4096;

    #[test]
    fn a_commit_never_merges_packs_itself() {
        let dir = tempfile::tempdir().unwrap();
        let repo = crate::git::init_repo(dir.path()).unwrap();
        let mut index = crate::git::GitIndex::load(&repo).unwrap();
        for i in 0..3 * MAX_PACKS {
            let name = format!("f{i}.txt");
            fs::write(dir.path().join(&name), format!("content {i}")).unwrap();
            let paths = [Path::new(&name)];
            crate::git::commit_paths(&repo, &mut index, &paths, "c", None).unwrap();
        }
        assert_eq!(pack_count(repo.path()), 3 * MAX_PACKS);
        let victims = plan(repo.path(), None).unwrap().expect("a merge is due");
        let written = build(&repo, &victims).unwrap();
        // Built beside the old packs; they go only when dropped.
        assert_eq!(pack_count(repo.path()), 3 * MAX_PACKS + 1);
        drop_packs(&victims, &written).unwrap();
        assert_eq!(pack_count(repo.path()), 3 * MAX_PACKS + 1 - victims.len());
    }

    #[test]
    fn an_idle_session_merges_all_its_packs_once_the_newer_ones_have_grown() {
        let dir = tempfile::tempdir().unwrap();
        let repo = crate::git::init_repo(dir.path()).unwrap();
        let mut index = crate::git::GitIndex::load(&repo).unwrap();
        let mut commit = |names: Vec<String>| {
            for name in &names {
                fs::write(dir.path().join(name), format!("content of {name}")).unwrap();
            }
            let paths: Vec<&Path> = names.iter().map(Path::new).collect();
            crate::git::commit_paths(&repo, &mut index, &paths, "c", None).unwrap();
        };
        // One pack of 162 objects: 160 blobs, their tree, the commit.
        commit((0..160).map(|i| format!("big{i}.txt")).collect());
        let pack_dir = dir.path().join(".git/objects/pack");
        let objects = |p: &Path| {
            packs(p)
                .unwrap()
                .iter()
                .map(|p| p.objects)
                .collect::<Vec<_>>()
        };
        assert_eq!(objects(&pack_dir), vec![162]);
        // Commits of 3 objects each (a blob, the root tree, the commit): a
        // whole merge is due once they hold 162 / 16 objects or more.
        let mut small = 0;
        while 3 * small * CONSOLIDATE < 162 {
            assert_eq!(
                plan(repo.path(), None).unwrap(),
                None,
                "{small} small commits"
            );
            small += 1;
            commit(vec![format!("small{small}.txt")]);
        }
        let victims = plan(repo.path(), None)
            .unwrap()
            .expect("a whole merge is due");
        assert_eq!(victims.len(), small + 1, "every pack");
        // Not while busy: few packs, and a busy merge is capped anyway.
        assert_eq!(plan(repo.path(), Some(BUSY_CAP)).unwrap(), None);
        let written = build(&repo, &victims).unwrap();
        drop_packs(&victims, &written).unwrap();
        assert_eq!(objects(&pack_dir), vec![162 + 3 * small]);
        assert_eq!(plan(repo.path(), None).unwrap(), None, "one pack stays");
    }

    /// A repository of three commits, one pack each: its folder, the
    /// repository and the packs' `.idx` paths.
    fn three_turn_packs() -> (tempfile::TempDir, Repository, Vec<PathBuf>) {
        let dir = tempfile::tempdir().unwrap();
        let repo = crate::git::init_repo(dir.path()).unwrap();
        let mut index = crate::git::GitIndex::load(&repo).unwrap();
        for i in 0..3 {
            let name = format!("f{i}.txt");
            fs::write(dir.path().join(&name), format!("content {i}")).unwrap();
            let paths = [Path::new(&name)];
            crate::git::commit_paths(&repo, &mut index, &paths, "c", None).unwrap();
        }
        let pack_dir = dir.path().join(".git/objects/pack");
        let idx = packs(&pack_dir)
            .unwrap()
            .into_iter()
            .map(|p| p.idx)
            .collect();
        (dir, repo, idx)
    }

    #[test]
    fn a_merge_that_rewrites_a_victim_keeps_it() {
        let (dir, repo, turn_packs) = three_turn_packs();
        let saved: Vec<(PathBuf, Vec<u8>)> = turn_packs
            .iter()
            .flat_map(|idx| [idx.clone(), idx.with_extension("pack")])
            .map(|p| (p.clone(), fs::read(&p).unwrap()))
            .collect();
        let merged = build(&repo, &turn_packs).unwrap();
        drop_packs(&turn_packs, &merged).unwrap();
        purge_merged(repo.path(), std::time::Duration::ZERO).unwrap();
        // A crash brings the merged packs back (as a log replay does).
        for (path, bytes) in &saved {
            fs::write(path, bytes).unwrap();
        }
        let victims = plan(repo.path(), None).unwrap().expect("a whole merge");
        assert!(victims.contains(&merged));
        let again = build(&repo, &victims).unwrap();
        assert_eq!(again, merged, "the same objects make the same pack");
        drop_packs(&victims, &again).unwrap();
        purge_merged(repo.path(), std::time::Duration::ZERO).unwrap();
        assert_eq!(pack_count(repo.path()), 1);
        assert!(again.exists() && again.with_extension("pack").exists());
        let reopened = crate::git::open_repo(dir.path()).unwrap();
        assert_eq!(crate::git::log(&reopened, 10).unwrap().len(), 3);
    }

    #[test]
    fn retired_packs_stay_readable_until_their_grace_is_over() {
        let (_dir, repo, victims) = three_turn_packs();
        let merged = build(&repo, &victims).unwrap();
        drop_packs(&victims, &merged).unwrap();
        assert_eq!(pack_count(repo.path()), 1, "retired packs are not counted");
        let hour = std::time::Duration::from_secs(3600);
        assert_eq!(purge_merged(repo.path(), hour).unwrap(), 0);
        assert!(victims.iter().all(|v| v.exists()), "still readable");
        assert_eq!(
            purge_merged(repo.path(), std::time::Duration::ZERO).unwrap(),
            3
        );
        assert!(victims.iter().all(|v| !v.exists()));
        assert!(!repo.path().join(MERGED).exists());
    }

    #[test]
    fn many_commits_keep_few_packs_and_a_sound_repo() {
        crate::git::enable_fsync();
        let dir = tempfile::tempdir().unwrap();
        let repo = crate::git::init_repo(dir.path()).unwrap();
        let mut index = crate::git::GitIndex::load(&repo).unwrap();
        for i in 0..60 {
            let name = format!("f{i}.txt");
            fs::write(dir.path().join(&name), format!("content {i}")).unwrap();
            crate::git::commit_paths(
                &repo,
                &mut index,
                &[Path::new(&name)],
                &format!("c{i}"),
                None,
            )
            .unwrap();
            maybe_repack(&repo).unwrap();
        }
        let n = packs(&repo.path().join("objects/pack")).unwrap().len();
        assert!(n <= MAX_PACKS, "{n} packs");
        // Every commit and blob is still readable after the merges.
        let reopened = crate::git::open_repo(dir.path()).unwrap();
        let log = crate::git::log(&reopened, 100).unwrap();
        assert_eq!(log.len(), 60);
        let tree = crate::git::head_commit(&reopened)
            .unwrap()
            .unwrap()
            .tree()
            .unwrap();
        assert_eq!(tree.len(), 60);
        for entry in tree.iter() {
            reopened.find_blob(entry.id()).unwrap();
        }
    }
}
