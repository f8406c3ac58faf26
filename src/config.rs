//! Configuration: `config/default.toml` (compiled in) overlaid by an
//! optional `--config` file, then environment variables, then flags.

use std::path::{Path, PathBuf};

use serde::Deserialize;

const DEFAULT_TOML: &str = include_str!("../config/default.toml");

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("invalid config {origin}: {source}")]
    Parse {
        origin: String,
        source: toml::de::Error,
    },
    #[error("invalid value for {key}: {value:?}")]
    Env { key: String, value: String },
    #[error("no home directory: set OPENPROGRAM_STATE_DIR or --state-dir")]
    NoHome,
    #[error("invalid config: {0}")]
    Invalid(String),
}

#[derive(Debug, Clone, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    pub server: ServerConfig,
    pub store: StoreConfig,
    pub registry: RegistryConfig,
    pub maintenance: MaintenanceConfig,
    pub llm: LlmSection,
    pub titles: TitlesConfig,
    pub projects: ProjectsConfig,
    pub logging: LoggingConfig,
    pub search: SearchConfig,
    pub import: ImportConfig,
    pub mcp: McpConfig,
    pub runner: RunnerSection,
    pub replication: ReplicationSection,
    pub redaction: openprogram_actors::redact::RedactionConfig,
    pub cluster: ClusterSection,
}

/// `[cluster]`: several nodes sharing the sessions (docs/CLUSTER.md).
#[derive(Debug, Clone, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct ClusterSection {
    pub postgres_url: String,
    pub node_id: String,
    pub advertise: String,
    pub lease_ms: u64,
}

impl ClusterSection {
    /// Whether this server is a node of a cluster.
    pub fn enabled(&self) -> bool {
        !self.postgres_url.trim().is_empty()
    }
}

/// `[replication]`: git remotes every session is pushed to.
#[derive(Debug, Clone, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct ReplicationSection {
    pub delete_remote: bool,
    pub remotes: Vec<openprogram_actors::replication::RemoteConfig>,
}

#[derive(Debug, Clone, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct RunnerSection {
    /// `"llm"`: `serve` also starts the built-in runner (answers the
    /// composer with `llm.*`); empty: none.
    pub builtin: String,
}

#[derive(Debug, Clone, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct McpConfig {
    /// The MCP server's write tools (a note, a fork, title/pin/archive):
    /// off unless turned on.
    pub allow_writes: bool,
}

#[derive(Debug, Clone, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct ImportConfig {
    /// Tools whose folders are followed while the server runs (the live
    /// mirror): `claude-code`.
    pub watch: Vec<String>,
    /// Seconds a file must stay untouched for its last turn to count as
    /// over without the tool's own end-of-turn mark.
    pub settle_s: u64,
}

#[derive(Debug, Clone, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct SearchConfig {
    /// The full-text index under `<state>/search/`, fed after each turn.
    pub enabled: bool,
}

#[derive(Debug, Clone, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct LoggingConfig {
    /// `text` (colour only on a terminal) or `json` (one object per line).
    pub format: crate::telemetry::LogFormat,
}

#[derive(Debug, Clone, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct ProjectsConfig {
    /// Folders accepted as projects and working directories whatever the
    /// system-folder rules.
    pub allowed_roots: Vec<PathBuf>,
}

#[derive(Debug, Clone, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct LlmSection {
    pub base_url: String,
    pub model: String,
    pub api_key: String,
    pub timeout: u64,
    pub concurrency: usize,
}

#[derive(Debug, Clone, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct TitlesConfig {
    pub retitle_at: Vec<u32>,
}

#[derive(Debug, Clone, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct RegistryConfig {
    pub index_debounce_ms: u64,
}

#[derive(Debug, Clone, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct MaintenanceConfig {
    pub empty_shell_max_age_s: f64,
    pub archive_ttl_days: f64,
    pub max_sessions: usize,
    /// Seconds a pack merged into another stays beside it (readers that
    /// listed it, such as a `git fsck`, can still open it).
    pub retired_pack_grace_s: u64,
}

#[derive(Debug, Clone, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct ServerConfig {
    pub bind: String,
    pub body_limit: usize,
    pub shutdown_timeout: u64,
    pub workers: usize,
    /// Host names (besides loopback and the bind address) the server
    /// answers to; "*" accepts any.
    pub allowed_hosts: Vec<String>,
    /// Origins (`scheme://host[:port]`) whose pages may call the server.
    pub allowed_origins: Vec<String>,
    /// The API token; empty: the one in `<state>/token` (made on first start).
    pub token: String,
    /// Demand the token on a loopback bind too.
    pub require_token: bool,
    /// Seconds a client may leave a request body (or a WebSocket frame)
    /// half sent before it is cut off.
    pub request_timeout: u64,
    /// A request still waiting after this many milliseconds is logged
    /// with the stage it waits in.
    pub slow_request_ms: u64,
}

