//! `openprogram gc [--session ID]`: repack session repositories on a
//! stopped server's state directory, with sizes before and after.

use std::process::ExitCode;

use openprogram_actors::maintenance::gc;

use super::progress::Progress;
use crate::cli::GcArgs;

fn mib(bytes: u64) -> String {
    format!("{:.2} MiB", bytes as f64 / (1024.0 * 1024.0))
}

pub fn run(args: &GcArgs) -> ExitCode {
    let dir = match args.dir.resolve() {
        Ok(d) => d,
        Err(code) => return code,
    };
    if super::status::server_running(&dir) {
        eprintln!(
            "[error] a server is running on {}; stop it first (its sessions are repacked in the background while it runs)",
            dir.display()
        );
        return ExitCode::from(2);
    }
    let store = match super::open_store(&dir) {
        Ok(store) => store,
        Err(code) => return code,
    };
    let mut sessions = match store.all_session_folders() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("[error] {}: {e}", dir.display());
            return ExitCode::from(2);
        }
    };
    if let Some(only) = &args.session {
        sessions.retain(|(id, _)| id == only);
        if sessions.is_empty() {
            eprintln!("[error] no session '{only}' found.");
            return ExitCode::from(1);
        }
    }
    sessions.retain(|(_, d)| d.join(".git").is_dir());
    let mut bar = Progress::new("repacking", sessions.len() as u64);
    let (mut before, mut after, mut failed) = (0, 0, 0);
    for (id, sdir) in &sessions {
        match gc::gc_session(sdir) {
            Ok(o) => {
                before += o.before;
                after += o.after;
                if args.session.is_some() {
                    println!("{id}: {} → {}", mib(o.before), mib(o.after));
                }
            }
            Err(e) => {
                failed += 1;
                eprintln!("[error] {id}: {e}");
            }
        }
        bar.inc();
    }
    bar.finish();
    println!(
        "{} sessions: {} → {}{}",
        sessions.len(),
        mib(before),
        mib(after),
        if failed > 0 {
            format!(", {failed} failed")
        } else {
            String::new()
        }
    );
    if failed > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
