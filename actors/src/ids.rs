//! Validation of client-supplied identifiers (session ids, node ids).
//! Every id ends up in a path, so an invalid one must never reach the disk.

/// Longest accepted id, in bytes (UTF-8). A node file is named
/// `NNNNNN-r-<id>.json`, so 200 bytes keep every file name well inside the
/// 255 bytes a file system allows.
pub const MAX_ID_BYTES: usize = 200;

/// Names the store uses for itself beside session directories (and in the
/// state directory); no id may take one over.
pub const RESERVED: [&str; 7] = [
    "index.json",
    "locations.json",
    "projects",
    "search",
    "token",
    "server.json",
    "server.lock",
];

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IdError {
    #[error("{0} must not be empty")]
    Empty(&'static str),
    #[error("{0} must not be '.' or '..' or start with '.'")]
    Dot(&'static str),
    #[error("{0} must not contain path separators")]
    Separator(&'static str),
    #[error("{0} must not contain control characters or whitespace")]
    Control(&'static str),
    #[error("{0} must be at most 200 bytes (UTF-8)")]
    TooLong(&'static str),
    #[error("{0} '{1}' is a name the store reserves for itself")]
    Reserved(&'static str, String),
    #[error("{0} is not valid UTF-8 (it holds a replacement character)")]
    Encoding(&'static str),
    #[error("{0} must not contain invisible formatting characters (bidirectional overrides, zero-width characters)")]
    Invisible(&'static str),
    #[error("{0} must be in Unicode normalization form C (NFC): the same characters composed, as most keyboards type them")]
    NotNfc(&'static str),
}

/// Unicode format characters (general category Cf): bidirectional
/// controls and overrides, zero-width spaces and joiners, the byte-order
/// mark, invisible operators, tags. Two ids that differ only by them look
/// the same.
fn is_invisible(c: char) -> bool {
    matches!(c as u32,
        0x00AD | 0x0600..=0x0605 | 0x061C | 0x06DD | 0x070F | 0x0890..=0x0891 | 0x08E2
        | 0x180E | 0x200B..=0x200F | 0x202A..=0x202E | 0x2060..=0x2064 | 0x2066..=0x206F
        | 0xFEFF | 0xFFF9..=0xFFFB | 0x110BD | 0x110CD | 0x13430..=0x1343F
        | 0x1BCA0..=0x1BCA3 | 0x1D173..=0x1D17A | 0xE0001 | 0xE0020..=0xE007F)
}

/// Check an id. `what` names it in the error ("session id", "node id").
/// Ids starting with '.' are reserved for the store's temporary entries.
pub fn validate(what: &'static str, id: &str) -> Result<(), IdError> {
    if id.is_empty() {
        return Err(IdError::Empty(what));
    }
    if id.starts_with('.') {
        return Err(IdError::Dot(what));
    }
    if id.contains('/') || id.contains('\\') {
        return Err(IdError::Separator(what));
    }
    if id.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return Err(IdError::Control(what));
    }
    if id.len() > MAX_ID_BYTES {
        return Err(IdError::TooLong(what));
    }
    // What a lossy decoding of invalid UTF-8 (e.g. `%FF` in a URL) leaves.
    if id.contains('\u{FFFD}') {
        return Err(IdError::Encoding(what));
    }
    if id.chars().any(is_invisible) {
        return Err(IdError::Invisible(what));
    }
    // "é" typed as one character or as "e" and an accent are two ids on
    // Linux but one folder on macOS: only the composed form is taken.
    if !unicode_normalization::is_nfc(id) {
        return Err(IdError::NotNfc(what));
    }
    if RESERVED.iter().any(|r| r.eq_ignore_ascii_case(id)) {
        return Err(IdError::Reserved(what, id.to_string()));
    }
    Ok(())
}

/// The session id of a channel conversation (channel + account + peer):
/// the same key always gives the same id. `<channel>-<16 hex of SHA-1>`.
pub fn conversation_id(channel: &str, account_id: &str, peer_id: &str) -> String {
    use sha1::{Digest, Sha1};
    let mut h = Sha1::new();
    for part in [channel, account_id, peer_id] {
        h.update(part.as_bytes());
        h.update([0u8]);
    }
    let digest = h.finalize();
    let hex: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
    let prefix: String = channel
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
        .take(32)
        .collect();
    format!("{prefix}-{hex}")
}

/// A fresh server-made id.
pub fn new_id() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_hostile_ids() {
        for bad in [
            "", ".", "..", ".hidden", "a/b", "a\\b", "a\nb", "a b", "a\u{0}b",
        ] {
            assert!(validate("id", bad).is_err(), "{bad:?} accepted");
        }
        assert!(validate("id", &"x".repeat(201)).is_err());
        assert!(validate("id", &"x".repeat(200)).is_ok());
        // Lengths count bytes: 67 three-byte characters are 201 bytes.
        assert!(validate("id", &"中".repeat(67)).is_err());
        assert!(validate("id", &"中".repeat(66)).is_ok());
        assert!(validate("id", "abc-123_X.y").is_ok());
        for reserved in [
            "index.json",
            "locations.json",
            "projects",
            "search",
            "token",
            "INDEX.JSON",
        ] {
            assert!(
                matches!(validate("session id", reserved), Err(IdError::Reserved(..))),
                "{reserved} accepted"
            );
        }
        // Look-alikes: invisible characters and decomposed forms.
        for bad in [
            "ab\u{202E}cd",
            "a\u{200B}b",
            "\u{FEFF}abc",
            "a\u{2066}b",
            "cafe\u{301}",
        ] {
            assert!(validate("id", bad).is_err(), "{bad:?} accepted");
        }
        assert!(validate("id", "caf\u{e9}").is_ok());
        // The longest node file name still fits a file system's 255 bytes.
        let name = format!("999999-u-{}.json", "é".repeat(100));
        assert!(validate("node id", &"é".repeat(100)).is_ok() && name.len() <= 255);
    }
}
