//! One record of the change feed, framed so that a torn or damaged tail is
//! recognised: `OPCF`, payload length, CRC-32 of the payload, payload. The
//! payload is the record's sequence number, the position of the
//! write-ahead log entry it came from (segment, entry), then the event as
//! JSON.

pub const MAGIC: &[u8; 4] = b"OPCF";
pub const HEADER: usize = 12;
/// Sequence number, log segment, log entry.
const FIXED: usize = 8 + 8 + 4;
/// A record larger than this is damage, not a record.
const MAX_PAYLOAD: usize = 1 << 20;

/// Where in the write-ahead log an event was logged: records are appended
/// in this order, so replay appends only events logged after the last
/// record's position.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct LogPosition {
    pub segment: u64,
    pub entry: u32,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    pub seq: u64,
    pub logged_at: LogPosition,
    pub event: Vec<u8>,
}

impl Record {
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        let len = FIXED + self.event.len();
        let start = out.len();
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&(len as u32).to_le_bytes());
        out.extend_from_slice(&[0; 4]);
        let payload = out.len();
        out.extend_from_slice(&self.seq.to_le_bytes());
        out.extend_from_slice(&self.logged_at.segment.to_le_bytes());
        out.extend_from_slice(&self.logged_at.entry.to_le_bytes());
        out.extend_from_slice(&self.event);
        let crc = crc32fast::hash(&out[payload..]);
        out[start + 8..start + 12].copy_from_slice(&crc.to_le_bytes());
    }

    /// The record at the start of `bytes` and its framed length; `None`
    /// when `bytes` does not start with a whole, undamaged record.
    pub fn decode(bytes: &[u8]) -> Option<(Record, usize)> {
        let header = bytes.get(..HEADER)?;
        if &header[0..4] != MAGIC {
            return None;
        }
        let len = u32::from_le_bytes(header[4..8].try_into().ok()?) as usize;
        let crc = u32::from_le_bytes(header[8..12].try_into().ok()?);
        if !(FIXED..=MAX_PAYLOAD).contains(&len) {
            return None;
        }
        let payload = bytes.get(HEADER..HEADER + len)?;
        if crc32fast::hash(payload) != crc {
            return None;
        }
        let seq = u64::from_le_bytes(payload[0..8].try_into().ok()?);
        let segment = u64::from_le_bytes(payload[8..16].try_into().ok()?);
        let entry = u32::from_le_bytes(payload[16..20].try_into().ok()?);
        Some((
            Record {
                seq,
                logged_at: LogPosition { segment, entry },
                event: payload[FIXED..].to_vec(),
            },
            HEADER + len,
        ))
    }
}

/// The whole records at the start of `bytes`, with the offset after each,
/// up to the first torn or damaged one.
pub fn decode_all(bytes: &[u8]) -> Vec<(Record, usize)> {
    let mut out = Vec::new();
    let mut at = 0;
    while let Some((r, n)) = bytes.get(at..).and_then(Record::decode) {
        at += n;
        out.push((r, at));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_torn_tail() {
        let mut bytes = Vec::new();
        for seq in 1..=3 {
            Record {
                seq,
                logged_at: LogPosition {
                    segment: 7,
                    entry: seq as u32,
                },
                event: format!("{{\"n\":{seq}}}").into_bytes(),
            }
            .encode_into(&mut bytes);
        }
        let whole = decode_all(&bytes);
        assert_eq!(whole.len(), 3);
        assert_eq!(whole[2].1, bytes.len());
        assert_eq!(whole[1].0.event, b"{\"n\":2}");
        // Torn: the last record loses its last byte.
        let torn = decode_all(&bytes[..bytes.len() - 1]);
        assert_eq!(torn.len(), 2);
        // Damaged: a flipped bit in the second record stops there.
        let mut bad = bytes.clone();
        bad[whole[0].1 + HEADER + 3] ^= 1;
        assert_eq!(decode_all(&bad).len(), 1);
        // Zeros (a hole a power loss left) are no record.
        assert!(decode_all(&[0u8; 64]).is_empty());
    }
}
