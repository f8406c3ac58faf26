//! Command-line interface.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "openprogram",
    version,
    about = "Entity memory for AI agents, kept in git"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the HTTP/WebSocket service.
    Serve(ServeArgs),
}

#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// State directory (default ~/.openprogram).
    #[arg(long, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
    /// Address to listen on, e.g. 127.0.0.1:8765 (port 0 picks a free port).
    #[arg(long, value_name = "ADDR:PORT")]
    pub bind: Option<String>,
    /// A TOML file overlaid on the defaults of config/default.toml.
    #[arg(long, value_name = "FILE", env = "OPENPROGRAM_CONFIG")]
    pub config: Option<PathBuf>,
}
