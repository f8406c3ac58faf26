//! The bytes of one index entry (version 4): stat data, mode, id, flags,
//! the path prefix-compressed against the previous entry's.

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use git2::Oid;

#[derive(Default)]
pub(super) struct Stat {
    pub(super) ctime: (u32, u32),
    pub(super) mtime: (u32, u32),
    pub(super) dev: u32,
    pub(super) ino: u32,
    pub(super) uid: u32,
    pub(super) gid: u32,
    pub(super) size: u32,
}

impl Stat {
    pub(super) fn of(m: &fs::Metadata) -> Stat {
        Stat {
            ctime: (m.ctime() as u32, m.ctime_nsec() as u32),
            mtime: (m.mtime() as u32, m.mtime_nsec() as u32),
            dev: m.dev() as u32,
            ino: m.ino() as u32,
            uid: m.uid(),
            gid: m.gid(),
            size: m.size() as u32,
        }
    }
}

pub(super) fn path_bytes(path: &Path) -> Vec<u8> {
    path.to_string_lossy().replace('\\', "/").into_bytes()
}

/// Length of an entry's fixed part: stat data, mode, id and flags.
pub(super) const FIXED: usize = 62;

pub(super) type Fixed = [u8; FIXED];

/// The fixed part of an index entry for a path of `path_len` bytes.
pub(super) fn fixed_part(path_len: usize, stat: &Stat, mode: u32, id: Oid) -> Fixed {
    let mut b = [0u8; FIXED];
    for (i, v) in [
        stat.ctime.0,
        stat.ctime.1,
        stat.mtime.0,
        stat.mtime.1,
        stat.dev,
        stat.ino,
        mode,
        stat.uid,
        stat.gid,
        stat.size,
    ]
    .into_iter()
    .enumerate()
    {
        b[i * 4..i * 4 + 4].copy_from_slice(&v.to_be_bytes());
    }
    b[40..60].copy_from_slice(id.as_bytes());
    b[60..62].copy_from_slice(&(path_len.min(0xfff) as u16).to_be_bytes());
    b
}

/// Files of the session the server rewrites between commits (its live
/// metadata): their index entries carry git's skip-worktree flag, so `git
/// status` in a session folder shows a clean tree while `meta.json` holds
/// state newer than the last commit (a switch of branch, a rename), and a
/// `git checkout` by hand leaves the server's file in place. Commits still
/// record them: the store builds its trees itself.
const LIVE_FILES: &[&[u8]] = &[b"meta.json"];

/// `fixed` with the extended flag set when `path` is a live file (the
/// entry then carries extended flags: skip-worktree, see `encode`).
pub(super) fn flagged(path: &[u8], mut fixed: Fixed) -> Fixed {
    if LIVE_FILES.contains(&path) {
        fixed[60] |= 0x40;
    }
    fixed
}

/// One version-4 entry: the fixed part, then the path as "drop N bytes from
/// the end of the previous entry's path, append S": N as git's offset
/// varint, S NUL-terminated; no padding.
pub(super) fn encode(prev: &[u8], path: &[u8], fixed: &Fixed) -> Vec<u8> {
    let common = prev.iter().zip(path).take_while(|(a, b)| a == b).count();
    let mut b = Vec::with_capacity(FIXED + 4 + path.len() - common);
    b.extend_from_slice(fixed);
    if fixed[60] & 0x40 != 0 {
        // Extended flags (index version 3 on): skip-worktree.
        b.extend_from_slice(&0x4000u16.to_be_bytes());
    }
    push_varint(&mut b, (prev.len() - common) as u64);
    b.extend_from_slice(&path[common..]);
    b.push(0);
    b
}

/// git's variable-width integer (as for OFS_DELTA offsets).
pub(super) fn push_varint(out: &mut Vec<u8>, mut value: u64) {
    let mut buf = [0u8; 10];
    let mut pos = buf.len() - 1;
    buf[pos] = (value & 127) as u8;
    value >>= 7;
    while value != 0 {
        value -= 1;
        pos -= 1;
        buf[pos] = 128 | (value & 127) as u8;
        value >>= 7;
    }
    out.extend_from_slice(&buf[pos..]);
}

/// The fixed part of an entry as libgit2 read it.
pub(super) fn entry_fixed(e: &git2::IndexEntry) -> Fixed {
    let stat = Stat {
        ctime: (e.ctime.seconds() as u32, e.ctime.nanoseconds()),
        mtime: (e.mtime.seconds() as u32, e.mtime.nanoseconds()),
        dev: e.dev,
        ino: e.ino,
        uid: e.uid,
        gid: e.gid,
        size: e.file_size,
    };
    flagged(&e.path, fixed_part(e.path.len(), &stat, e.mode, e.id))
}
