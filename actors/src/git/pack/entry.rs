//! One entry of a pack: its header (type and inflated size, written and
//! read here together), its zlib data (written as stored blocks, read back
//! with a bound on the output), and the varints of deltas.

use git2::ObjectType;

use super::super::GitError;

/// Entry types (the header's three type bits).
pub const COMMIT: u8 = 1;
pub const TREE: u8 = 2;
pub const BLOB: u8 = 3;
pub const TAG: u8 = 4;
/// A delta against an entry earlier in the same pack (by offset).
pub const OFS_DELTA: u8 = 6;
/// A delta against an object named by its id.
pub const REF_DELTA: u8 = 7;

pub fn type_code(kind: ObjectType) -> Result<u8, GitError> {
    Ok(match kind {
        ObjectType::Commit => COMMIT,
        ObjectType::Tree => TREE,
        ObjectType::Blob => BLOB,
        ObjectType::Tag => TAG,
        _ => return Err(git2::Error::from_str("object of unknown type").into()),
    })
}

/// The object header: type and size, seven bits a byte after the first four.
pub fn encode_header(code: u8, size: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(10);
    let mut byte = (code << 4) | (size & 0x0f) as u8;
    let mut rest = size >> 4;
    while rest > 0 {
        out.push(byte | 0x80);
        byte = (rest & 0x7f) as u8;
        rest >>= 7;
    }
    out.push(byte);
    out
}

/// An entry's type and size (the size of its inflated data) and where its
/// data starts.
pub fn decode_header(pack: &[u8], mut pos: usize) -> Option<(u8, u64, usize)> {
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

/// Skip an offset delta's base offset (a big-endian base-128 number) at
/// `pos`; where the delta's data starts.
pub fn skip_base_offset(pack: &[u8], mut pos: usize) -> Option<usize> {
    loop {
        let b = *pack.get(pos)?;
        pos += 1;
        if b & 0x80 == 0 {
            return Some(pos);
        }
    }
}

/// A delta header's little-endian base-128 number.
pub fn delta_varint(bytes: &[u8], at: &mut usize) -> Option<u64> {
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

/// Append `data` as a zlib stream of stored blocks (RFC 1950/1951): the
/// header, blocks of at most 65,535 bytes each with its length and the
/// length's complement, the last one flagged final, then Adler-32.
pub fn zlib_stored(out: &mut Vec<u8>, data: &[u8]) {
    // CMF: deflate, 32 KB window; FLG: no dictionary, level "fastest",
    // with the check bits that make the pair a multiple of 31.
    out.extend_from_slice(&[0x78, 0x01]);
    let mut blocks = data.chunks(0xffff).peekable();
    if blocks.peek().is_none() {
        out.extend_from_slice(&[0x01, 0x00, 0x00, 0xff, 0xff]);
    }
    while let Some(block) = blocks.next() {
        let last = blocks.peek().is_none();
        // A chunk is at most 0xffff bytes long.
        let len = block.len() as u16;
        out.push(u8::from(last));
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&(!len).to_le_bytes());
        out.extend_from_slice(block);
    }
    let mut adler = adler2::Adler32::new();
    adler.write_slice(data);
    out.extend_from_slice(&adler.checksum().to_be_bytes());
}

/// Inflate one zlib stream of at most `size` bytes of output: the input
/// bytes it took, and its first bytes (for a delta's header). `None` when
/// the stream is damaged, truncated, or longer than it declared.
pub fn inflate_bounded(data: &[u8], size: u64) -> Option<(usize, Vec<u8>)> {
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

    #[test]
    fn headers_read_back_as_written() {
        for size in [0usize, 1, 15, 16, 127, 128, 2047, 2048, 70_000, 1 << 31] {
            for code in [COMMIT, TREE, BLOB, TAG] {
                let bytes = encode_header(code, size);
                let (kind, read, next) = decode_header(&bytes, 0).unwrap();
                assert_eq!((kind, read, next), (code, size as u64, bytes.len()));
            }
        }
        // A header cut short, or one that never ends, reads as nothing.
        assert!(decode_header(&[0x80 | 0x30], 0).is_none());
        assert!(decode_header(&[0xff; 16], 0).is_none());
    }

    #[test]
    fn stored_zlib_inflates_to_its_data() {
        for len in [0usize, 1, 65_535, 65_536, 200_000] {
            let data: Vec<u8> = (0..len).map(|i| (i % 253) as u8).collect();
            let mut z = Vec::new();
            zlib_stored(&mut z, &data);
            let (used, head) = inflate_bounded(&z, len as u64).unwrap();
            assert_eq!(used, z.len());
            assert_eq!(head, data[..data.len().min(32)]);
            if len > 0 {
                // More than it declared: refused.
                assert!(inflate_bounded(&z, len as u64 - 1).is_none());
            }
        }
    }
}
