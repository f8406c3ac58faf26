//! The rules a secret is found by: gitleaks' default set (vendored as
//! `gitleaks.toml`, MIT, see `gitleaks.LICENSE`), a few of our own for
//! what it has no rule for, and the operator's. Each rule is a regex with
//! the keywords one of which the text must hold before the regex runs, an
//! entropy floor for the secret, and allow-lists; gitleaks' file is read as
//! gitleaks documents it (the secret is the rule's `secretGroup`, else the
//! first group that matched, else the whole match; allow-lists test the
//! secret, the match or the line; stopwords are looked for in the secret).

use std::collections::HashMap;

use aho_corasick::AhoCorasick;
use regex::Regex;
use serde::{Deserialize, Serialize};

use super::RedactError;

/// gitleaks' rules, as released (see `docs/SECURITY.md` for refreshing).
const GITLEAKS: &str = include_str!("gitleaks.toml");
/// The gitleaks commit the file comes from.
pub const GITLEAKS_VERSION: &str = "v8.30.0-27-gb58d3f10";

/// Rules of our own, in gitleaks' format: what its set has no rule for.
const OURS: &str = r#"
[[rules]]
id = "url-credentials"
description = "A password in a URL's user information (scheme://user:password@host)."
regex = '''(?i)\b[a-z][a-z0-9+.-]{1,20}://[^\s:/@'"<>]{1,64}:([^\s/@'"<>]{3,128})@[\w.-]+'''
keywords = ["://"]
[[rules.allowlists]]
regexes = ['''^(?:\*+|x+|\.+|password|passw(?:or)?d|pass|secret|changeme|\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|<[^>]*>|\{\{[^}]*\}\}|%[A-Za-z_]+%)$''']

[[rules]]
id = "connection-string-password"
description = "A password in an ADO.NET or ODBC connection string (…;Password=…;)."
regex = '''(?i)(?:server|data source|host|address|user id|uid|database|initial catalog)\s*=[^;\n]{0,200};(?:[^;\n]{0,200};){0,8}?\s*(?:password|pwd)\s*=\s*([^;'"\s]{4,128})'''
keywords = ["password", "pwd"]
[[rules.allowlists]]
regexes = ['''^(?:\*+|x+|password|\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|<[^>]*>|\{\{[^}]*\}\}|%[A-Za-z_]+%)$''']
"#;

