//! Property tests of the pack format, judged by libgit2: whatever objects
//! are packed, libgit2 reads each one back through the written `.idx`;
//! packs merged by copying keep them all; an index reads back as written;
//! an entry's header decodes as encoded; and the import scan answers any
//! bytes (truncated, damaged, random) without panicking.

use std::path::{Path, PathBuf};

use git2::{ObjectType, Oid, Repository};
use proptest::prelude::*;

use super::entry::{decode_header, encode_header};
use super::idx;
use super::{concat, measure, write_pack, PackFiles};
use crate::git::bundle::ImportLimits;

/// Blob contents: small ones, and some past a stored block's 65,535 bytes.
fn contents() -> impl Strategy<Value = Vec<Vec<u8>>> {
    prop::collection::vec(
        prop_oneof![
            4 => prop::collection::vec(any::<u8>(), 0..200),
            1 => prop::collection::vec(any::<u8>(), 65_000..70_000),
        ],
        1..10,
    )
}

fn objects(blobs: &[Vec<u8>]) -> Vec<(Oid, ObjectType, Vec<u8>)> {
    blobs
        .iter()
        .map(|b| {
            let oid = Oid::hash_object(ObjectType::Blob, b).unwrap();
            (oid, ObjectType::Blob, b.clone())
        })
        .collect()
}

/// `files` written into a new bare repository's pack folder; the `.idx`.
fn install(dir: &Path, files: &PackFiles) -> PathBuf {
    let pack_dir = dir.join("objects/pack");
    std::fs::write(pack_dir.join(format!("{}.pack", files.name)), &files.pack).unwrap();
    let idx = pack_dir.join(format!("{}.idx", files.name));
    std::fs::write(&idx, &files.idx).unwrap();
    idx
}

fn reads_back(dir: &Path, objects: &[(Oid, ObjectType, Vec<u8>)]) -> Result<(), TestCaseError> {
    let repo = Repository::open_bare(dir).unwrap();
    let odb = repo.odb().unwrap();
    for (oid, kind, data) in objects {
        let got = odb.read(*oid);
        prop_assert!(got.is_ok(), "libgit2 cannot read {oid}: {:?}", got.err());
        let got = got.unwrap();
        prop_assert_eq!(got.kind(), *kind);
        prop_assert_eq!(got.data(), &data[..]);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn every_packed_object_reads_back_through_libgit2(blobs in contents()) {
        let objects = objects(&blobs);
        let files = write_pack(&objects).unwrap();
        let tmp = tempfile::tempdir().unwrap();
        Repository::init_bare(tmp.path()).unwrap();
        install(tmp.path(), &files);
        reads_back(tmp.path(), &objects)?;
        // The import scan measures what was written.
        let measured = measure(&files.pack, ImportLimits::default());
        prop_assert!(measured.is_ok(), "{:?}", measured.err());
    }

    #[test]
    fn packs_merged_by_copying_keep_every_object(a in contents(), b in contents()) {
        let (a, b) = (objects(&a), objects(&b));
        let tmp = tempfile::tempdir().unwrap();
        Repository::init_bare(tmp.path()).unwrap();
        let victims = vec![
            install(tmp.path(), &write_pack(&a).unwrap()),
            install(tmp.path(), &write_pack(&b).unwrap()),
        ];
        let shared = a.iter().any(|x| b.iter().any(|y| x.0 == y.0));
        let merged = concat(&victims).unwrap();
        // An object in two packs is left to the packbuilder.
        prop_assert_eq!(merged.is_none(), shared);
        if let Some(merged) = merged {
            // The merged pack alone, in a repository of its own.
            let alone = tempfile::tempdir().unwrap();
            Repository::init_bare(alone.path()).unwrap();
            for ext in ["pack", "idx"] {
                let from = merged.with_extension(ext);
                let to = alone.path().join("objects/pack").join(from.file_name().unwrap());
                std::fs::copy(&from, &to).unwrap();
            }
            let all: Vec<_> = a.iter().chain(&b).cloned().collect();
            reads_back(alone.path(), &all)?;
        }
    }

    #[test]
    fn an_index_reads_back_as_written(
        entries in prop::collection::btree_map(
            prop::array::uniform20(any::<u8>()),
            (any::<u32>(), 0u64..(1 << 31)),
            0..300,
        ),
        checksum in prop::array::uniform20(any::<u8>()),
    ) {
        let mut list: Vec<idx::IndexEntry> = entries
            .iter()
            .map(|(id, (crc, at))| (Oid::from_bytes(id).unwrap(), *crc, *at))
            .collect();
        let bytes = idx::write(&mut list, &checksum).unwrap();
        let (read, sum) = idx::read(&bytes).unwrap();
        prop_assert_eq!(sum, checksum);
        prop_assert_eq!(read, list);
    }

    #[test]
    fn an_entry_header_decodes_as_encoded(code in 1u8..=4, size in 0usize..(1 << 40)) {
        let bytes = encode_header(code, size);
        prop_assert_eq!(decode_header(&bytes, 0), Some((code, size as u64, bytes.len())));
    }

    #[test]
    fn the_scan_answers_any_bytes(
        blobs in contents(),
        cut in any::<prop::sample::Index>(),
        flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..4),
        noise in prop::collection::vec(any::<u8>(), 0..512),
    ) {
        let mut pack = write_pack(&objects(&blobs)).unwrap().pack;
        for (at, byte) in flips {
            let i = at.index(pack.len());
            pack[i] ^= byte;
        }
        pack.truncate(cut.index(pack.len() + 1));
        let _ = measure(&pack, ImportLimits::default());
        let mut framed = super::header(3).to_vec();
        framed.extend_from_slice(&noise);
        let _ = measure(&framed, ImportLimits::default());
        let _ = idx::read(&noise);
    }
}
