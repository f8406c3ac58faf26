//! `openprogram migrate [--dry-run] [--from DIR]`: the startup migration on
//! demand (see `openprogram_actors::session::legacy`), for a stopped
//! server's state directory, optionally bringing the sessions, locations
//! and projects of another state directory over first (ids kept).

use std::fs;
use std::path::Path;
use std::process::ExitCode;

use openprogram_actors::locations::Locations;
use openprogram_actors::session::legacy;
use openprogram_actors::{fsio, ids};

use crate::cli::MigrateArgs;
use crate::config::state_dir_or_default;

pub fn run(args: &MigrateArgs) -> ExitCode {
    match migrate(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("[error] {e}");
            // Could not run at all (a server holds the state directory):
            // 2, as for every command; a migration that failed: 1.
            if e.starts_with(SERVER_RUNNING) {
                ExitCode::from(2)
            } else {
                ExitCode::FAILURE
            }
        }
    }
}

const SERVER_RUNNING: &str = "a server is running on";

fn migrate(args: &MigrateArgs) -> Result<(), String> {
    let configured = args
        .state_dir
        .as_ref()
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    let state = state_dir_or_default(&configured).map_err(|e| e.to_string())?;
    let sessions = state.join("sessions");
    if !args.dry_run {
        fsio::create_private_dir_all(&sessions).map_err(|e| e.to_string())?;
    }
    // One writer per state directory: refuse under a running server.
    let lock_path = state.join("server.lock");
    let _lock = match fs::OpenOptions::new()
        .write(true)
        .create(!args.dry_run)
        .truncate(false)
        .open(&lock_path)
    {
        Ok(f) => {
            if f.try_lock().is_err() {
                return Err(format!(
                    "{SERVER_RUNNING} {}; stop it first (it migrates at startup anyway)",
                    state.display()
                ));
            }
            Some(f)
        }
        Err(_) if args.dry_run => None,
        Err(e) => return Err(format!("{}: {e}", lock_path.display())),
    };
    if let Some(from) = &args.from {
        bring_over(from, &state, args.dry_run)?;
    }
    // The writes of a migration go through the state directory's log, as
    // a server's do (a dry run opens nothing).
    let store = if args.dry_run {
        super::read_store(&state)
    } else {
        match openprogram_actors::store::Store::open_state_dir(&state) {
            Ok((mut store, openprogram_actors::store::Opening::Writable(_))) => {
                // Redacted as the server would (the configured rules).
                let redactor = super::secrets::redactor(&state, None)?;
                store.set_redactor(std::sync::Arc::new(redactor));
                store
            }
            Ok((_, openprogram_actors::store::Opening::ReadOnly { error, .. })) | Err(error) => {
                return Err(format!("write-ahead log in {}: {error}", state.display()))
            }
        }
    };
    let mut dirs = if sessions.is_dir() {
        store.all_session_folders().map_err(|e| e.to_string())?
    } else {
        Vec::new()
    };
    dirs.sort();
    let (mut done, mut turns, mut nodes, mut failed) = (0, 0, 0, 0);
    let mut bar = super::progress::Progress::new("migrating", dirs.len() as u64);
    for (id, dir) in &dirs {
        bar.inc();
        let pending = legacy::pending_files(dir);
        if pending == 0 && !legacy::needs_migration(dir) {
            continue;
        }
        if args.dry_run {
            bar.println(&format!(
                "would migrate {id}: {pending} node files ({})",
                dir.display()
            ));
            done += 1;
            continue;
        }
        match legacy::migrate(&store, dir) {
            Ok(m) => {
                bar.println(&format!(
                    "migrated {id}: {} nodes, {} turns",
                    m.nodes, m.turns
                ));
                for (file, why) in &m.skipped {
                    bar.println(&format!("  skipped {}: {why}", file.display()));
                }
                done += 1;
                turns += m.turns;
                nodes += m.nodes;
            }
            Err(e) => {
                bar.println(&format!("failed {id}: {e} (left as it was)"));
                failed += 1;
            }
        }
    }
    bar.finish();
    let verb = if args.dry_run {
        "would migrate"
    } else {
        "migrated"
    };
    println!("{verb} {done} sessions ({turns} turns, {nodes} nodes), {failed} failed");
    if failed > 0 {
        return Err(format!("{failed} sessions could not be migrated"));
    }
    Ok(())
}

/// Copy `from`'s sessions (those this state directory lacks), its
/// `locations.json` entries and, when this one has none, its projects.
fn bring_over(from: &Path, state: &Path, dry_run: bool) -> Result<(), String> {
    let src = from.join("sessions");
    let dst = state.join("sessions");
    let entries = fs::read_dir(&src).map_err(|e| format!("{}: {e}", src.display()))?;
    for e in entries.flatten() {
        let id = e.file_name().to_string_lossy().into_owned();
        if !e.path().is_dir() || id.starts_with('.') {
            continue;
        }
        if let Err(why) = ids::validate("session id", &id) {
            println!("skipped {id}: {why}");
            continue;
        }
        if dst.join(&id).exists() {
            println!("skipped {id}: a session with that id exists here");
            continue;
        }
        if dry_run {
            println!("would copy session {id}");
            continue;
        }
        copy_dir(&e.path(), &dst.join(&id))
            .and_then(|()| fsio::make_private(&dst.join(&id)))
            .map_err(|err| format!("copying {id}: {err}"))?;
        println!("copied session {id}");
    }
    let theirs = Locations::load(&src);
    let mut ours = Locations::load(&dst);
    for (id, dir) in theirs.iter() {
        if ours.get(id).is_none() && !dst.join(id).exists() {
            if dry_run {
                println!("would record {id} at {}", dir.display());
            } else {
                ours.insert(id.clone(), dir.clone());
            }
        }
    }
    if !dry_run {
        ours.save_now().map_err(|e| e.to_string())?;
    }
    let their_projects = from.join("projects/projects.json");
    let our_projects = state.join("projects/projects.json");
    if their_projects.is_file() && !our_projects.exists() {
        if dry_run {
            println!("would bring over {}", their_projects.display());
        } else {
            fsio::create_dir_durable(&state.join("projects")).map_err(|e| e.to_string())?;
            fs::copy(&their_projects, &our_projects).map_err(|e| e.to_string())?;
            println!("brought over the projects (converted at the next start)");
        }
    }
    Ok(())
}

fn copy_dir(from: &Path, to: &Path) -> std::io::Result<()> {
    fsio::create_private_dir_all(to)?;
    for e in fs::read_dir(from)? {
        let e = e?;
        let target = to.join(e.file_name());
        let ty = e.file_type()?;
        if ty.is_dir() {
            copy_dir(&e.path(), &target)?;
        } else if ty.is_file() {
            fs::copy(e.path(), &target)?;
        }
    }
    Ok(())
}
