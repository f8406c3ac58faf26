use std::process::ExitCode;

use clap::Parser;

/// jemalloc instead of glibc's malloc: under a mixed load glibc's
/// per-thread arenas kept freed memory (the server's anonymous memory grew
/// from 23 MiB for the data to about 230 MiB in a minute; with two arenas,
/// 63 MiB). See docs/ARCHITECTURE.md, "Memory".
#[global_allocator]
static ALLOC: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// jemalloc's options, read at its start: a background thread returns
/// freed pages to the system within about a second. Without it, pages are
/// only returned when the allocator is next used, so a server going quiet
/// after a load kept them (under the mixed load: 82 MiB anonymous settled
/// against 38 MiB for the same sessions loaded fresh). No thread caches:
/// each of the ~30 threads that once allocated kept its own cache of freed
/// blocks, and an idle thread never gives it back (9 MiB of the anonymous
/// memory of a server settled after the mixed load; see ARCHITECTURE).
#[unsafe(export_name = "malloc_conf")]
pub static MALLOC_CONF: &[u8; 73] =
    b"background_thread:true,dirty_decay_ms:1000,muzzy_decay_ms:0,tcache:false\0";

fn main() -> ExitCode {
    // Everything this process creates is the user's only (the state
    // directory holds every transcript): libgit2 and tantivy create their
    // files with the process's umask, so it is set before anything runs.
    // SAFETY: umask only sets the calling process's file mode mask; it
    // cannot fail and touches no memory.
    unsafe {
        libc::umask(0o077);
    }
    // libgit2 started without parsing the CA bundle (loaded at the first
    // https connection), and a replication remote that accepts a
    // connection and then says nothing must not hold a push (and a `sync`
    // end of turn) for ever.
    // SAFETY: first thing in `main`: no other thread exists yet.
    unsafe {
        openprogram_actors::replication::transport::init();
    }
    let cli = openprogram::cli::Cli::parse();
    if cli.command.prints_and_ends() {
        // SAFETY: signal(2) with the default disposition, before any
        // thread starts; it touches no memory of ours.
        unsafe {
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        }
    }
    openprogram::commands::run(cli)
}
