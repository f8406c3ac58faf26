//! `openprogram serve`: load the configuration, start logging, run the
//! application until a signal stops it.

use std::process::ExitCode;

use crate::cli::ServeArgs;
use crate::config::{Config, Overrides};
use crate::startup::Application;

pub fn run(args: ServeArgs) -> ExitCode {
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
    crate::telemetry::init(args.log_format.unwrap_or(config.logging.format));
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
