//! The CLI's commands: `serve`, the ones that talk to a running server
//! (`sessions`, `projects`), and the operator's tools that work on a state
//! directory (`migrate`, `fsck`, `gc`, `status`).

pub mod client;
pub mod fsck;
pub mod gc;
pub mod migrate;
pub mod progress;
pub mod projects;
pub mod search;
pub mod serve;
pub mod sessions;
pub mod status;

use std::process::ExitCode;

use crate::cli::{Cli, Command};

pub fn run(cli: Cli) -> ExitCode {
    match cli.command {
        Command::Serve(args) => serve::run(args),
        Command::Sessions { target, command } => sessions::run(&target, command),
        Command::Projects { target, command } => projects::run(&target, command),
        Command::Migrate(args) => {
            crate::telemetry::init(Default::default());
            migrate::run(&args)
        }
        Command::Fsck(args) => {
            let code = fsck::run(&args);
            openprogram_actors::wal::close();
            code
        }
        Command::Gc(args) => {
            let code = gc::run(&args);
            openprogram_actors::wal::close();
            code
        }
        Command::Status(args) => status::run(&args),
        Command::Search(args) => search::run(&args),
        Command::Completions { shell } => {
            use clap::CommandFactory;
            let mut cmd = Cli::command();
            clap_complete::generate(shell, &mut cmd, "openprogram", &mut std::io::stdout());
            ExitCode::SUCCESS
        }
    }
}

/// For a tool that writes to a stopped server's state directory: replay
/// the write-ahead log a crash left first (as `serve` does), and log
/// through it while the tool runs (`openprogram_actors::wal::close` at
/// the end makes it durable and empties it).
fn replay_log(dir: &std::path::Path) -> Result<(), ExitCode> {
    match openprogram_actors::wal::open(&dir.join(openprogram_actors::wal::DIR)) {
        Ok(r) => {
            if r.entries > 0 {
                println!(
                    "replayed {} write-ahead log entries left by a crash ({} changes applied)",
                    r.entries, r.applied
                );
            }
            Ok(())
        }
        Err(e) => {
            eprintln!("[error] write-ahead log in {}: {e}", dir.display());
            Err(ExitCode::from(2))
        }
    }
}
