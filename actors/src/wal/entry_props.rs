//! Property tests of the log's entry format: any changes read back as
//! written; a log cut anywhere reads back as the entries wholly before the
//! cut (a torn tail is dropped, never misread); damaged bytes never panic
//! the reader and never yield an entry that was not written.

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::PathBuf;

use git2::Oid;
use proptest::prelude::*;

use super::entry::{decode_all, encode};
use super::Change;

fn path() -> impl Strategy<Value = PathBuf> {
    prop_oneof![
        "[a-z0-9/._-]{0,40}".prop_map(PathBuf::from),
        prop::collection::vec(any::<u8>(), 0..40)
            .prop_map(|b| PathBuf::from(OsString::from_vec(b))),
    ]
}

fn oid() -> impl Strategy<Value = Oid> {
    prop::array::uniform20(any::<u8>()).prop_map(|b| Oid::from_bytes(&b).unwrap())
}

fn change() -> impl Strategy<Value = Change> {
    prop_oneof![
        (path(), path(), prop::collection::vec(any::<u8>(), 0..300))
            .prop_map(|(root, path, bytes)| Change::Put { root, path, bytes }),
        (path(), path()).prop_map(|(root, path)| Change::Remove { root, path }),
        (
            path(),
            path(),
            "[ -~]{0,60}",
            prop::option::of(oid()),
            oid()
        )
            .prop_map(|(root, git_dir, name, old, new)| Change::Ref {
                root,
                git_dir,
                name,
                old,
                new
            }),
        path().prop_map(|root| Change::Barrier { root }),
        (path(), prop::collection::vec(any::<u8>(), 0..200))
            .prop_map(|(root, event)| Change::Feed { root, event }),
    ]
}

fn entries() -> impl Strategy<Value = Vec<Vec<Change>>> {
    prop::collection::vec(prop::collection::vec(change(), 0..6), 0..8)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn entries_read_back_as_written(written in entries()) {
        let log: Vec<u8> = written.iter().flat_map(|e| encode(e)).collect();
        prop_assert_eq!(decode_all(&log), (written, true));
    }

    #[test]
    fn a_cut_log_reads_back_as_the_entries_before_the_cut(
        written in entries(),
        cut in any::<prop::sample::Index>(),
    ) {
        let frames: Vec<Vec<u8>> = written.iter().map(|e| encode(e)).collect();
        let log: Vec<u8> = frames.concat();
        let at = cut.index(log.len() + 1);
        let (read, clean) = decode_all(&log[..at]);
        // The entries wholly before the cut, and "clean" exactly when the
        // cut falls between two entries.
        let mut end = 0;
        let mut whole = 0;
        for f in &frames {
            if end + f.len() > at {
                break;
            }
            end += f.len();
            whole += 1;
        }
        prop_assert_eq!(&read[..], &written[..whole]);
        prop_assert_eq!(clean, end == at);
    }

    #[test]
    fn damaged_bytes_yield_only_entries_that_were_written(
        written in entries(),
        flips in prop::collection::vec((any::<prop::sample::Index>(), 1u8..=255), 1..4),
        noise in prop::collection::vec(any::<u8>(), 0..256),
    ) {
        let mut log: Vec<u8> = written.iter().flat_map(|e| encode(e)).collect();
        log.extend_from_slice(&noise);
        if !log.is_empty() {
            for (at, byte) in flips {
                let i = at.index(log.len());
                log[i] ^= byte;
            }
        }
        let (read, _) = decode_all(&log);
        prop_assert!(read.len() <= written.len());
        prop_assert_eq!(&read[..], &written[..read.len()]);
    }
}
