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

/// The CPU this thread has used (user and kernel).
fn thread_cpu() -> Duration {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the one timespec it is given.
    unsafe {
        libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t);
    }
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

/// The files a whole turn of four nodes leaves in a session, written with
/// the calls the server makes for them and nothing else (no git, no JSON,
/// no HTTP, no flush): four node files created, a pack and its index
/// created under a temporary name and renamed, `meta.json` overwritten in
/// place. Returns the CPU time of one turn's files, the mean of `n`.
/// What the layout (a file per node, a commit per turn) costs the kernel
/// before any of the server's own work. The files stay (the bench's
/// folder goes at its end): freed inodes would slow the creations of the
/// phases after it on this VM's ext4.
pub fn turn_files_cpu(dir: &Path, n: usize) -> Duration {
    use openprogram_actors::fsio;
    let node = vec![b'n'; 700];
    let pack = vec![b'p'; 2400];
    let meta = vec![b'm'; 900];
    let history = dir.join("turn-files/history");
    let packs = dir.join("turn-files/.git/objects/pack");
    std::fs::create_dir_all(&packs).expect("pack folder");
    let started = thread_cpu();
    for turn in 0..n {
        let folder = history.join(format!("{:02}/{:02}", turn / 2500, (turn / 25) % 100));
        if turn % 25 == 0 {
            std::fs::create_dir_all(&folder).expect("history folder");
        }
        for k in 0..4 {
            let name = format!("{:06}-a-{turn:08x}{k}.json", turn * 4 + k);
            fsio::overwrite_unsynced(&folder.join(name), &node).expect("node file");
        }
        fsio::write_content_named(&packs.join(format!("pack-{turn:040x}.pack")), &pack)
            .expect("pack");
        fsio::write_content_named(&packs.join(format!("pack-{turn:040x}.idx")), &pack[..1100])
            .expect("pack index");
        fsio::overwrite_unsynced(&dir.join("turn-files/meta.json"), &meta).expect("meta.json");
    }
    (thread_cpu() - started) / n.max(1) as u32
}