/// gitleaks' configuration file, as far as text (not paths) goes.
#[derive(Debug, Default, Deserialize)]
pub struct RuleFile {
    #[serde(default)]
    pub allowlist: Option<AllowSpec>,
    #[serde(default)]
    pub rules: Vec<RuleSpec>,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RuleSpec {
    pub id: String,
    #[serde(default)]
    pub regex: Option<String>,
    #[serde(default)]
    pub secret_group: Option<usize>,
    #[serde(default)]
    pub entropy: Option<f64>,
    #[serde(default)]
    pub keywords: Vec<String>,
    #[serde(default)]
    pub allowlists: Vec<AllowSpec>,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AllowSpec {
    #[serde(default)]
    pub regexes: Vec<String>,
    #[serde(default)]
    pub stopwords: Vec<String>,
    /// `secret` (default), `match` or `line`.
    #[serde(default)]
    pub regex_target: Option<String>,
    /// `OR` (default) or `AND`.
    #[serde(default)]
    pub condition: Option<String>,
    /// Paths: text has none, so an `AND` list naming paths never allows.
    #[serde(default)]
    pub paths: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Target {
    Secret,
    Match,
    Line,
}

#[derive(Debug)]
struct Allow {
    regexes: Vec<Regex>,
    stopwords: Vec<String>,
    target: Target,
    all: bool,
    has_paths: bool,
}

#[derive(Debug)]
struct Rule {
    id: String,
    regex: Regex,
    secret_group: Option<usize>,
    entropy: Option<f64>,
    allows: Vec<Allow>,
}

/// A secret found in a text: the rule's id and the byte range of the
/// secret itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub kind: String,
    pub start: usize,
    pub end: usize,
}

/// Every rule, compiled, with one keyword automaton that picks the rules
/// worth running on a text.
#[derive(Debug)]
pub struct RuleSet {
    rules: Vec<Rule>,
    /// Rules that run on every text (no keywords).
    always: Vec<usize>,
    keywords: AhoCorasick,
    /// Keyword pattern → the rules it wakes.
    by_keyword: Vec<Vec<usize>>,
    global: Vec<Allow>,
}

impl RuleSet {
    /// gitleaks' rules, ours, then `extra` (the operator's), with the global
    /// allow-list and `allow` (regexes on the secret) on top.
    pub fn build(extra: &[RuleSpec], allow: &[String]) -> Result<RuleSet, RedactError> {
        let gitleaks: RuleFile =
            toml::from_str(GITLEAKS).map_err(|e| RedactError::Rules(e.to_string()))?;
        let ours: RuleFile = toml::from_str(OURS).map_err(|e| RedactError::Rules(e.to_string()))?;
        let mut global = Vec::new();
        if let Some(a) = &gitleaks.allowlist {
            global.push(compile_allow(a, "the global allow-list")?);
        }
        if !allow.is_empty() {
            let spec = AllowSpec {
                regexes: allow.to_vec(),
                ..AllowSpec::default()
            };
            global.push(compile_allow(&spec, "redaction.allow")?);
        }
        let mut rules = Vec::new();
        let mut always = Vec::new();
        let mut words: Vec<String> = Vec::new();
        let mut by_word: HashMap<String, usize> = HashMap::new();
        let mut by_keyword: Vec<Vec<usize>> = Vec::new();
        let specs = gitleaks.rules.iter().chain(&ours.rules).chain(extra);
        for spec in specs {
            // Path-only rules find files, not text.
            let Some(pattern) = &spec.regex else {
                continue;
            };
            let regex = Regex::new(&from_go(pattern))
                .map_err(|e| RedactError::Rules(format!("rule {}: {e}", spec.id)))?;
            let allows = spec
                .allowlists
                .iter()
                .map(|a| compile_allow(a, &spec.id))
                .collect::<Result<Vec<_>, _>>()?;
            let index = rules.len();
            rules.push(Rule {
                id: spec.id.clone(),
                regex,
                secret_group: spec.secret_group.filter(|g| *g > 0),
                entropy: spec.entropy.filter(|e| *e > 0.0),
                allows,
            });
            if spec.keywords.is_empty() {
                always.push(index);
            }
            for k in &spec.keywords {
                let k = k.to_lowercase();
                let slot = *by_word.entry(k.clone()).or_insert_with(|| {
                    words.push(k);
                    by_keyword.push(Vec::new());
                    by_keyword.len() - 1
                });
                by_keyword[slot].push(index);
            }
        }
        let keywords = AhoCorasick::builder()
            .ascii_case_insensitive(true)
            .build(&words)
            .map_err(|e| RedactError::Rules(e.to_string()))?;
        Ok(RuleSet {
            rules,
            always,
            keywords,
            by_keyword,
            global,
        })
    }

    pub fn len(&self) -> usize {
        self.rules.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// The secrets in `text`, in order, overlaps merged into the first.
    pub fn find(&self, text: &str) -> Vec<Found> {
        let mut wanted = vec![false; self.rules.len()];
        for i in &self.always {
            wanted[*i] = true;
        }
        for m in self.keywords.find_overlapping_iter(text) {
            for i in &self.by_keyword[m.pattern().as_usize()] {
                wanted[*i] = true;
            }
        }
        let mut found = Vec::new();
        for (rule, _) in self.rules.iter().zip(&wanted).filter(|(_, w)| **w) {
            for caps in rule.regex.captures_iter(text) {
                let Some(whole) = caps.get(0) else {
                    continue;
                };
                let secret = match rule.secret_group {
                    Some(g) => caps.get(g),
                    None => caps.iter().skip(1).flatten().find(|m| !m.is_empty()),
                }
                .unwrap_or(whole);
                if secret.is_empty() {
                    continue;
                }
                let s = secret.as_str();
                if rule.entropy.is_some_and(|floor| entropy(s) < floor) {
                    continue;
                }
                // Generic rules want a digit too (words and identifiers
                // are not keys).
                if rule.id.starts_with("generic") && !s.bytes().any(|b| b.is_ascii_digit()) {
                    continue;
                }
                let line = line_of(text, whole.start(), whole.end());
                let allowed = |a: &Allow| a.allows(s, whole.as_str(), line);
                if self.global.iter().any(allowed) || rule.allows.iter().any(allowed) {
                    continue;
                }
                found.push(Found {
                    kind: rule.id.clone(),
                    start: secret.start(),
                    end: secret.end(),
                });
            }
        }
        found.sort_by_key(|f| (f.start, std::cmp::Reverse(f.end)));
        let mut merged: Vec<Found> = Vec::with_capacity(found.len());
        for f in found {
            match merged.last_mut() {
                Some(last) if f.start < last.end => last.end = last.end.max(f.end),
                _ => merged.push(f),
            }
        }
        merged
    }
}

impl Allow {
    fn allows(&self, secret: &str, whole: &str, line: &str) -> bool {
        let target = match self.target {
            Target::Secret => secret,
            Target::Match => whole,
            Target::Line => line,
        };
        let by_regex =
            (!self.regexes.is_empty()).then(|| self.regexes.iter().any(|r| r.is_match(target)));
        let by_word = (!self.stopwords.is_empty()).then(|| {
            let lower = secret.to_lowercase();
            self.stopwords.iter().any(|w| lower.contains(w.as_str()))
        });
        let tests = [by_regex, by_word];
        if self.all {
            !self.has_paths
                && tests.iter().flatten().all(|t| *t)
                && tests.iter().any(Option::is_some)
        } else {
            tests.iter().flatten().any(|t| *t)
        }
    }
}

fn compile_allow(spec: &AllowSpec, owner: &str) -> Result<Allow, RedactError> {
    let regexes = spec
        .regexes
        .iter()
        .map(|r| {
            Regex::new(&from_go(r))
                .map_err(|e| RedactError::Rules(format!("{owner}: allow-list: {e}")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let target = match spec.regex_target.as_deref() {
        None | Some("secret") => Target::Secret,
        Some("match") => Target::Match,
        Some("line") => Target::Line,
        Some(other) => {
            return Err(RedactError::Rules(format!(
                "{owner}: allow-list target {other:?}: secret, match or line"
            )))
        }
    };
    Ok(Allow {
        regexes,
        stopwords: spec.stopwords.iter().map(|w| w.to_lowercase()).collect(),
        target,
        all: spec
            .condition
            .as_deref()
            .is_some_and(|c| c.eq_ignore_ascii_case("and")),
        has_paths: !spec.paths.is_empty(),
    })
}

/// A regex in Go's syntax (RE2, gitleaks' own) as the `regex` crate reads
/// it: a `{` that starts no repetition is a literal in Go and an error
/// here, so it is escaped; Go's `\w`, `\d`, `\s` are ASCII classes.
pub fn from_go(pattern: &str) -> String {
    let chars: Vec<char> = pattern.chars().collect();
    let mut out = String::with_capacity(pattern.len() + 8);
    let mut in_class = false;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '\\' => {
                // Go's `\w`, `\d` and `\s` are ASCII; the regex crate's
                // Unicode classes would also make the large rules too big.
                let ascii = match chars.get(i + 1) {
                    Some('w') => Some("0-9A-Za-z_"),
                    Some('d') => Some("0-9"),
                    Some('s') => Some("\\t\\n\\x0B\\x0C\\r "),
                    _ => None,
                };
                match (ascii, in_class) {
                    (Some(set), true) => out.push_str(set),
                    (Some(set), false) => {
                        out.push('[');
                        out.push_str(set);
                        out.push(']');
                    }
                    (None, _) => {
                        out.push(c);
                        if let Some(n) = chars.get(i + 1) {
                            out.push(*n);
                        }
                    }
                }
                i += 2;
                continue;
            }
            '[' if !in_class => in_class = true,
            ']' if in_class => in_class = false,
            '{' if !in_class && !is_repetition(&chars[i + 1..]) => {
                out.push_str("\\{");
                i += 1;
                continue;
            }
            _ => {}
        }
        out.push(c);
        i += 1;
    }
    out
}

/// Whether `rest` (after a `{`) is `n}`, `n,}` or `n,m}`.
fn is_repetition(rest: &[char]) -> bool {
    let digits = rest.iter().take_while(|c| c.is_ascii_digit()).count();
    if digits == 0 {
        return false;
    }
    match rest.get(digits) {
        Some('}') => true,
        Some(',') => {
            let more = rest[digits + 1..]
                .iter()
                .take_while(|c| c.is_ascii_digit())
                .count();
            rest.get(digits + 1 + more) == Some(&'}')
        }
        _ => false,
    }
}

/// The line of `text` holding `start..end`.
fn line_of(text: &str, start: usize, end: usize) -> &str {
    let before = text.get(..start).unwrap_or("");
    let after = text.get(end..).unwrap_or("");
    let from = before.rfind('\n').map_or(0, |i| i + 1);
    let to = after.find('\n').map_or(text.len(), |i| end + i);
    text.get(from..to).unwrap_or("")
}

/// Shannon entropy of `s` in bits per character.
pub fn entropy(s: &str) -> f64 {
    let mut counts: HashMap<char, usize> = HashMap::new();
    let mut n = 0usize;
    for c in s.chars() {
        *counts.entry(c).or_default() += 1;
        n += 1;
    }
    if n == 0 {
        return 0.0;
    }
    let n = n as f64;
    counts
        .values()
        .map(|c| {
            let p = *c as f64 / n;
            -p * p.log2()
        })
        .sum()
}
