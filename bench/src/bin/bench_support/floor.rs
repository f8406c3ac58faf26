//! The disk's own floor, measured in the run that is judged against it:
//! one fsync'd 2 KB atomic write (what one durable write of a small file
//! costs: temp file, fsync, rename, folder fsync) and a bare `fdatasync`
//! of a 4 KB write in place (one flush, nothing else).

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::{ms, percentile};

/// p50 and p99 of both kinds of write, sorted samples kept.
pub struct Floor {
    pub writes: Vec<Duration>,
    pub syncs: Vec<Duration>,
}

impl Floor {
    pub fn write_p50(&self) -> f64 {
        ms(percentile(&self.writes, 0.5))
    }

    /// `d` as a multiple of the fsync'd write's p50: "(2.1× the floor)".
    pub fn times(&self, d: f64) -> String {
        format!("{:.1}× the floor", d / self.write_p50())
    }

    pub fn print(&self) {
        println!(
            "The floor, this disk in this run: one fsync'd 2 KB atomic write p50 {:.2} ms, p99 {:.2} ms; a bare fdatasync of a 4 KB write p50 {:.2} ms, p99 {:.2} ms ({} of each)",
            self.write_p50(),
            ms(percentile(&self.writes, 0.99)),
            ms(percentile(&self.syncs, 0.5)),
            ms(percentile(&self.syncs, 0.99)),
            self.writes.len()
        );
    }
}

/// A file written in place and flushed: `sync` times one 4 KB `pwrite`
/// and its `fdatasync`.
pub struct Syncer {
    file: File,
    block: Vec<u8>,
    n: u64,
}

impl Syncer {
    pub fn new(dir: &Path) -> Syncer {
        let path: PathBuf = dir.join("fdatasync-4k.bin");
        let file = File::options()
            .create(true)
            .truncate(true)
            .read(true)
            .write(true)
            .open(&path)
            .expect("fdatasync file");
        // Allocated and flushed once: later flushes carry no metadata.
        file.write_all_at(&vec![0u8; 64 << 10], 0).expect("fill");
        file.sync_all().expect("sync");
        Syncer {
            file,
            block: vec![b'x'; 4096],
            n: 0,
        }
    }

    pub fn sync(&mut self) -> Duration {
        self.n += 1;
        self.block[0] = (self.n % 251) as u8;
        let at = (self.n % 16) * 4096;
        let start = Instant::now();
        self.file.write_all_at(&self.block, at).expect("4 KB write");
        self.file.sync_data().expect("fdatasync");
        start.elapsed()
    }
}

/// One fsync'd 2 KB atomic write of `target`.
pub fn atomic_write(target: &Path) -> Duration {
    let bytes = [b'x'; 2048];
    let start = Instant::now();
    openprogram_actors::fsio::atomic_write(target, &bytes).expect("2 KB write");
    start.elapsed()
}

/// `n` of each, alternated.
pub fn measure(dir: &Path, n: usize) -> Floor {
    let target = dir.join("floor-2k.json");
    let mut syncer = Syncer::new(dir);
    let mut floor = Floor {
        writes: Vec::with_capacity(n),
        syncs: Vec::with_capacity(n),
    };
    for _ in 0..n {
        floor.writes.push(atomic_write(&target));
        floor.syncs.push(syncer.sync());
    }
    floor.writes.sort();
    floor.syncs.sort();
    floor
}
