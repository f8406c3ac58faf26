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
        Command::Fsck(args) => fsck::run(&args),
        Command::Gc(args) => gc::run(&args),
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
