//! Which folders the service may use as projects and working directories.
//! A path is resolved (symlinks included) and then judged as a whole: the
//! system's own folders, other users' homes, the home directory itself (as
//! a project) and the state directory are refused; `allowed_roots` widens
//! the rule for folders an operator vouches for. Nothing is ever created
//! in a refused path: the judgement comes before any write.

use std::path::{Component, Path, PathBuf};

use crate::store::OPENPROGRAM_DIR;

/// What a folder is being accepted as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// A project: the agent may `git init` and commit there.
    Project,
    /// An additional working directory of a session (read and edited).
    WorkingDir,
}

#[derive(Debug, Clone, Default)]
pub struct PathPolicy {
    /// The state directory (resolved when possible).
    pub state_dir: PathBuf,
    /// The user's home directory.
    pub home: Option<PathBuf>,
    /// Folders (and everything below them) accepted whatever the rules.
    pub allowed_roots: Vec<PathBuf>,
}

/// Top-level folders of the system, refused with everything below them.
const SYSTEM: [&str; 8] = ["etc", "bin", "sbin", "boot", "dev", "proc", "sys", "run"];
/// Folders below `/var` that belong to the system.
const VAR_SYSTEM: [&str; 4] = ["lib", "log", "cache", "run"];

impl PathPolicy {
    pub fn new(state_dir: &Path, allowed_roots: Vec<PathBuf>) -> PathPolicy {
        let resolve = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
        PathPolicy {
            state_dir: resolve(state_dir),
            home: std::env::var_os("HOME")
                .filter(|h| !h.is_empty())
                .map(|h| resolve(Path::new(&h))),
            allowed_roots: allowed_roots.iter().map(|r| resolve(r)).collect(),
        }
    }

    /// Resolve `raw` (absolute, existing, a directory) and judge it. Blocks
    /// (file-system lookups): call it off the event loop.
    pub fn resolve(&self, raw: &str, purpose: Purpose) -> Result<PathBuf, String> {
        if raw.trim().is_empty() {
            return Err("path is required".into());
        }
        if raw.contains('\0') {
            return Err("path must not contain NUL".into());
        }
        let p = Path::new(raw);
        if !p.is_absolute() {
            return Err("path must be absolute".into());
        }
        // The original's wording, for a missing folder and a file alike.
        let not_a_dir = || format!("not a directory: {raw}");
        let canonical = p.canonicalize().map_err(|_| not_a_dir())?;
        if !canonical.is_dir() {
            return Err(not_a_dir());
        }
        self.judge(&canonical, purpose)?;
        Ok(canonical)
    }

    /// The rules, on a resolved path (no file-system access).
    pub fn judge(&self, path: &Path, purpose: Purpose) -> Result<(), String> {
        let shown = path.display();
        if path.starts_with(&self.state_dir) {
            return Err(format!("{shown} is the state directory or inside it"));
        }
        if purpose == Purpose::Project && self.state_dir.starts_with(path) {
            return Err(format!("{shown} contains the state directory"));
        }
        if path
            .components()
            .any(|c| c == Component::Normal(OPENPROGRAM_DIR.as_ref()))
        {
            return Err(format!("{shown} is inside an .openprogram folder"));
        }
        if self.allowed_roots.iter().any(|r| path.starts_with(r)) {
            return Ok(());
        }
        if let Some(why) = system_folder(path) {
            return Err(format!("{shown} is {why}; choose a folder of your own"));
        }
        let home = self.home.as_deref();
        if purpose == Purpose::Project && home == Some(path) {
            return Err(format!(
                "{shown} is your home directory; choose a folder inside it"
            ));
        }
        if let Some(other) = other_home(path, home) {
            return Err(format!(
                "{shown} is inside {}, another user's home",
                other.display()
            ));
        }
        Ok(())
    }
}

/// Why `path` belongs to the system, if it does.
fn system_folder(path: &Path) -> Option<&'static str> {
    let parts: Vec<&str> = path
        .components()
        .filter_map(|c| match c {
            Component::Normal(n) => n.to_str(),
            _ => None,
        })
        .collect();
    let Some(&top) = parts.first() else {
        return Some("the root of the file system");
    };
    if SYSTEM.contains(&top) || top.starts_with("lib") {
        return Some("a system folder");
    }
    match (top, parts.get(1).copied(), parts.get(2).copied()) {
        ("usr", Some("local"), Some("src")) => None,
        ("usr", ..) => Some("a system folder (/usr)"),
        ("var", None, _) => Some("a system folder (/var)"),
        ("var", Some(sub), _) if VAR_SYSTEM.contains(&sub) => Some("a system folder (/var)"),
        _ => None,
    }
}