#[derive(Debug, Clone, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct StoreConfig {
    pub state_dir: String,
    pub session_cache_cap: usize,
    /// Largest unpacked size of an imported bundle, in bytes.
    pub import_max_unpacked: u64,
    /// Most objects an imported bundle may hold.
    pub import_max_objects: u32,
}

/// Command-line values that take precedence over everything else.
#[derive(Debug, Default, Clone)]
pub struct Overrides {
    pub config_file: Option<PathBuf>,
    pub state_dir: Option<PathBuf>,
    pub bind: Option<String>,
}

impl Config {
    pub fn load(overrides: &Overrides) -> Result<Config, ConfigError> {
        let mut value: toml::Value =
            toml::from_str(DEFAULT_TOML).map_err(|source| ConfigError::Parse {
                origin: "defaults".into(),
                source,
            })?;
        if let Some(path) = &overrides.config_file {
            let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
                path: path.clone(),
                source,
            })?;
            let user: toml::Value = toml::from_str(&text).map_err(|source| ConfigError::Parse {
                origin: path.display().to_string(),
                source,
            })?;
            merge(&mut value, user);
        }
        let mut config: Config = value.try_into().map_err(|source| ConfigError::Parse {
            origin: "merged configuration".into(),
            source,
        })?;
        config.apply_env(|k| std::env::var(k).ok())?;
        if let Some(dir) = &overrides.state_dir {
            config.store.state_dir = dir.display().to_string();
        }
        if let Some(bind) = &overrides.bind {
            config.server.bind = bind.clone();
        }
        Ok(config)
    }

    /// Overlay environment variables onto the loaded configuration: every
    /// key has one, named after it (`OPENPROGRAM_<SECTION>_<KEY>`), plus
    /// the shorter names of earlier versions (`ALIASES`).
    fn apply_env(&mut self, get: impl Fn(&str) -> Option<String>) -> Result<(), ConfigError> {
        let mut value = toml::Value::try_from(&*self).map_err(|e| ConfigError::Env {
            key: "configuration".into(),
            value: e.to_string(),
        })?;
        overlay_env(&mut value, &get)?;
        *self = value.try_into().map_err(|source| ConfigError::Parse {
            origin: "environment".into(),
            source,
        })?;
        Ok(())
    }

    /// The state directory: as configured, else `~/.openprogram`.
    pub fn state_dir(&self) -> Result<PathBuf, ConfigError> {
        state_dir_or_default(&self.store.state_dir)
    }
}

pub fn state_dir_or_default(configured: &str) -> Result<PathBuf, ConfigError> {
    if !configured.trim().is_empty() {
        return Ok(PathBuf::from(configured));
    }
    let home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .ok_or(ConfigError::NoHome)?;
    Ok(Path::new(&home).join(".openprogram"))
}

/// Earlier, shorter environment names, still read (the full name wins).
pub const ALIASES: &[(&str, &str)] = &[
    ("OPENPROGRAM_STATE_DIR", "OPENPROGRAM_STORE_STATE_DIR"),
    ("OPENPROGRAM_BIND", "OPENPROGRAM_SERVER_BIND"),
    ("OPENPROGRAM_BODY_LIMIT", "OPENPROGRAM_SERVER_BODY_LIMIT"),
    (
        "OPENPROGRAM_SHUTDOWN_TIMEOUT",
        "OPENPROGRAM_SERVER_SHUTDOWN_TIMEOUT",
    ),
    ("OPENPROGRAM_WORKERS", "OPENPROGRAM_SERVER_WORKERS"),
    ("OPENPROGRAM_TOKEN", "OPENPROGRAM_SERVER_TOKEN"),
    (
        "OPENPROGRAM_INDEX_DEBOUNCE_MS",
        "OPENPROGRAM_REGISTRY_INDEX_DEBOUNCE_MS",
    ),
    (
        "OPENPROGRAM_SESSION_CACHE_CAP",
        "OPENPROGRAM_STORE_SESSION_CACHE_CAP",
    ),
];

/// The environment variable of a key: `OPENPROGRAM_<SECTION>_<KEY>`.
pub fn env_name(section: &str, key: &str) -> String {
    format!("OPENPROGRAM_{}_{}", section, key).to_uppercase()
}

