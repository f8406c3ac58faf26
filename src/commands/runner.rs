//! `openprogram runner llm`: the built-in runner against a running server.

use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use crate::cli::{RunnerArgs, RunnerKind};
use crate::client::Client;
use crate::config::{Config, Overrides};

pub fn run(args: &RunnerArgs) -> ExitCode {
    let RunnerKind::Llm = args.kind;
    let client = match Client::connect(&args.target) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("openprogram runner: {e}");
            return ExitCode::from(2);
        }
    };
    let config = match Config::load(&Overrides {
        config_file: args.config.clone(),
        state_dir: args.target.state_dir.clone(),
        bind: None,
    }) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("openprogram runner: {e}");
            return ExitCode::from(2);
        }
    };
    if config.llm.base_url.trim().is_empty() {
        eprintln!("openprogram runner: no LLM is configured: set llm.base_url (OPENPROGRAM_LLM_BASE_URL) and llm.model");
        return ExitCode::from(2);
    }
    eprintln!(
        "openprogram runner: answering {} with {} (Ctrl-C stops)",
        client.base(),
        config.llm.base_url
    );
    crate::runner::run(
        crate::runner::RunnerConfig {
            url: client.base().to_string(),
            token: client.token().map(str::to_string),
            name: args.name.clone(),
            llm: config.llm,
        },
        Arc::new(AtomicBool::new(false)),
    );
    ExitCode::SUCCESS
}
