use std::process::ExitCode;

use clap::Parser;
use openprogram::cli::{Cli, Command};
use openprogram::config::{Config, Overrides};
use openprogram::startup::Application;

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Serve(args) => {
            openprogram::telemetry::init();
            let overrides = Overrides {
                config_file: args.config,
                state_dir: args.state_dir,
                bind: args.bind,
            };
            let config = match Config::load(&overrides) {
                Ok(c) => c,
                Err(e) => {
                    eprintln!("[error] {e}");
                    return ExitCode::from(2);
                }
            };
            let result = actix_web::rt::System::new().block_on(async move {
                let app = Application::build(&config).map_err(|e| e.to_string())?;
                app.run_until_stopped().await.map_err(|e| e.to_string())
            });
            match result {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("[error] {e}");
                    ExitCode::FAILURE
                }
            }
        }
        Command::Sessions { target, command } => {
            openprogram::commands::sessions::run(&target, command)
        }
        Command::Projects { target, command } => {
            openprogram::commands::projects::run(&target, command)
        }
        Command::Migrate(args) => {
            openprogram::telemetry::init();
            openprogram::commands::migrate::run(&args)
        }
    }
}
