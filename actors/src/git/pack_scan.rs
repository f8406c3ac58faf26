//! A scan of a packfile before it is indexed: the object count and the
//! unpacked size against the import caps. A 205 KB bundle can unpack to
//! hundreds of megabytes (one highly compressible blob, or deltas that copy
//! a base over and over), so sizes are read from the pack itself: a base
//! object's header size, and a delta's result size from the start of its
//! data. Every zlib stream is inflated (to find where the next entry
//! starts) but never past its declared size, so the scan's own work is
//! bounded by the cap too. libgit2's indexer checks everything else.

use super::bundle::{BundleError, ImportLimits};

const OFS_DELTA: u8 = 6;
const REF_DELTA: u8 = 7;

pub fn check(pack: &[u8], limits: ImportLimits) -> Result<(), BundleError> {
    let damaged = |why: &str| BundleError::BadPack(why.to_string());
    let header = pack.get(..12).ok_or_else(|| damaged("truncated header"))?;
    if header.get(..4) != Some(b"PACK".as_slice()) {
        return Err(damaged("no PACK signature"));
    }
    let word = |i: usize| -> u32 {
        let b = [header[i], header[i + 1], header[i + 2], header[i + 3]];
        u32::from_be_bytes(b)
    };
    if !matches!(word(4), 2 | 3) {
        return Err(damaged("unknown pack version"));
    }
    let count = word(8);
    if count > limits.max_objects {
        return Err(BundleError::TooManyObjects(count, limits.max_objects));
    }
    let mut pos = 12usize;
    let mut total: u64 = 0;
    for _ in 0..count {
        let (kind, size, after) =
            entry_header(pack, pos).ok_or_else(|| damaged("truncated entry"))?;
        pos = after;
        match kind {
            OFS_DELTA => {
                // The base's offset, a varint.
                loop {
                    let b = *pack.get(pos).ok_or_else(|| damaged("truncated delta"))?;
                    pos += 1;
                    if b & 0x80 == 0 {
                        break;
                    }
                }
            }
            REF_DELTA => pos += 20,
            1..=4 => {}
            _ => return Err(damaged("unknown object type")),
        }
        let budget = limits.max_unpacked.saturating_sub(total);
        if size > budget {
            return Err(BundleError::TooLarge(limits.max_unpacked));
        }
        let data = pack.get(pos..).ok_or_else(|| damaged("truncated entry"))?;
        let (consumed, head) = inflate(data, size).ok_or_else(|| damaged("bad zlib data"))?;
        pos += consumed;
        total += size;
        if matches!(kind, OFS_DELTA | REF_DELTA) {
            // A delta starts with the base's size, then the result's.
            let mut at = 0;
            varint(&head, &mut at).ok_or_else(|| damaged("short delta"))?;
            let result = varint(&head, &mut at).ok_or_else(|| damaged("short delta"))?;
            total = total.saturating_add(result);
        }
        if total > limits.max_unpacked {
            return Err(BundleError::TooLarge(limits.max_unpacked));
        }
    }
    Ok(())
}

/// An entry's type and size (the size of its inflated data) and where its
/// data starts.
fn entry_header(pack: &[u8], mut pos: usize) -> Option<(u8, u64, usize)> {
    let mut b = *pack.get(pos)?;
    pos += 1;
    let kind = (b >> 4) & 7;
    let mut size = u64::from(b & 0x0f);
    let mut shift = 4;
    while b & 0x80 != 0 {
        b = *pack.get(pos)?;
        pos += 1;
        if shift > 60 {
            return None;
        }
        size |= u64::from(b & 0x7f) << shift;
        shift += 7;
    }
    Some((kind, size, pos))
}

/// A delta header's little-endian base-128 number.
fn varint(bytes: &[u8], at: &mut usize) -> Option<u64> {
    let mut value = 0u64;
    let mut shift = 0;
    loop {
        let b = *bytes.get(*at)?;
        *at += 1;
        if shift > 60 {
            return None;
        }
        value |= u64::from(b & 0x7f) << shift;
        shift += 7;
        if b & 0x80 == 0 {
            return Some(value);
        }
    }
}

/// Inflate one zlib stream of at most `size` bytes of output: the input
/// bytes it took, and its first bytes (for a delta's header). `None` when
/// the stream is damaged, truncated, or longer than it declared.
fn inflate(data: &[u8], size: u64) -> Option<(usize, Vec<u8>)> {
    use flate2::{Decompress, FlushDecompress, Status};
    let mut z = Decompress::new(true);
    let mut out = vec![0u8; 64 * 1024];
    let mut head = Vec::new();
    loop {
        let before_in = z.total_in();
        let before_out = z.total_out();
        let input = data.get(usize::try_from(before_in).ok()?..)?;
        let status = z.decompress(input, &mut out, FlushDecompress::None).ok()?;
        let produced = usize::try_from(z.total_out() - before_out).ok()?;
        if head.len() < 32 {
            let take = produced.min(32 - head.len());
            head.extend_from_slice(out.get(..take)?);
        }
        if z.total_out() > size {
            return None;
        }
        match status {
            Status::StreamEnd => return Some((usize::try_from(z.total_in()).ok()?, head)),
            _ if z.total_in() == before_in && produced == 0 => return None,
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pack_of(blob: &[u8]) -> Vec<u8> {
        let dir = tempfile::tempdir().unwrap();
        let repo = git2::Repository::init(dir.path()).unwrap();
        let oid = repo.blob(blob).unwrap();
        let mut builder = repo.packbuilder().unwrap();
        builder.insert_object(oid, None).unwrap();
        let mut buf = git2::Buf::new();
        builder.write_buf(&mut buf).unwrap();
        buf.to_vec()
    }

    #[test]
    fn a_small_pack_of_a_huge_blob_is_refused() {
        let zeros = vec![0u8; 8 << 20];
        let pack = pack_of(&zeros);
        assert!(pack.len() < 64 * 1024, "{} bytes", pack.len());
        let limits = ImportLimits {
            max_unpacked: 1 << 20,
            max_objects: 10,
        };
        assert!(matches!(
            check(&pack, limits),
            Err(BundleError::TooLarge(_))
        ));
        let roomy = ImportLimits {
            max_unpacked: 16 << 20,
            max_objects: 10,
        };
        check(&pack, roomy).unwrap();
        let few = ImportLimits {
            max_unpacked: 16 << 20,
            max_objects: 0,
        };
        assert!(matches!(
            check(&pack, few),
            Err(BundleError::TooManyObjects(1, 0))
        ));
    }

    #[test]
    fn damaged_packs_are_refused_not_panicked_on() {
        let pack = pack_of(b"hello world, hello world, hello world");
        let limits = ImportLimits::default();
        check(&pack, limits).unwrap();
        for cut in 0..pack.len().saturating_sub(20) {
            let _ = check(&pack[..cut], limits);
        }
        let mut flipped = pack.clone();
        for i in 12..flipped.len().min(40) {
            flipped[i] ^= 0xff;
            let _ = check(&flipped, limits);
            flipped[i] ^= 0xff;
        }
    }
}
