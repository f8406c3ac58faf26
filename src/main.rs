use std::process::ExitCode;

use clap::Parser;

/// jemalloc instead of glibc's malloc: under a mixed load glibc's
/// per-thread arenas kept freed memory (the server's anonymous memory grew
/// from 23 MiB for the data to about 230 MiB in a minute; with two arenas,
/// 63 MiB). See docs/ARCHITECTURE.md, "Memory".
#[global_allocator]
static ALLOC: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> ExitCode {
    // Everything this process creates is the user's only (the state
    // directory holds every transcript): libgit2 and tantivy create their
    // files with the process's umask, so it is set before anything runs.
    // SAFETY: umask only sets the calling process's file mode mask; it
    // cannot fail and touches no memory.
    unsafe {
        libc::umask(0o077);
    }
    openprogram::commands::run(openprogram::cli::Cli::parse())
}
