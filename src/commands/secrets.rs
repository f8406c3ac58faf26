//! `openprogram secrets scan`: every session of a state directory scanned
//! for secrets (see `openprogram_actors::maintenance::secrets`). It reads git
//! only, so a running server's directory can be scanned; exit 1 when a
//! secret is found.

use std::path::Path;
use std::process::ExitCode;

use openprogram_actors::maintenance::secrets as scan;
use openprogram_actors::redact::Redactor;

use super::progress::Progress;
use crate::cli::SecretsScanArgs;

pub fn scan(args: &SecretsScanArgs) -> ExitCode {
    let dir = match args.dir.resolve() {
        Ok(d) => d,
        Err(code) => return code,
    };
    if !dir.join("sessions").is_dir() {
        eprintln!(
            "[error] {} is not a state directory (no sessions/)",
            dir.display()
        );
        return ExitCode::from(2);
    }
    let redactor = match redactor(&dir, args.config.as_deref()) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("[error] {e}");
            return ExitCode::from(2);
        }
    };
    let store = super::read_store(&dir);
    let total = store
        .all_session_folders()
        .map(|d| d.len() as u64)
        .unwrap_or(0);
    let mut bar = Progress::new("scanning sessions", total);
    let report = scan::scan_store(&store, &redactor, || bar.inc());
    bar.finish();
    if args.json {
        match serde_json::to_string_pretty(&report) {
            Ok(text) => println!("{text}"),
            Err(e) => {
                eprintln!("[error] {e}");
                return ExitCode::from(2);
            }
        }
    } else {
        println!(
            "scanned {} sessions, {} nodes: {} secret{} in {} session{}",
            report.sessions_scanned,
            report.nodes_scanned,
            report.secrets,
            if report.secrets == 1 { "" } else { "s" },
            report.sessions.len(),
            if report.sessions.len() == 1 { "" } else { "s" },
        );
        for s in &report.sessions {
            for k in &s.kinds {
                let turns: Vec<String> = k.turns.iter().map(u64::to_string).collect();
                println!(
                    "  {}: {} × {} (turns {}; nodes {})",
                    s.session,
                    k.count,
                    k.kind,
                    turns.join(", "),
                    k.nodes.join(", ")
                );
            }
        }
        for (id, why) in &report.unreadable {
            println!("  [unreadable] {id}: {why}");
        }
    }
    if report.secrets > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// The rules of the configuration, and the state directory's hash key.
pub(super) fn redactor(dir: &Path, config: Option<&Path>) -> Result<Redactor, String> {
    let loaded = crate::config::Config::load(&crate::config::Overrides {
        config_file: config.map(Path::to_path_buf),
        state_dir: None,
        bind: None,
    })
    .map_err(|e| e.to_string())?;
    Redactor::new(&loaded.redaction, dir).map_err(|e| e.to_string())
}
