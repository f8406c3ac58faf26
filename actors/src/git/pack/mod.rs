//! The pack format (git's `Documentation/gitformat-pack.txt`) in one place:
//! the header (`PACK`, version, object count) here, an entry's header and
//! data in `entry`, the `.idx` in `idx`, each written and read by the same
//! module. Built on them: `write` (a commit's few objects, stored whole),
//! `concat` (a busy merge by copying entries), `scan` (an imported pack
//! measured against the import caps before libgit2 indexes it).

mod concat;
mod entry;
mod idx;
mod scan;
mod write;

#[cfg(test)]
mod props;
#[cfg(test)]
mod tests;

pub use concat::concat;
pub use idx::{read as read_index, IndexEntry};
pub use scan::{check, measure, Measured};
pub use write::{write_pack, PackFiles};

/// The pack's signature.
pub const MAGIC: [u8; 4] = *b"PACK";
/// The version this store writes (git reads 2 and 3).
pub const VERSION: u32 = 2;
/// Signature, version and object count.
pub const HEADER_LEN: usize = 12;

/// A pack's header for `count` objects.
pub fn header(count: u32) -> [u8; HEADER_LEN] {
    let mut out = [0u8; HEADER_LEN];
    out[..4].copy_from_slice(&MAGIC);
    out[4..8].copy_from_slice(&VERSION.to_be_bytes());
    out[8..].copy_from_slice(&count.to_be_bytes());
    out
}

/// A pack's version and object count, if `bytes` starts with a header.
pub fn read_header(bytes: &[u8]) -> Option<(u32, u32)> {
    let word = |at: usize| -> Option<u32> {
        let b: [u8; 4] = bytes.get(at..at + 4)?.try_into().ok()?;
        Some(u32::from_be_bytes(b))
    };
    if bytes.get(..4)? != MAGIC {
        return None;
    }
    Some((word(4)?, word(8)?))
}
