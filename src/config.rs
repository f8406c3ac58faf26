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
    Env { key: &'static str, value: String },
    #[error("no home directory: set OPENPROGRAM_STATE_DIR or --state-dir")]
    NoHome,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    pub server: ServerConfig,
    pub store: StoreConfig,
    pub registry: RegistryConfig,
    pub maintenance: MaintenanceConfig,
    pub llm: LlmSection,
    pub titles: TitlesConfig,
    pub projects: ProjectsConfig,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProjectsConfig {
    /// Folders accepted as projects and working directories whatever the
    /// system-folder rules.
    pub allowed_roots: Vec<PathBuf>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LlmSection {
    pub base_url: String,
    pub model: String,
    pub api_key: String,
    pub timeout: u64,
    pub concurrency: usize,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TitlesConfig {
    pub retitle_at: Vec<u32>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RegistryConfig {
    pub index_debounce_ms: u64,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MaintenanceConfig {
    pub empty_shell_max_age_s: f64,
    pub archive_ttl_days: f64,
    pub max_sessions: usize,
}

#[derive(Debug, Clone, Deserialize)]
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
}

#[derive(Debug, Clone, Deserialize)]
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

    fn apply_env(&mut self, get: impl Fn(&str) -> Option<String>) -> Result<(), ConfigError> {
        fn num<T: std::str::FromStr>(key: &'static str, v: String) -> Result<T, ConfigError> {
            v.trim()
                .parse()
                .map_err(|_| ConfigError::Env { key, value: v })
        }
        if let Some(v) = get("OPENPROGRAM_STATE_DIR") {
            self.store.state_dir = v;
        }
        if let Some(v) = get("OPENPROGRAM_BIND") {
            self.server.bind = v;
        }
        if let Some(v) = get("OPENPROGRAM_BODY_LIMIT") {
            self.server.body_limit = num("OPENPROGRAM_BODY_LIMIT", v)?;
        }
        if let Some(v) = get("OPENPROGRAM_SHUTDOWN_TIMEOUT") {
            self.server.shutdown_timeout = num("OPENPROGRAM_SHUTDOWN_TIMEOUT", v)?;
        }
        if let Some(v) = get("OPENPROGRAM_WORKERS") {
            self.server.workers = num("OPENPROGRAM_WORKERS", v)?;
        }
        if let Some(v) = get("OPENPROGRAM_LLM_BASE_URL") {
            self.llm.base_url = v;
        }
        if let Some(v) = get("OPENPROGRAM_LLM_MODEL") {
            self.llm.model = v;
        }
        if let Some(v) = get("OPENPROGRAM_LLM_API_KEY") {
            self.llm.api_key = v;
        }
        if let Some(v) = get("OPENPROGRAM_LLM_TIMEOUT") {
            self.llm.timeout = num("OPENPROGRAM_LLM_TIMEOUT", v)?;
        }
        if let Some(v) = get("OPENPROGRAM_INDEX_DEBOUNCE_MS") {
            self.registry.index_debounce_ms = num("OPENPROGRAM_INDEX_DEBOUNCE_MS", v)?;
        }
        if let Some(v) = get("OPENPROGRAM_SESSION_CACHE_CAP") {
            self.store.session_cache_cap = num("OPENPROGRAM_SESSION_CACHE_CAP", v)?;
        }
        if let Some(v) = get("OPENPROGRAM_STORE_IMPORT_MAX_UNPACKED") {
            self.store.import_max_unpacked = num("OPENPROGRAM_STORE_IMPORT_MAX_UNPACKED", v)?;
        }
        if let Some(v) = get("OPENPROGRAM_STORE_IMPORT_MAX_OBJECTS") {
            self.store.import_max_objects = num("OPENPROGRAM_STORE_IMPORT_MAX_OBJECTS", v)?;
        }
        let list = |v: String| -> Vec<String> {
            v.split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect()
        };
        if let Some(v) = get("OPENPROGRAM_SERVER_ALLOWED_HOSTS") {
            self.server.allowed_hosts = list(v);
        }
        if let Some(v) = get("OPENPROGRAM_SERVER_ALLOWED_ORIGINS") {
            self.server.allowed_origins = list(v);
        }
        if let Some(v) = get("OPENPROGRAM_TOKEN") {
            self.server.token = v;
        }
        if let Some(v) = get("OPENPROGRAM_SERVER_REQUIRE_TOKEN") {
            self.server.require_token = num("OPENPROGRAM_SERVER_REQUIRE_TOKEN", v)?;
        }
        if let Some(v) = get("OPENPROGRAM_SERVER_REQUEST_TIMEOUT") {
            self.server.request_timeout = num("OPENPROGRAM_SERVER_REQUEST_TIMEOUT", v)?;
        }
        if let Some(v) = get("OPENPROGRAM_PROJECTS_ALLOWED_ROOTS") {
            self.projects.allowed_roots = list(v).into_iter().map(PathBuf::from).collect();
        }
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
