//! One log entry: the changes of one durable write, framed so that a torn
//! or damaged tail is recognised (`OPWL`, payload length, CRC-32 of the
//! payload, payload).

use std::ffi::OsString;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::PathBuf;

use git2::Oid;

use super::Change;

const MAGIC: &[u8; 4] = b"OPWL";
pub const HEADER: usize = 12;

const PUT: u8 = 1;
const REMOVE: u8 = 2;
const REF: u8 = 3;
const BARRIER: u8 = 4;
const FEED: u8 = 5;

fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
    out.extend_from_slice(bytes);
}

fn put_path(out: &mut Vec<u8>, path: &std::path::Path) {
    put_bytes(out, path.as_os_str().as_bytes());
}

/// The framed entry for `changes`.
pub fn encode(changes: &[Change]) -> Vec<u8> {
    let mut payload = Vec::new();
    payload.extend_from_slice(&(changes.len() as u32).to_le_bytes());
    for c in changes {
        match c {
            Change::Put { root, path, bytes } => {
                payload.push(PUT);
                put_path(&mut payload, root);
                put_path(&mut payload, path);
                put_bytes(&mut payload, bytes);
            }
            Change::Remove { root, path } => {
                payload.push(REMOVE);
                put_path(&mut payload, root);
                put_path(&mut payload, path);
            }
            Change::Ref {
                root,
                git_dir,
                name,
                old,
                new,
            } => {
                payload.push(REF);
                put_path(&mut payload, root);
                put_path(&mut payload, git_dir);
                put_bytes(&mut payload, name.as_bytes());
                match old {
                    Some(o) => {
                        payload.push(1);
                        payload.extend_from_slice(o.as_bytes());
                    }
                    None => payload.push(0),
                }
                payload.extend_from_slice(new.as_bytes());
            }
            Change::Barrier { root } => {
                payload.push(BARRIER);
                put_path(&mut payload, root);
            }
            Change::Feed { root, event } => {
                payload.push(FEED);
                put_path(&mut payload, root);
                put_bytes(&mut payload, event);
            }
        }
    }
    let mut out = Vec::with_capacity(HEADER + payload.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    out.extend_from_slice(&crc32fast::hash(&payload).to_le_bytes());
    out.extend_from_slice(&payload);
    out
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.at.checked_add(n)?;
        let out = self.bytes.get(self.at..end)?;
        self.at = end;
        Some(out)
    }
    fn u8(&mut self) -> Option<u8> {
        self.take(1).map(|b| b[0])
    }
    fn u32(&mut self) -> Option<u32> {
        self.take(4)
            .and_then(|b| b.try_into().ok())
            .map(u32::from_le_bytes)
    }
    fn bytes(&mut self) -> Option<&'a [u8]> {
        let n = self.u32()? as usize;
        self.take(n)
    }
    fn path(&mut self) -> Option<PathBuf> {
        self.bytes()
            .map(|b| PathBuf::from(OsString::from_vec(b.to_vec())))
    }
    fn oid(&mut self) -> Option<Oid> {
        self.take(20).and_then(|b| Oid::from_bytes(b).ok())
    }
}

fn decode_payload(payload: &[u8]) -> Option<Vec<Change>> {
    let mut r = Reader {
        bytes: payload,
        at: 0,
    };
    let n = r.u32()? as usize;
    let mut out = Vec::with_capacity(n.min(1024));
    for _ in 0..n {
        let change = match r.u8()? {
            PUT => Change::Put {
                root: r.path()?,
                path: r.path()?,
                bytes: r.bytes()?.to_vec(),
            },
            REMOVE => Change::Remove {
                root: r.path()?,
                path: r.path()?,
            },
            REF => {
                let root = r.path()?;
                let git_dir = r.path()?;
                let name = String::from_utf8(r.bytes()?.to_vec()).ok()?;
                let old = match r.u8()? {
                    0 => None,
                    _ => Some(r.oid()?),
                };
                Change::Ref {
                    root,
                    git_dir,
                    name,
                    old,
                    new: r.oid()?,
                }
            }
            BARRIER => Change::Barrier { root: r.path()? },
            FEED => Change::Feed {
                root: r.path()?,
                event: r.bytes()?.to_vec(),
            },
            _ => return None,
        };
        out.push(change);
    }
    (r.at == payload.len()).then_some(out)
}

/// The entries of a segment, in order, up to the first that is torn or
/// damaged; and whether the segment ended cleanly: at its end, or where
/// only zeros follow (a segment made ahead of time, `spare`).
pub fn decode_all(bytes: &[u8]) -> (Vec<Vec<Change>>, bool) {
    let mut out = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let header = bytes.get(at..at + HEADER).filter(|h| &h[0..4] == MAGIC);
        let Some(header) = header else {
            let zeros = bytes[at..].iter().all(|b| *b == 0);
            return (out, zeros);
        };
        let len = u32::from_le_bytes([header[4], header[5], header[6], header[7]]) as usize;
        let crc = u32::from_le_bytes([header[8], header[9], header[10], header[11]]);
        let Some(payload) = bytes.get(at + HEADER..at + HEADER + len) else {
            return (out, false);
        };
        if crc32fast::hash(payload) != crc {
            return (out, false);
        }
        match decode_payload(payload) {
            Some(changes) => out.push(changes),
            None => return (out, false),
        }
        at += HEADER + len;
    }
    (out, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_round_trip_and_a_torn_tail_is_dropped() {
        let a = vec![
            Change::Put {
                root: "/s/a".into(),
                path: "/s/a/meta.json".into(),
                bytes: b"{}".to_vec(),
            },
            Change::Ref {
                root: "/s/a".into(),
                git_dir: "/s/a/.git".into(),
                name: "refs/heads/main".into(),
                old: None,
                new: Oid::hash_object(git2::ObjectType::Blob, b"x").unwrap(),
            },
        ];
        let b = vec![
            Change::Remove {
                root: "/s/a".into(),
                path: "/s/a/x".into(),
            },
            Change::Barrier {
                root: "/s/a".into(),
            },
        ];
        let mut log = encode(&a);
        log.extend(encode(&b));
        let (all, clean) = decode_all(&log);
        assert!(clean);
        assert_eq!(all, vec![a.clone(), b.clone()]);
        let cut = log.len() - 3;
        let (some, clean) = decode_all(&log[..cut]);
        assert!(!clean);
        assert_eq!(some, vec![a.clone()]);
        let mut flipped = log.clone();
        flipped[HEADER + 5] ^= 1;
        assert_eq!(decode_all(&flipped).0.len(), 0);
        // Zeros after the last entry (a segment made ahead): a clean end;
        // a torn entry before them is still torn.
        let mut zeroed = log.clone();
        zeroed.extend(vec![0u8; 4096]);
        assert_eq!(decode_all(&zeroed), (vec![a.clone(), b.clone()], true));
        let mut torn = log[..cut].to_vec();
        torn.extend(vec![0u8; 4096]);
        assert_eq!(decode_all(&torn), (vec![a.clone()], false));
        let mut noise = log.clone();
        noise.extend([0, 0, 7, 0]);
        assert!(!decode_all(&noise).1);
    }
}
