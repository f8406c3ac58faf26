//! `<state>/sessions/locations.json`: where sessions that live outside the
//! state directory (inside a project folder) are, `{"<id>": "<dir>"}`.
//! Every other session lives at `<state>/sessions/<id>`.
//!
//! The map lives in memory (owned by the session manager); its file is
//! written by a thread of its own (`LocationsWriter`), never on an actix
//! event loop. Snapshots queued while a write runs are coalesced into one
//! write, and every waiter is answered once the file holding its change is
//! durable.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

use crossbeam_channel::{Receiver, Sender};
use tokio::sync::oneshot;

use crate::fsio;

pub const FILE: &str = "locations.json";

type Map = BTreeMap<String, PathBuf>;

#[derive(Debug, Clone, Default)]
pub struct Locations {
    path: PathBuf,
    map: Map,
}

impl Locations {
    /// Load (a missing file is an empty map; an unreadable one is logged and
    /// kept on disk untouched until the next write replaces it).
    pub fn load(sessions_dir: &Path) -> Locations {
        let path = sessions_dir.join(FILE);
        let map = match fsio::read_json::<Map>(&path) {
            Ok(m) => m,
            Err(e) if e.kind() == io::ErrorKind::NotFound => Map::new(),
            Err(e) => {
                tracing::error!(path = %path.display(), error = %e, "locations.json unreadable; sessions in project folders are not listed");
                Map::new()
            }
        };
        Locations { path, map }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn get(&self, id: &str) -> Option<&Path> {
        self.map.get(id).map(PathBuf::as_path)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&String, &PathBuf)> {
        self.map.iter()
    }

    /// Record a location in memory (save it with a writer, or `save_now`).
    pub fn insert(&mut self, id: String, dir: PathBuf) {
        self.map.insert(id, dir);
    }

    /// Drop a location from memory; whether there was one.
    pub fn remove(&mut self, id: &str) -> bool {
        self.map.remove(id).is_some()
    }

    /// Write the file now, durably (startup only: this blocks).
    pub fn save_now(&self) -> io::Result<()> {
        fsio::atomic_write_json(&self.path, &self.map)
    }
}

/// One queued write: the map to store and who waits for it.
struct Job {
    map: Map,
    done: oneshot::Sender<Result<(), String>>,
}

/// The thread that writes `locations.json` (atomically and durably).
#[derive(Clone)]
pub struct LocationsWriter {
    tx: Sender<Job>,
}

impl LocationsWriter {
    pub fn spawn(path: PathBuf) -> io::Result<LocationsWriter> {
        let (tx, rx) = crossbeam_channel::unbounded();
        std::thread::Builder::new()
            .name("locations-writer".into())
            .spawn(move || run(&path, &rx))?;
        Ok(LocationsWriter { tx })
    }

    /// Queue `locations` for writing; the future resolves once a file
    /// holding it (or a newer snapshot) is durable.
    pub fn save(
        &self,
        locations: &Locations,
    ) -> impl std::future::Future<Output = io::Result<()>> + 'static {
        let (done, wait) = oneshot::channel();
        let queued = self
            .tx
            .send(Job {
                map: locations.map.clone(),
                done,
            })
            .is_ok();
        async move {
            if !queued {
                return Err(io::Error::other("the locations writer has stopped"));
            }
            match wait.await {
                Ok(Ok(())) => Ok(()),
                Ok(Err(e)) => Err(io::Error::other(e)),
                Err(_) => Err(io::Error::other("the locations writer has stopped")),
            }
        }
    }
}

fn run(path: &Path, rx: &Receiver<Job>) {
    while let Ok(first) = rx.recv() {
        // Coalesce: the newest snapshot holds every queued change.
        let mut latest = first.map;
        let mut waiters = vec![first.done];
        while let Ok(next) = rx.try_recv() {
            latest = next.map;
            waiters.push(next.done);
        }
        let result = fsio::atomic_write_json(path, &latest).map_err(|e| {
            tracing::error!(path = %path.display(), error = %e, "could not write locations.json");
            e.to_string()
        });
        for w in waiters {
            let _ = w.send(result.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[actix_rt::test]
    async fn writes_are_durable_and_coalesced() {
        let dir = tempfile::tempdir().unwrap();
        let mut locs = Locations::load(dir.path());
        let writer = LocationsWriter::spawn(locs.path().to_path_buf()).unwrap();
        let mut waits = Vec::new();
        for i in 0..50 {
            locs.insert(format!("s{i}"), dir.path().join(format!("p{i}")));
            waits.push(writer.save(&locs));
        }
        for w in waits {
            w.await.unwrap();
        }
        let back = Locations::load(dir.path());
        assert_eq!(back.iter().count(), 50);
        assert_eq!(back.get("s49"), Some(dir.path().join("p49").as_path()));
        locs.remove("s0");
        writer.save(&locs).await.unwrap();
        assert!(Locations::load(dir.path()).get("s0").is_none());
    }

    #[actix_rt::test]
    async fn a_failed_write_is_reported() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("no-such-dir");
        let mut locs = Locations::load(&missing);
        let writer = LocationsWriter::spawn(locs.path().to_path_buf()).unwrap();
        locs.insert("s".into(), dir.path().to_path_buf());
        assert!(writer.save(&locs).await.is_err());
    }
}