/// Every key's environment value, parsed as the key's type (lists are
/// comma-separated).
fn overlay_env(
    value: &mut toml::Value,
    get: &impl Fn(&str) -> Option<String>,
) -> Result<(), ConfigError> {
    let Some(sections) = value.as_table_mut() else {
        return Ok(());
    };
    for (section, table) in sections.iter_mut() {
        let Some(table) = table.as_table_mut() else {
            continue;
        };
        for (key, current) in table.iter_mut() {
            let name = env_name(section, key);
            let alias = ALIASES.iter().find(|(_, full)| *full == name).map(|a| a.0);
            let Some(raw) = get(&name).or_else(|| alias.and_then(get)) else {
                continue;
            };
            let bad = || ConfigError::Env {
                key: name.clone(),
                value: raw.clone(),
            };
            let t = raw.trim();
            *current = match current {
                toml::Value::String(_) => toml::Value::String(raw.clone()),
                toml::Value::Integer(_) => toml::Value::Integer(t.parse().map_err(|_| bad())?),
                toml::Value::Float(_) => toml::Value::Float(t.parse().map_err(|_| bad())?),
                toml::Value::Boolean(_) => toml::Value::Boolean(t.parse().map_err(|_| bad())?),
                toml::Value::Array(items) => {
                    let numbers = items.first().is_some_and(|i| i.is_integer())
                        || (items.is_empty() && key.as_str() == "retitle_at");
                    let parts = t.split(',').map(str::trim).filter(|p| !p.is_empty());
                    let list: Result<Vec<toml::Value>, ConfigError> = parts
                        .map(|p| match numbers {
                            true => p.parse().map(toml::Value::Integer).map_err(|_| bad()),
                            false => Ok(toml::Value::String(p.to_string())),
                        })
                        .collect();
                    toml::Value::Array(list?)
                }
                _ => return Err(bad()),
            };
        }
    }
    Ok(())
}

/// Every key of the configuration with its environment variable, in file
/// order (for `--help` and the README table).
pub fn env_names() -> Vec<(String, String)> {
    let mut out = Vec::new();
    if let Ok(toml::Value::Table(sections)) = toml::from_str::<toml::Value>(DEFAULT_TOML) {
        for (section, table) in sections {
            if let toml::Value::Table(keys) = table {
                for key in keys.keys() {
                    out.push((format!("{section}.{key}"), env_name(&section, key)));
                }
            }
        }
    }
    out
}

/// Overlay `top` onto `base`, table by table.
fn merge(base: &mut toml::Value, top: toml::Value) {
    match (base, top) {
        (toml::Value::Table(b), toml::Value::Table(t)) => {
            for (k, v) in t {
                match b.get_mut(&k) {
                    Some(existing) => merge(existing, v),
                    None => {
                        b.insert(k, v);
                    }
                }
            }
        }
        (b, t) => *b = t,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_parse_and_env_overrides() {
        let mut c = Config::load(&Overrides::default()).unwrap();
        assert_eq!(c.store.session_cache_cap, 256);
        c.apply_env(|k| (k == "OPENPROGRAM_SESSION_CACHE_CAP").then(|| "7".to_string()))
            .unwrap();
        assert_eq!(c.store.session_cache_cap, 7);
        assert!(c
            .apply_env(|k| (k == "OPENPROGRAM_BODY_LIMIT").then(|| "x".to_string()))
            .is_err());
    }

    #[test]
    fn every_key_has_an_environment_override() {
        let mut c = Config::load(&Overrides::default()).unwrap();
        let env = |k: &str| match k {
            "OPENPROGRAM_MAINTENANCE_MAX_SESSIONS" => Some("12".to_string()),
            "OPENPROGRAM_MAINTENANCE_ARCHIVE_TTL_DAYS" => Some("2.5".to_string()),
            "OPENPROGRAM_TITLES_RETITLE_AT" => Some("1, 3".to_string()),
            "OPENPROGRAM_LLM_CONCURRENCY" => Some("9".to_string()),
            "OPENPROGRAM_SERVER_REQUIRE_TOKEN" => Some("true".to_string()),
            "OPENPROGRAM_LOGGING_FORMAT" => Some("json".to_string()),
            "OPENPROGRAM_BIND" => Some("127.0.0.1:9".to_string()),
            _ => None,
        };
        c.apply_env(env).unwrap();
        assert_eq!(c.maintenance.max_sessions, 12);
        assert_eq!(c.maintenance.archive_ttl_days, 2.5);
        assert_eq!(c.titles.retitle_at, vec![1, 3]);
        assert_eq!(c.llm.concurrency, 9);
        assert!(c.server.require_token);
        assert_eq!(c.logging.format, crate::telemetry::LogFormat::Json);
        assert_eq!(
            c.server.bind, "127.0.0.1:9",
            "the old short name still works"
        );
        let names = env_names();
        assert!(names.len() >= 25, "{names:?}");
        assert!(names.contains(&(
            "maintenance.empty_shell_max_age_s".to_string(),
            "OPENPROGRAM_MAINTENANCE_EMPTY_SHELL_MAX_AGE_S".to_string()
        )));
        assert!(c
            .apply_env(|k| (k == "OPENPROGRAM_LLM_CONCURRENCY").then(|| "many".to_string()))
            .is_err());
    }

    #[test]
    fn file_overlays_defaults() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("c.toml");
        std::fs::write(&f, "[server]\nbind = \"127.0.0.1:1\"\n").unwrap();
        let c = Config::load(&Overrides {
            config_file: Some(f),
            ..Default::default()
        })
        .unwrap();
        assert_eq!(c.server.bind, "127.0.0.1:1");
        assert_eq!(c.server.body_limit, 1048576);
    }
}
