//! A pack's version-2 index (`.idx`), written and read here together: the
//! magic and version, the fan-out table of 256 counts, the sorted object
//! ids, each entry's CRC-32, its offset (31 bits; larger ones in a table
//! of 64-bit offsets after), then the pack's checksum and the index's own.

use git2::Oid;
use sha1::{Digest, Sha1};

use crate::git::GitError;

/// `\377tOc`: a version-2 (or later) index.
pub const MAGIC: [u8; 4] = [0xff, b't', b'O', b'c'];
pub const VERSION: u32 = 2;

/// One object of a pack index: id, CRC-32 of its entry, offset.
pub type IndexEntry = (Oid, u32, u64);

pub(super) fn bad(what: &str) -> GitError {
    git2::Error::from_str(&format!("bad pack index: {what}")).into()
}

pub(super) fn be32(bytes: &[u8], at: usize) -> Result<u32, GitError> {
    bytes
        .get(at..at + 4)
        .and_then(|b| b.try_into().ok())
        .map(u32::from_be_bytes)
        .ok_or_else(|| bad("truncated"))
}

/// The version-2 index of a pack whose `entries` are (id, CRC-32 of the
/// entry's bytes, offset) and whose trailer is `checksum`.
pub fn write(entries: &mut Vec<IndexEntry>, checksum: &[u8; 20]) -> Result<Vec<u8>, GitError> {
    entries.sort_by_key(|e| e.0);
    entries.dedup_by_key(|e| e.0);
    let mut idx = Vec::with_capacity(8 + 1024 + entries.len() * 28 + 40);
    idx.extend_from_slice(&MAGIC);
    idx.extend_from_slice(&VERSION.to_be_bytes());
    let mut fanout = [0u32; 256];
    for (oid, _, _) in entries.iter() {
        fanout[oid.as_bytes()[0] as usize] += 1;
    }
    let mut running = 0u32;
    for n in fanout {
        running += n;
        idx.extend_from_slice(&running.to_be_bytes());
    }
    for (oid, _, _) in entries.iter() {
        idx.extend_from_slice(oid.as_bytes());
    }
    for (_, crc, _) in entries.iter() {
        idx.extend_from_slice(&crc.to_be_bytes());
    }
    for (_, _, offset) in entries.iter() {
        let small = u32::try_from(*offset)
            .ok()
            .filter(|o| o & 0x8000_0000 == 0)
            .ok_or_else(|| git2::Error::from_str("pack too large for a direct write"))?;
        idx.extend_from_slice(&small.to_be_bytes());
    }
    idx.extend_from_slice(checksum);
    let idx_sum: [u8; 20] = Sha1::digest(&idx).into();
    idx.extend_from_slice(&idx_sum);

    Ok(idx)
}

/// The entries of a version-2 pack index, in its (object id) order; and
/// the checksum of the pack it indexes.
pub fn read(bytes: &[u8]) -> Result<(Vec<IndexEntry>, [u8; 20]), GitError> {
    if bytes.get(0..4) != Some(&MAGIC[..]) || be32(bytes, 4)? != VERSION {
        return Err(bad("not version 2"));
    }
    let count = be32(bytes, 8 + 255 * 4)? as usize;
    let oids = 8 + 256 * 4;
    let crcs = oids + count * 20;
    let offsets = crcs + count * 4;
    let large = offsets + count * 4;
    let trailer = bytes
        .len()
        .checked_sub(40)
        .ok_or_else(|| bad("truncated"))?;
    if trailer < large {
        return Err(bad("truncated"));
    }
    let mut out = Vec::with_capacity(count);
    for i in 0..count {
        let oid = Oid::from_bytes(&bytes[oids + i * 20..oids + i * 20 + 20])?;
        let crc = be32(bytes, crcs + i * 4)?;
        let small = be32(bytes, offsets + i * 4)?;
        let offset = if small & 0x8000_0000 == 0 {
            u64::from(small)
        } else {
            let at = large + (small & 0x7fff_ffff) as usize * 8;
            if at + 8 > trailer {
                return Err(bad("large offset out of range"));
            }
            (u64::from(be32(bytes, at)?) << 32) | u64::from(be32(bytes, at + 4)?)
        };
        out.push((oid, crc, offset));
    }
    let mut checksum = [0u8; 20];
    checksum.copy_from_slice(&bytes[trailer..trailer + 20]);
    Ok((out, checksum))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_index_reads_back_as_written() {
        let mut entries: Vec<IndexEntry> = (0..300u32)
            .map(|i| {
                let oid = Oid::hash_object(git2::ObjectType::Blob, &i.to_be_bytes()).unwrap();
                (oid, i.wrapping_mul(2_654_435_761), u64::from(i) * 40 + 12)
            })
            .collect();
        let checksum = [7u8; 20];
        let bytes = write(&mut entries, &checksum).unwrap();
        let (read_back, sum) = read(&bytes).unwrap();
        assert_eq!(read_back, entries, "sorted by id, as written");
        assert_eq!(sum, checksum);
    }

    #[test]
    fn a_damaged_index_is_an_error_not_a_panic() {
        assert!(read(b"").is_err());
        assert!(read(&[0xff, b't', b'O', b'c', 0, 0, 0, 2]).is_err());
        let mut fake = vec![0xff, b't', b'O', b'c', 0, 0, 0, 2];
        fake.extend(std::iter::repeat_n(0xff, 1024 + 40));
        assert!(read(&fake).is_err());
        let mut entries: Vec<IndexEntry> = vec![(Oid::zero(), 0, 12)];
        let good = write(&mut entries, &[0; 20]).unwrap();
        for cut in 0..good.len() {
            let _ = read(&good[..cut]);
        }
    }
}
