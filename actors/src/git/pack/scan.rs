//! A scan of a packfile before it is indexed: the object count and the
//! unpacked size against the import caps. A 205 KB bundle can unpack to
//! hundreds of megabytes (one highly compressible blob, or deltas that copy
//! a base over and over), so sizes are read from the pack itself: a base
//! object's header size, and a delta's result size from the start of its
//! data. Every zlib stream is inflated (to find where the next entry
//! starts) but never past its declared size, so the scan's own work is
//! bounded by the cap too. libgit2's indexer checks everything else.

use super::entry::{
    decode_header, delta_varint, inflate_bounded, skip_base_offset, OFS_DELTA, REF_DELTA,
};
use super::read_header;
use crate::git::bundle::{BundleError, ImportLimits};

/// What a pack unpacks to, as far as its caps are concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Measured {
    pub objects: u32,
    /// Every entry's inflated size, plus each delta's result size.
    pub unpacked: u64,
}

/// Refuse a pack over `limits` (or damaged) before anything of it is
/// written.
pub fn check(pack: &[u8], limits: ImportLimits) -> Result<(), BundleError> {
    measure(pack, limits).map(|_| ())
}

/// Walk `pack`'s entries, stopping as soon as it is over `limits`.
pub fn measure(pack: &[u8], limits: ImportLimits) -> Result<Measured, BundleError> {
    let damaged = |why: &str| BundleError::BadPack(why.to_string());
    let (version, count) = read_header(pack).ok_or_else(|| damaged("no pack header"))?;
    if !matches!(version, 2 | 3) {
        return Err(damaged("unknown pack version"));
    }
    if count > limits.max_objects {
        return Err(BundleError::TooManyObjects(count, limits.max_objects));
    }
    let mut pos = super::HEADER_LEN;
    let mut total: u64 = 0;
    for _ in 0..count {
        let (kind, size, after) =
            decode_header(pack, pos).ok_or_else(|| damaged("truncated entry"))?;
        pos = match kind {
            OFS_DELTA => skip_base_offset(pack, after).ok_or_else(|| damaged("truncated delta"))?,
            REF_DELTA => after + 20,
            1..=4 => after,
            _ => return Err(damaged("unknown object type")),
        };
        let budget = limits.max_unpacked.saturating_sub(total);
        if size > budget {
            return Err(BundleError::TooLarge(limits.max_unpacked));
        }
        let data = pack.get(pos..).ok_or_else(|| damaged("truncated entry"))?;
        let (consumed, head) =
            inflate_bounded(data, size).ok_or_else(|| damaged("bad zlib data"))?;
        pos += consumed;
        total += size;
        if matches!(kind, OFS_DELTA | REF_DELTA) {
            // A delta starts with the base's size, then the result's.
            let mut at = 0;
            delta_varint(&head, &mut at).ok_or_else(|| damaged("short delta"))?;
            let result = delta_varint(&head, &mut at).ok_or_else(|| damaged("short delta"))?;
            total = total.saturating_add(result);
        }
        if total > limits.max_unpacked {
            return Err(BundleError::TooLarge(limits.max_unpacked));
        }
    }
    Ok(Measured {
        objects: count,
        unpacked: total,
    })
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
