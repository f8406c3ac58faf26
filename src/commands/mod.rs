//! The CLI's commands: `serve`, the ones that talk to a running server
//! (`sessions`, `projects`), and the operator's tools that work on a state
//! directory (`migrate`, `fsck`, `gc`, `status`).

pub mod fsck;
pub mod gc;
pub mod import;
mod import_doctor;
pub mod mcp;
pub mod migrate;
pub mod progress;
pub mod projects;
pub mod purge;
pub mod replication;
pub mod runner;
pub mod search;
pub mod secrets;
pub mod serve;
pub mod sessions;
pub mod status;

use std::process::ExitCode;

use openprogram_actors::store::{Opening, Store};

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
        Command::Fsck(args) => fsck::run(&args),
        Command::Gc(args) => gc::run(&args),
        Command::Secrets {
            command: crate::cli::SecretsCommand::Scan(args),
        } => secrets::scan(&args),
        Command::Purge(args) => purge::run(&args),
        Command::Status(args) => status::run(&args),
        Command::Search(args) => search::run(&args),
        Command::Import(args) => import::run(&args),
        Command::Mcp(args) => mcp::run(&args),
        Command::Runner(args) => runner::run(&args),
        Command::Replication { target, command } => replication::run(&target, command),
        Command::Restore(args) => replication::restore(&args),
        Command::Completions { shell } => {
            use clap::CommandFactory;
            let mut cmd = Cli::command();
            clap_complete::generate(shell, &mut cmd, "openprogram", &mut std::io::stdout());
            ExitCode::SUCCESS
        }
    }
}

/// For a tool that writes to a stopped server's state directory: open its
/// store, replaying the write-ahead log a crash left first (as `serve`
/// does); the tool's writes go through the log, made durable and emptied
/// when the store is dropped.
fn open_store(dir: &std::path::Path) -> Result<Store, ExitCode> {
    match Store::open_state_dir(dir) {
        Ok((store, Opening::Writable(r))) => {
            if r.entries > 0 {
                println!(
                    "replayed {} write-ahead log entries left by a crash ({} changes applied)",
                    r.entries, r.applied
                );
            }
            Ok(store)
        }
        Ok((_, Opening::ReadOnly { error, .. })) | Err(error) => {
            eprintln!("[error] write-ahead log in {}: {error}", dir.display());
            Err(ExitCode::from(2))
        }
    }
}

/// For a tool that only reads a state directory: its store without a log
/// (nothing is created or replayed).
fn read_store(dir: &std::path::Path) -> Store {
    Store::without_log(&dir.join(openprogram_actors::store::SESSIONS))
}
