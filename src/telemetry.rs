//! Logging: `tracing` to stderr, filtered by `RUST_LOG` (default `info`),
//! as text (colour only on a terminal) or JSON lines.

use std::io::IsTerminal;

use serde::{Deserialize, Serialize};
use tracing_subscriber::EnvFilter;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    #[default]
    Text,
    Json,
}

/// The one tantivy target held at `error`.
const QUIET_TANTIVY: &str = "tantivy::store::compressors=error";

pub fn init(format: LogFormat) {
    let mut filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info,tantivy=warn"));
    // tantivy warns at every segment it writes that zstd level 19 is slow;
    // the level is chosen on purpose (see `search/index.rs`), so that one
    // warning is dropped whatever `RUST_LOG` asks for.
    if let Ok(quiet) = QUIET_TANTIVY.parse() {
        filter = filter.add_directive(quiet);
    }
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Text => builder
            .with_ansi(std::io::stderr().is_terminal())
            .try_init(),
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(true)
            .with_span_list(false)
            .try_init(),
    };
}
