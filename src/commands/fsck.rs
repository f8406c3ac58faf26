//! `openprogram fsck [--repair]`: check a state directory (see
//! `openprogram_actors::maintenance::fsck`), print a report, exit 1 on
//! problems. `--repair` is refused while a server holds the directory.

use std::process::ExitCode;

use openprogram_actors::maintenance::fsck::{self, Fix};

use super::progress::Progress;
use crate::cli::FsckArgs;

pub fn run(args: &FsckArgs) -> ExitCode {
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
    if args.repair && super::status::server_running(&dir) {
        eprintln!(
            "[error] a server is running on {}; stop it before `fsck --repair` (a check without --repair is fine)",
            dir.display()
        );
        return ExitCode::from(2);
    }
    let store = if args.repair {
        match super::open_store(&dir) {
            Ok(store) => store,
            Err(code) => return code,
        }
    } else {
        super::read_store(&dir)
    };
    let total = store
        .all_session_folders()
        .map(|d| d.len() as u64)
        .unwrap_or(0);
    let mut bar = Progress::new("checking sessions", total);
    let report = fsck::check(&store, |_| bar.inc());
    bar.finish();
    let mut report = match report {
        Ok(r) => r,
        Err(e) => {
            eprintln!("[error] {}: {e}", dir.display());
            return ExitCode::from(2);
        }
    };
    println!(
        "checked {} sessions, {} objects in {}",
        report.sessions,
        report.objects,
        dir.display()
    );
    for p in &report.problems {
        let fix = match p.fix {
            Fix::Repairable => "repairable",
            Fix::Manual => "needs you",
        };
        match &p.session {
            Some(s) => println!("  [{fix}] session {s}: {}", p.what),
            None => println!("  [{fix}] {}", p.what),
        }
    }
    if let Some(spec) = &args.remote {
        let behind = match compare_remote(&store, spec, args.config.as_deref()) {
            Ok(n) => n,
            Err(code) => return code,
        };
        if report.problems.is_empty() && behind > 0 {
            return ExitCode::from(1);
        }
    }
    if report.problems.is_empty() {
        println!("no problems found");
        return ExitCode::SUCCESS;
    }
    if !args.repair {
        println!(
            "{} problem(s); `openprogram fsck --repair` fixes the repairable ones",
            report.problems.len()
        );
        return ExitCode::from(1);
    }
    if let Err(e) = fsck::repair(&store, &mut report) {
        eprintln!("[error] repair failed: {e}");
        return ExitCode::from(1);
    }
    for line in &report.repaired {
        println!("  repaired: {line}");
    }
    // Check again: what is left.
    match fsck::check(&store, |_| {}) {
        Ok(after) if after.problems.is_empty() => {
            println!("repaired; no problems left");
            ExitCode::SUCCESS
        }
        Ok(after) => {
            for p in &after.problems {
                println!(
                    "  still: {}{}",
                    p.session
                        .as_deref()
                        .map(|s| format!("session {s}: "))
                        .unwrap_or_default(),
                    p.what
                );
            }
            ExitCode::from(1)
        }
        Err(e) => {
            eprintln!("[error] {e}");
            ExitCode::from(1)
        }
    }
}

/// `fsck --remote`: every session's branches against the remote; the
/// number of differences (each printed).
fn compare_remote(
    store: &openprogram_actors::store::Store,
    spec: &str,
    config: Option<&std::path::Path>,
) -> Result<usize, ExitCode> {
    let remote = super::replication::find_remote(spec, config).map_err(|e| {
        eprintln!("[error] {e}");
        ExitCode::from(2)
    })?;
    let diffs = openprogram_actors::replication::restore::compare(store, &remote).map_err(|e| {
        eprintln!("[error] remote {}: {e}", remote.name);
        ExitCode::from(2)
    })?;
    let shown = openprogram_actors::replication::remote::redact(&remote.url);
    if diffs.is_empty() {
        println!("every session's branches are on {shown}");
    }
    for d in &diffs {
        println!(
            "  [remote {shown}] session {}: {} {}",
            d.session, d.branch, d.what
        );
    }
    Ok(diffs.len())
}
