//! A busy session's merge by copying: the entries of the packs to merge,
//! byte for byte, one pack after the other, under one header, with an
//! index of their offsets. Nothing is decompressed, searched for deltas or
//! compressed again, so a merge costs what its bytes cost to read and
//! write. libgit2's packbuilder took 135 µs per object for the same job
//! (delta search, deflate, then its indexer inflating everything again
//! and unmapping its windows), slower than a session of 1 ms turns made
//! packs: 517 of them piled up in a 1,000-turn growth. The idle merges
//! (`repack::build`) still use it, where deltas pay.
//!
//! Copying a whole pack's entries keeps its deltas valid: an offset delta
//! points back within the same run of entries, and a reference delta
//! names an object that is copied too.

use std::fs;
use std::path::PathBuf;

use git2::Oid;
use sha1::{Digest, Sha1};

use super::idx::{self, bad, IndexEntry};
use super::{header, read_header, HEADER_LEN};
use crate::git::GitError;

/// Write one pack (and its index, each fsynced) holding the entries of
/// the packs `victims` (their `.idx` paths) into `objects/pack` beside
/// them; they stay until `repack::drop_packs`. None, and nothing written,
/// when an object is in two of them (a crash left a duplicate): the
/// caller merges those with the packbuilder, which keeps one.
pub fn concat(victims: &[PathBuf]) -> Result<Option<PathBuf>, GitError> {
    let Some(pack_dir) = victims.first().and_then(|v| v.parent()) else {
        return Ok(None);
    };
    let mut pack = Vec::new();
    pack.extend_from_slice(&header(0));
    let mut entries: Vec<IndexEntry> = Vec::new();
    for idx in victims {
        let (listed, checksum) = idx::read(&fs::read(idx)?)?;
        let data = fs::read(idx.with_extension("pack"))?;
        let body_end = data
            .len()
            .checked_sub(20)
            .ok_or_else(|| bad("short pack"))?;
        if body_end < HEADER_LEN
            || read_header(&data).map(|(_, count)| count as usize) != Some(listed.len())
            || data[body_end..] != checksum
        {
            return Err(bad(&format!("{} does not match its pack", idx.display())));
        }
        let base = pack.len() as u64;
        pack.extend_from_slice(&data[12..body_end]);
        for (oid, crc, offset) in listed {
            let inside = offset
                .checked_sub(12)
                .filter(|o| *o < (body_end - 12) as u64)
                .ok_or_else(|| bad("offset outside its pack"))?;
            entries.push((oid, crc, base + inside));
        }
    }
    let count = u32::try_from(entries.len()).map_err(|_| bad("too many objects"))?;
    pack[8..12].copy_from_slice(&count.to_be_bytes());
    let checksum: [u8; 20] = Sha1::digest(&pack).into();
    pack.extend_from_slice(&checksum);
    let idx = idx::write(&mut entries, &checksum)?;
    if entries.len() != count as usize {
        // `idx::write` dropped a duplicate: the index would not list
        // every entry of the pack.
        return Ok(None);
    }
    let name = format!("pack-{}", Oid::from_bytes(&checksum)?);
    let target = pack_dir.join(format!("{name}.idx"));
    // The data first, then the index that makes git see it.
    crate::fsio::atomic_write(&pack_dir.join(format!("{name}.pack")), &pack)?;
    crate::fsio::atomic_write(&target, &idx)?;
    Ok(Some(target))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::run_git as git;
    use std::path::Path;

    /// The `.idx` paths of the packs in `pack_dir`.
    fn index_paths(pack_dir: &Path) -> Vec<PathBuf> {
        let mut out: Vec<PathBuf> = fs::read_dir(pack_dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "idx"))
            .collect();
        out.sort();
        out
    }

    #[test]
    fn copied_packs_with_deltas_and_without_read_back_in_git() {
        crate::git::enable_fsync();
        let dir = tempfile::tempdir().unwrap();
        let repo = crate::git::init_repo(dir.path()).unwrap();
        let mut index = crate::git::GitIndex::load(&repo).unwrap();
        let mut commit = |i: usize| {
            // One file growing a line a commit: deltas once merged.
            let text: String = (0..=i).map(|n| format!("line {n} of the file\n")).collect();
            fs::write(dir.path().join("grow.txt"), text).unwrap();
            fs::write(dir.path().join(format!("f{i}.txt")), format!("file {i}")).unwrap();
            let name = format!("f{i}.txt");
            let paths = [Path::new("grow.txt"), Path::new(&name)];
            crate::git::commit_paths(&repo, &mut index, &paths, &format!("c{i}"), None).unwrap();
        };
        for i in 0..12 {
            commit(i);
        }
        // A pack with deltas (the packbuilder's), then more turn packs.
        let pack_dir = dir.path().join(".git/objects/pack");
        let first = index_paths(&pack_dir);
        let written = crate::git::repack::build(&repo, &first).unwrap();
        crate::git::repack::drop_packs(&first, &written).unwrap();
        crate::git::repack::purge_merged(repo.path(), std::time::Duration::ZERO).unwrap();
        let merged = index_paths(&pack_dir);
        assert_eq!(merged.len(), 1);
        let deltas = git(
            dir.path(),
            &["verify-pack", "-v", merged[0].to_str().unwrap()],
        );
        assert!(
            deltas.contains("chain length = 1"),
            "no delta to copy:\n{deltas}"
        );
        for i in 12..20 {
            commit(i);
        }
        let victims = index_paths(&pack_dir);
        assert_eq!(victims.len(), 9);
        let made = concat(&victims).unwrap().expect("no duplicates");
        crate::git::repack::drop_packs(&victims, &made).unwrap();
        crate::git::repack::purge_merged(repo.path(), std::time::Duration::ZERO).unwrap();
        assert_eq!(index_paths(&pack_dir), vec![made.clone()]);
        // git checks every entry's CRC and SHA-1, every delta, the index.
        git(dir.path(), &["verify-pack", made.to_str().unwrap()]);
        git(dir.path(), &["fsck", "--strict", "--full"]);
        assert_eq!(
            git(dir.path(), &["rev-list", "--count", "HEAD"]).trim(),
            "20"
        );
        let reopened = crate::git::open_repo(dir.path()).unwrap();
        let head = crate::git::head_commit(&reopened).unwrap().unwrap();
        let blob = head.tree().unwrap().get_name("grow.txt").unwrap().id();
        let text = reopened.find_blob(blob).unwrap().content().to_vec();
        assert!(String::from_utf8(text)
            .unwrap()
            .ends_with("line 19 of the file\n"));
    }

    #[test]
    fn packs_sharing_an_object_are_left_to_the_packbuilder() {
        let dir = tempfile::tempdir().unwrap();
        let repo = crate::git::init_repo(dir.path()).unwrap();
        let mut index = crate::git::GitIndex::load(&repo).unwrap();
        fs::write(dir.path().join("a.txt"), "a").unwrap();
        crate::git::commit_paths(&repo, &mut index, &[Path::new("a.txt")], "a", None).unwrap();
        let pack_dir = dir.path().join(".git/objects/pack");
        let one = index_paths(&pack_dir);
        // The same pack under a second name, as a crash may leave.
        let copy = pack_dir.join("pack-0000000000000000000000000000000000000001.idx");
        fs::copy(&one[0], &copy).unwrap();
        fs::copy(one[0].with_extension("pack"), copy.with_extension("pack")).unwrap();
        let before = index_paths(&pack_dir);
        assert_eq!(concat(&before).unwrap(), None);
        assert_eq!(index_paths(&pack_dir), before, "nothing written");
    }
}
