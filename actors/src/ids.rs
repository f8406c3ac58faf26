//! Validation of client-supplied identifiers (session ids, node ids).
//! Every id ends up in a path, so an invalid one must never reach the disk.

/// Longest accepted id, in characters.
pub const MAX_ID_LEN: usize = 128;

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
    #[error("{0} must be at most 128 characters")]
    TooLong(&'static str),
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
    if id.chars().count() > MAX_ID_LEN {
        return Err(IdError::TooLong(what));
    }
    Ok(())
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
        assert!(validate("id", &"x".repeat(129)).is_err());
        assert!(validate("id", &"x".repeat(128)).is_ok());
        assert!(validate("id", "abc-123_X.y").is_ok());
    }
}
