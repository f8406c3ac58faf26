use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    openprogram::commands::run(openprogram::cli::Cli::parse())
}
