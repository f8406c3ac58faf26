use std::process::ExitCode;

use clap::Parser;

/// jemalloc instead of glibc's malloc: under a mixed load glibc's
/// per-thread arenas kept freed memory (the server's anonymous memory grew
/// from 23 MiB for the data to about 230 MiB in a minute; with two arenas,
/// 63 MiB). See docs/ARCHITECTURE.md, "Memory".
#[global_allocator]
static ALLOC: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> ExitCode {
    openprogram::commands::run(openprogram::cli::Cli::parse())
}
