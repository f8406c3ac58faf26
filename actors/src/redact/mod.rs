//! Secrets kept out of the store: every text a session stores (a node's
//! content, output and metadata, a queued message, a title) passes through
//! the `Redactor` before the write-ahead log sees it, so a secret never
//! reaches the log, a history file, a git object, the search index, the
//! change feed, `meta.json`, a replica or a log line.
//!
//! A secret becomes a placeholder naming its kind (`[REDACTED:aws-access-
//! token]`), the rest of the text untouched; the node's metadata lists
//! what was redacted under `redactions` (kind, field, the placeholder's
//! byte range in the stored text, and a keyed hash so the same secret is
//! recognised later; never the secret). The mode is `redact` (default),
//! `refuse` (the write is refused, naming the kind and the field) or `off`,
//! globally and per project. Redaction is best effort: it finds what its
//! rules describe (`rules`).

#[cfg(test)]
mod corpus_tests;
pub mod fake;
pub mod rules;
#[cfg(test)]
mod tests;

use std::io;
use std::path::Path;

use hmac::{Hmac, KeyInit, Mac};
use regex::Regex;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::Sha256;

pub use rules::{Found, RuleSet, RuleSpec};

/// The metadata key of a node's redactions.
pub const METADATA_KEY: &str = "redactions";
/// How every placeholder starts: `[REDACTED:<kind>]`.
pub const PLACEHOLDER_START: &str = "[REDACTED:";
/// The key of the keyed hashes, in the state directory (0600).
pub const KEY_FILE: &str = "redaction.key";

#[derive(Debug, thiserror::Error)]
pub enum RedactError {
    #[error("redaction rules: {0}")]
    Rules(String),
    #[error("the redaction key: {0}")]
    Key(#[from] io::Error),
    /// `refuse` mode: the write holds a secret.
    #[error("the text holds a secret ({kind}) in {field}; this project refuses secrets: remove it and send again")]
    Refused { kind: String, field: String },
}

/// What is done with a secret.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Replaced by a placeholder.
    #[default]
    Redact,
    /// The write is refused.
    Refuse,
    /// Stored as sent.
    Off,
}

/// `[redaction]` in the configuration.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RedactionConfig {
    #[serde(default)]
    pub mode: Mode,
    /// Regexes: a secret any of them matches is left as it is.
    #[serde(default)]
    pub allow: Vec<String>,
    /// Rules of the operator's, in gitleaks' format (`id`, `regex`,
    /// `keywords`, `entropy`, `secretGroup`, `allowlists`).
    #[serde(default)]
    pub rules: Vec<RuleSpec>,
    /// Per project (its id or its folder): a mode and allow-list of its own.
    #[serde(default)]
    pub projects: Vec<ProjectRedaction>,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ProjectRedaction {
    /// The project's id or folder.
    pub project: String,
    #[serde(default)]
    pub mode: Option<Mode>,
    #[serde(default)]
    pub allow: Vec<String>,
}

/// One secret taken out of a stored text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Redaction {
    /// The rule that found it (`aws-access-token`, `url-credentials`…).
    pub kind: String,
    /// Where: a JSON pointer into the node (`/content`, `/output/stdout`),
    /// or `title`.
    pub field: String,
    /// The placeholder's byte range in the stored text.
    pub start: usize,
    pub end: usize,
    /// The secret's keyed hash (HMAC-SHA-256 with this state directory's
    /// key, 16 bytes in hex): equal secrets have equal hashes here.
    pub hash: String,
}

/// The redaction a write gets: the mode and the project's own allow-list.
pub struct Policy<'a> {
    pub mode: Mode,
    allow: &'a [Regex],
}

struct ProjectRule {
    project: String,
    mode: Option<Mode>,
    allow: Vec<Regex>,
}

/// The rules, the mode and the key (one per engine, shared).
pub struct Redactor {
    rules: RuleSet,
    mode: Mode,
    projects: Vec<ProjectRule>,
    key: Vec<u8>,
}

impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Redactor")
            .field("rules", &self.rules.len())
            .field("mode", &self.mode)
            .finish()
    }
}

impl Redactor {
    /// The redactor of `config`, its hash key read from (or made in)
    /// `state_dir`.
    pub fn new(config: &RedactionConfig, state_dir: &Path) -> Result<Redactor, RedactError> {
        let key = load_key(state_dir)?;
        Redactor::with_key(config, key)
    }

    pub fn with_key(config: &RedactionConfig, key: Vec<u8>) -> Result<Redactor, RedactError> {
        let rules = RuleSet::build(&config.rules, &config.allow)?;
        let projects = config
            .projects
            .iter()
            .map(|p| {
                let allow = p
                    .allow
                    .iter()
                    .map(|r| {
                        Regex::new(r).map_err(|e| {
                            RedactError::Rules(format!("project {}: allow: {e}", p.project))
                        })
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(ProjectRule {
                    project: p.project.clone(),
                    mode: p.mode,
                    allow,
                })
            })
            .collect::<Result<Vec<_>, RedactError>>()?;
        Ok(Redactor {
            rules,
            mode: config.mode,
            projects,
            key,
        })
    }

    /// The policy for a session bound to `project_id` (its folder `home`).
    pub fn policy(&self, project_id: &str, home: Option<&Path>) -> Policy<'_> {
        let own = self
            .projects
            .iter()
            .find(|p| p.project == project_id || home.is_some_and(|h| Path::new(&p.project) == h));
        Policy {
            mode: own.and_then(|p| p.mode).unwrap_or(self.mode),
            allow: own.map_or(&[], |p| p.allow.as_slice()),
        }
    }

    /// Mode `redact` with no project allow-list: a scan's.
    pub fn scan_policy(&self) -> Policy<'_> {
        Policy {
            mode: Mode::Redact,
            allow: &[],
        }
    }

