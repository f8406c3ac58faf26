//! `<state>/sessions/locations.json`: where sessions that live outside the
//! state directory (inside a project folder) are, `{"<id>": "<dir>"}`.
//! Every other session lives at `<state>/sessions/<id>`.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

use crate::fsio;

pub const FILE: &str = "locations.json";

#[derive(Debug, Clone, Default)]
pub struct Locations {
    path: PathBuf,
    map: BTreeMap<String, PathBuf>,
}

impl Locations {
    /// Load (a missing file is an empty map; an unreadable one is logged and
    /// kept on disk untouched until the next write replaces it).
    pub fn load(sessions_dir: &Path) -> Locations {
        let path = sessions_dir.join(FILE);
        let map = match fsio::read_json::<BTreeMap<String, PathBuf>>(&path) {
            Ok(m) => m,
            Err(e) if e.kind() == io::ErrorKind::NotFound => BTreeMap::new(),
            Err(e) => {
                tracing::error!(path = %path.display(), error = %e, "locations.json unreadable; sessions in project folders are not listed");
                BTreeMap::new()
            }
        };
        Locations { path, map }
    }

    pub fn get(&self, id: &str) -> Option<&Path> {
        self.map.get(id).map(PathBuf::as_path)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&String, &PathBuf)> {
        self.map.iter()
    }

    /// Record a location and save durably.
    pub fn insert(&mut self, id: String, dir: PathBuf) -> io::Result<()> {
        self.map.insert(id, dir);
        self.save()
    }

    /// Drop a location (if any) and save durably.
    pub fn remove(&mut self, id: &str) -> io::Result<bool> {
        if self.map.remove(id).is_none() {
            return Ok(false);
        }
        self.save().map(|_| true)
    }

    fn save(&self) -> io::Result<()> {
        fsio::atomic_write_json(&self.path, &self.map)
    }
}
