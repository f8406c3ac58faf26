//! `Limit`: the one type of every `limit` a client sends (REST query or
//! WebSocket field). It accepts 1..=MAX, is DEFAULT when absent, and
//! refuses anything else with an error naming the range (never clamps).

use serde::{Deserialize, Deserializer};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limit<const DEFAULT: usize, const MAX: usize>(usize);

impl<const DEFAULT: usize, const MAX: usize> Limit<DEFAULT, MAX> {
    /// The largest limit accepted.
    pub fn largest() -> Self {
        Limit(MAX)
    }

    pub fn get(self) -> usize {
        self.0
    }

    /// A limit set by code (checked like a client's).
    pub fn new(n: usize) -> Result<Self, String> {
        if n == 0 || n > MAX {
            return Err(format!("limit must be 1..={MAX}, not {n}"));
        }
        Ok(Limit(n))
    }
}

impl<const DEFAULT: usize, const MAX: usize> Default for Limit<DEFAULT, MAX> {
    fn default() -> Self {
        Limit(DEFAULT)
    }
}

impl<'de, const DEFAULT: usize, const MAX: usize> Deserialize<'de> for Limit<DEFAULT, MAX> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let n = usize::deserialize(d)?;
        Limit::new(n).map_err(serde::de::Error::custom)
    }
}

/// The session list: 200 rows unless asked, at most 10,000.
pub type ListLimit = Limit<200, 10_000>;
/// Commit logs (a session's turns, a project's agent commits).
pub type LogLimit = Limit<100, 10_000>;

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Deserialize)]
    struct Q {
        #[serde(default)]
        limit: LogLimit,
    }

    #[test]
    fn range_is_checked_and_absent_is_the_default() {
        let q: Q = serde_json::from_str("{}").unwrap();
        assert_eq!(q.limit.get(), 100);
        let q: Q = serde_json::from_str(r#"{"limit": 10000}"#).unwrap();
        assert_eq!(q.limit.get(), 10_000);
        for bad in ["0", "10001", "-1", "\"x\""] {
            let err = serde_json::from_str::<Q>(&format!(r#"{{"limit": {bad}}}"#));
            assert!(err.is_err(), "{bad} accepted");
        }
        let msg = serde_json::from_str::<Q>(r#"{"limit": 0}"#)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(msg.contains("limit must be 1..=10000"), "{msg}");
    }
}