    /// The secrets in `text` by the global rules (for scans).
    pub fn scan(&self, text: &str) -> Vec<Found> {
        self.rules.find(text)
    }

    /// The keyed hash of a secret.
    pub fn hash(&self, secret: &str) -> String {
        let Ok(mut mac) = <Hmac<Sha256> as KeyInit>::new_from_slice(&self.key) else {
            return String::new();
        };
        mac.update(secret.as_bytes());
        let bytes = mac.finalize().into_bytes();
        bytes[..16].iter().map(|b| format!("{b:02x}")).collect()
    }

    /// `text` with its secrets replaced (None: nothing found, or mode
    /// `off`); what was replaced is added to `out` under `field`.
    pub fn redact_text(
        &self,
        policy: &Policy<'_>,
        text: &str,
        field: &str,
        out: &mut Vec<Redaction>,
    ) -> Result<Option<String>, RedactError> {
        if policy.mode == Mode::Off {
            return Ok(None);
        }
        let found: Vec<Found> = self
            .rules
            .find(text)
            .into_iter()
            .filter(|f| {
                let found = text.get(f.start..f.end).unwrap_or("");
                // A placeholder is never a secret (a URL's password
                // replaced once still looks like one to the rule).
                !found.contains(PLACEHOLDER_START)
                    && !policy.allow.iter().any(|r| r.is_match(found))
            })
            .collect();
        if found.is_empty() {
            return Ok(None);
        }
        if policy.mode == Mode::Refuse {
            return Err(RedactError::Refused {
                kind: found[0].kind.clone(),
                field: field.to_string(),
            });
        }
        let mut stored = String::with_capacity(text.len());
        let mut at = 0;
        for f in found {
            stored.push_str(text.get(at..f.start).unwrap_or(""));
            let placeholder = format!("{PLACEHOLDER_START}{}]", f.kind);
            out.push(Redaction {
                hash: self.hash(text.get(f.start..f.end).unwrap_or("")),
                kind: f.kind,
                field: field.to_string(),
                start: stored.len(),
                end: stored.len() + placeholder.len(),
            });
            stored.push_str(&placeholder);
            at = f.end;
        }
        stored.push_str(text.get(at..).unwrap_or(""));
        Ok(Some(stored))
    }

    /// Every string in `value` (keys left as they are) redacted in place,
    /// `field` the JSON pointer of `value`.
    pub fn redact_value(
        &self,
        policy: &Policy<'_>,
        value: &mut Value,
        field: &str,
        out: &mut Vec<Redaction>,
    ) -> Result<(), RedactError> {
        if policy.mode == Mode::Off {
            return Ok(());
        }
        match value {
            Value::String(s) => {
                if let Some(stored) = self.redact_text(policy, s, field, out)? {
                    *s = stored;
                }
            }
            Value::Array(items) => {
                for (i, v) in items.iter_mut().enumerate() {
                    self.redact_value(policy, v, &format!("{field}/{i}"), out)?;
                }
            }
            Value::Object(map) => {
                for (k, v) in map.iter_mut() {
                    let key = k.replace('~', "~0").replace('/', "~1");
                    self.redact_value(policy, v, &format!("{field}/{key}"), out)?;
                }
            }
            _ => {}
        }
        Ok(())
    }
}

/// The state directory's hash key, made (32 random bytes, 0600) when
/// missing.
fn load_key(state_dir: &Path) -> Result<Vec<u8>, RedactError> {
    let path = state_dir.join(KEY_FILE);
    match std::fs::read_to_string(&path) {
        Ok(text) => {
            let text = text.trim();
            let bytes: Option<Vec<u8>> = (0..text.len())
                .step_by(2)
                .map(|i| {
                    text.get(i..i + 2)
                        .and_then(|h| u8::from_str_radix(h, 16).ok())
                })
                .collect();
            match bytes {
                Some(b) if b.len() >= 16 => Ok(b),
                _ => Err(RedactError::Key(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("{} is not a hex key", path.display()),
                ))),
            }
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            let mut key = Vec::with_capacity(32);
            key.extend_from_slice(uuid::Uuid::new_v4().as_bytes());
            key.extend_from_slice(uuid::Uuid::new_v4().as_bytes());
            let hex: String = key.iter().map(|b| format!("{b:02x}")).collect();
            crate::fsio::create_private_dir_all(state_dir)?;
            crate::fsio::atomic_write(&path, hex.as_bytes())?;
            Ok(key)
        }
        Err(e) => Err(e.into()),
    }
}