/// The other user's home that `path` is in, if any: `/root`, or
/// `/home/<name>`, unless that is (or holds) the user's own home.
fn other_home(path: &Path, own: Option<&Path>) -> Option<PathBuf> {
    let mut comps = path.components().skip(1);
    let first = comps.next()?;
    let candidate = match first {
        Component::Normal(n) if n == "root" => PathBuf::from("/root"),
        Component::Normal(n) if n == "home" => match comps.next()? {
            Component::Normal(user) => Path::new("/home").join(user),
            _ => return None,
        },
        _ => return None,
    };
    match own {
        Some(home) if home.starts_with(&candidate) => None,
        _ => Some(candidate),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(home: &str) -> PathPolicy {
        PathPolicy {
            state_dir: PathBuf::from("/home/ann/.openprogram"),
            home: Some(PathBuf::from(home)),
            allowed_roots: Vec::new(),
        }
    }

    #[test]
    fn system_folders_are_refused_and_ordinary_places_allowed() {
        let p = policy("/home/ann");
        for bad in [
            "/",
            "/etc",
            "/etc/nginx",
            "/bin",
            "/sbin",
            "/lib",
            "/lib64",
            "/lib/x",
            "/boot",
            "/dev",
            "/dev/shm",
            "/proc",
            "/proc/1",
            "/sys",
            "/run",
            "/run/user/1000",
            "/usr",
            "/usr/bin",
            "/usr/local",
            "/usr/local/bin",
            "/var",
            "/var/lib",
            "/var/lib/apt",
            "/var/log",
            "/var/cache/x",
            "/var/run",
        ] {
            assert!(p.judge(Path::new(bad), Purpose::Project).is_err(), "{bad}");
            assert!(
                p.judge(Path::new(bad), Purpose::WorkingDir).is_err(),
                "{bad}"
            );
        }
        for good in [
            "/home/ann/code",
            "/srv",
            "/srv/app",
            "/opt/tool",
            "/var/www",
            "/var/www/site",
            "/tmp/x",
            "/usr/local/src",
            "/usr/local/src/proj",
            "/mnt/data",
        ] {
            assert!(p.judge(Path::new(good), Purpose::Project).is_ok(), "{good}");
        }
    }

    #[test]
    fn homes_and_the_state_directory() {
        let p = policy("/home/ann");
        let refused = |path: &str, purpose| p.judge(Path::new(path), purpose).is_err();
        assert!(refused("/home/ann", Purpose::Project), "home itself");
        assert!(!refused("/home/ann", Purpose::WorkingDir));
        assert!(refused("/home/bob", Purpose::Project));
        assert!(refused("/home/bob/code", Purpose::WorkingDir));
        assert!(refused("/root", Purpose::Project));
        assert!(refused("/root/x", Purpose::WorkingDir));
        assert!(refused("/home/ann/.openprogram", Purpose::WorkingDir));
        assert!(refused(
            "/home/ann/.openprogram/sessions/s",
            Purpose::Project
        ));
        assert!(refused("/srv/p/.openprogram/sessions", Purpose::WorkingDir));
        // root's own home is its own.
        let r = policy("/root");
        assert!(r.judge(Path::new("/root/work"), Purpose::Project).is_ok());
        assert!(r.judge(Path::new("/home/ann"), Purpose::Project).is_err());
    }

    #[test]
    fn allowed_roots_widen_the_rule_but_never_the_state_directory() {
        let mut p = policy("/home/ann");
        p.allowed_roots = vec![PathBuf::from("/var/lib/builds"), PathBuf::from("/home/ann")];
        assert!(p
            .judge(Path::new("/var/lib/builds/x"), Purpose::Project)
            .is_ok());
        assert!(p
            .judge(Path::new("/var/lib/other"), Purpose::Project)
            .is_err());
        assert!(p
            .judge(Path::new("/home/ann/.openprogram"), Purpose::Project)
            .is_err());
    }
}
