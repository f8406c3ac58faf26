//! The API token: `server.token` / `OPENPROGRAM_TOKEN` when set, else the
//! one in `<state>/token` (0600), made on the first start. Clients send
//! `Authorization: Bearer <token>`; a browser's WebSocket, which cannot
//! set headers, sends `?token=<token>`. Compared in constant time.

use std::io;
use std::path::{Path, PathBuf};

use openprogram_actors::fsio;
use subtle::ConstantTimeEq;

pub const FILE: &str = "token";

/// The token in force, and where it is kept (`None`: from the config).
pub fn load_or_create(state_dir: &Path, configured: &str) -> io::Result<(String, Option<PathBuf>)> {
    if !configured.trim().is_empty() {
        return Ok((configured.trim().to_string(), None));
    }
    let path = state_dir.join(FILE);
    if let Some(t) = read(state_dir) {
        return Ok((t, Some(path)));
    }
    let token = format!(
        "{}{}",
        uuid::Uuid::new_v4().simple(),
        uuid::Uuid::new_v4().simple()
    );
    fsio::atomic_write(&path, format!("{token}\n").as_bytes())?;
    Ok((token, Some(path)))
}

/// The token stored in a state directory, if any (the CLI uses it).
pub fn read(state_dir: &Path) -> Option<String> {
    std::fs::read_to_string(state_dir.join(FILE))
        .ok()
        .map(|t| t.trim().to_string())
        .filter(|t| !t.is_empty())
}

/// Constant-time comparison (no early exit on the first differing byte).
pub fn matches(expected: &str, given: &str) -> bool {
    expected.as_bytes().ct_eq(given.as_bytes()).into()
}

/// The token a request carries: the bearer header, or for the WebSocket
/// upgrade the `token` query parameter.
pub fn presented(req: &actix_web::dev::ServiceRequest) -> Option<String> {
    let bearer = req
        .headers()
        .get(actix_web::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(|t| t.trim().to_string());
    bearer.or_else(|| {
        (req.path() == "/ws")
            .then(|| url_query_value(req.query_string(), "token"))
            .flatten()
    })
}

fn url_query_value(query: &str, key: &str) -> Option<String> {
    let pairs = actix_web::web::Query::<Vec<(String, String)>>::from_query(query).ok()?;
    pairs
        .into_inner()
        .into_iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn made_once_private_and_kept() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let (a, path) = load_or_create(dir.path(), "").unwrap();
        let path = path.unwrap();
        assert_eq!(a.len(), 64);
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let (b, _) = load_or_create(dir.path(), "").unwrap();
        assert_eq!(a, b, "the stored token is reused");
        let (c, none) = load_or_create(dir.path(), " configured ").unwrap();
        assert_eq!((c.as_str(), none), ("configured", None));
        assert!(matches(&a, &b) && !matches(&a, "") && !matches("abc", "abd"));
    }

    #[test]
    fn query_values_are_decoded() {
        assert_eq!(
            url_query_value("a=1&token=x%2By", "token").as_deref(),
            Some("x+y")
        );
        assert_eq!(url_query_value("tokens=1", "token"), None);
    }
}
