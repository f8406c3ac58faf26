//! A configured remote: where each session goes (`Layout`), how it is
//! pushed (`Mode`), and the credentials it may use.

use serde::{Deserialize, Serialize};

/// `sync`: an end of turn is acknowledged once the remote has it;
/// `async`: pushed in the background, batched across sessions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    #[default]
    Async,
    Sync,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Async => "async",
            Mode::Sync => "sync",
        }
    }
}

/// One `[[replication.remotes]]` entry.
#[derive(Clone, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct RemoteConfig {
    /// A short name (letters, digits, `-`, `_`).
    pub name: String,
    /// Where sessions go. With `{session_id}` in it: one repository per
    /// session, whose branches are the session's (`refs/heads/*`).
    /// Without: one repository for every session, each session's branches
    /// under `refs/sessions/<id>/heads/*`.
    pub url: String,
    pub mode: Mode,
    /// For http(s): the user name sent with `token` (default `git`).
    pub username: String,
    /// For http(s): a password or token. Prefer `token_env`.
    pub token: String,
    /// For http(s): the environment variable holding the password or
    /// token.
    pub token_env: String,
}

impl std::fmt::Debug for RemoteConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteConfig")
            .field("name", &self.name)
            .field("url", &redact(&self.url))
            .field("mode", &self.mode)
            .field("username", &self.username)
            .field("token", &if self.token.is_empty() { "" } else { "***" })
            .field("token_env", &self.token_env)
            .finish()
    }
}

/// How sessions are laid out on a remote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// One repository per session (`{session_id}` in the URL).
    PerSession,
    /// One repository, refs under `refs/sessions/<id>/`.
    Shared,
}

impl Layout {
    pub fn as_str(self) -> &'static str {
        match self {
            Layout::PerSession => "per_session",
            Layout::Shared => "shared",
        }
    }
}

pub const PLACEHOLDER: &str = "{session_id}";

impl RemoteConfig {
    /// What is wrong with this entry, if anything.
    pub fn check(&self) -> Result<(), String> {
        let name_ok = !self.name.is_empty()
            && self.name.len() <= 64
            && self
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        if !name_ok {
            return Err(format!(
                "replication remote name {:?}: letters, digits, '-' and '_' only",
                self.name
            ));
        }
        if self.url.trim().is_empty() {
            return Err(format!("replication remote {}: no url", self.name));
        }
        if self.url.matches(PLACEHOLDER).count() > 1 {
            return Err(format!(
                "replication remote {}: {PLACEHOLDER} at most once in the url",
                self.name
            ));
        }
        Ok(())
    }

    pub fn layout(&self) -> Layout {
        if self.url.contains(PLACEHOLDER) {
            Layout::PerSession
        } else {
            Layout::Shared
        }
    }

    /// The URL a session is pushed to.
    pub fn url_for(&self, session_id: &str) -> String {
        self.url.replace(PLACEHOLDER, session_id)
    }

    /// The remote ref of a session's local branch ref (`refs/heads/x`).
    pub fn remote_ref(&self, session_id: &str, local: &str) -> String {
        match self.layout() {
            Layout::PerSession => local.to_string(),
            Layout::Shared => {
                let branch = local.strip_prefix("refs/").unwrap_or(local);
                format!("refs/sessions/{session_id}/{branch}")
            }
        }
    }

    /// The local ref of a remote ref of `session_id`: a branch or an open
    /// state (None: not one of its refs).
    pub fn local_ref(&self, session_id: &str, remote: &str) -> Option<String> {
        let local = match self.layout() {
            Layout::PerSession => remote.to_string(),
            Layout::Shared => {
                let rest = remote.strip_prefix(&format!("refs/sessions/{session_id}/"))?;
                format!("refs/{rest}")
            }
        };
        is_session_ref(&local).then_some(local)
    }

    /// The password or token, from the config or the environment.
    pub fn secret(&self) -> Option<String> {
        if !self.token_env.is_empty() {
            if let Ok(v) = std::env::var(&self.token_env) {
                if !v.is_empty() {
                    return Some(v);
                }
            }
        }
        (!self.token.is_empty()).then(|| self.token.clone())
    }
}

/// Split a shared-layout ref into (session id, local ref).
pub fn split_shared_ref(name: &str) -> Option<(&str, String)> {
    let rest = name.strip_prefix("refs/sessions/")?;
    let (id, branch) = rest.split_once('/')?;
    let local = format!("refs/{branch}");
    is_session_ref(&local).then_some((id, local))
}

/// A session's ref as replication carries it: a branch, or the open
/// state of one (`super::open`).
pub fn is_session_ref(local: &str) -> bool {
    local.starts_with("refs/heads/") || local.starts_with(super::open::PREFIX)
}

/// A URL as it may be shown or logged: any `user:password@` is cut to
/// `user:***@`.
pub fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let (authority, path) = match rest.find('/') {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    match authority.rsplit_once('@') {
        Some((user, host)) => {
            let user = user.split(':').next().unwrap_or("");
            format!("{scheme}://{user}:***@{host}{path}")
        }
        None => url.to_string(),
    }
}

/// `text` with every URL in it redacted (libgit2's messages may quote one).
pub fn redact_in(text: &str) -> String {
    text.split(' ')
        .map(|w| {
            if w.contains("://") {
                redact(w)
            } else {
                w.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn remote(url: &str) -> RemoteConfig {
        RemoteConfig {
            name: "r".into(),
            url: url.into(),
            ..RemoteConfig::default()
        }
    }

    #[test]
    fn refs_map_both_ways_in_both_layouts() {
        let shared = remote("git://h/memory.git");
        assert_eq!(shared.layout(), Layout::Shared);
        let r = shared.remote_ref("abc", "refs/heads/retry-1");
        assert_eq!(r, "refs/sessions/abc/heads/retry-1");
        assert_eq!(shared.local_ref("abc", &r).unwrap(), "refs/heads/retry-1");
        assert_eq!(shared.local_ref("abd", &r), None);
        assert_eq!(
            split_shared_ref(&r),
            Some(("abc", "refs/heads/retry-1".into()))
        );
        let per = remote("https://h/m/{session_id}.git");
        assert_eq!(per.layout(), Layout::PerSession);
        assert_eq!(per.url_for("abc"), "https://h/m/abc.git");
        assert_eq!(per.remote_ref("abc", "refs/heads/main"), "refs/heads/main");
        assert!(remote("x/{session_id}/{session_id}").check().is_err());
        assert!(RemoteConfig::default().check().is_err());
    }

    #[test]
    fn secrets_never_show_in_a_url() {
        assert_eq!(
            redact("https://ada:s3cret@host/x.git"),
            "https://ada:***@host/x.git"
        );
        assert_eq!(redact("git://host/x.git"), "git://host/x.git");
        assert_eq!(
            redact_in("failed to reach http://a:b@h/x: refused"),
            "failed to reach http://a:***@h/x: refused"
        );
        let mut r = remote("https://ada:s3cret@host/x.git");
        r.token = "tok".into();
        let shown = format!("{r:?}");
        assert!(
            !shown.contains("s3cret") && !shown.contains("tok\""),
            "{shown}"
        );
    }
}
