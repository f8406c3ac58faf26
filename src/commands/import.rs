//! `openprogram import <tool> [PATH…]`: another agent tool's histories as
//! sessions. A running server does the import itself (`POST
//! /api/imports`, so its sessions, search and web UI see each turn as it
//! lands); without one, the engine runs here on the state directory, with
//! a progress bar.

use std::process::ExitCode;
use std::sync::Mutex;
use std::time::Duration;

use openprogram_actors::importers::{ImportOptions, ImportSummary, Tool};
use serde_json::{json, Value};

use super::progress::Progress;
use crate::cli::ImportArgs;
use crate::client::{Client, ClientError};
use crate::config::{Config, Overrides};

use crate::state::imports::SETTLE;

pub fn run(args: &ImportArgs) -> ExitCode {
    if args.tool == "doctor" {
        return super::import_doctor::run(args);
    }
    let Some(tool) = Tool::parse(&args.tool) else {
        eprintln!(
            "[error] no importer for '{}' (known: {})",
            args.tool,
            Tool::NAMES.join(", ")
        );
        return ExitCode::from(2);
    };
    let since = match args.since.as_deref().map(parse_since).transpose() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("[error] --since: {e}");
            return ExitCode::from(2);
        }
    };
    let cwd = std::env::current_dir().unwrap_or_default();
    let paths: Vec<_> = args.paths.iter().map(|p| cwd.join(p)).collect();
    let opts = ImportOptions {
        tool,
        paths,
        since,
        dry_run: args.dry_run,
        projects: !args.no_projects,
        settle: SETTLE,
    };
    if args.watch {
        // The mirror's first pass imports what is there.
        return watch(args, tool, &opts.paths);
    }
    let summary = match through_server(args, &opts) {
        Some(Ok(v)) => v,
        Some(Err(e)) => {
            eprintln!("[error] {e}");
            return ExitCode::FAILURE;
        }
        None => match here(args, opts) {
            Ok(s) => serde_json::to_value(s).unwrap_or(Value::Null),
            Err(e) => {
                eprintln!("[error] {e}");
                return ExitCode::FAILURE;
            }
        },
    };
    print_summary(&summary);
    if summary["errors"].as_array().is_some_and(|e| !e.is_empty()) {
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

/// `--watch`: the running server mirrors the tool from now on; without
/// one, this process does until it is interrupted. Either way the mirror
/// first imports what changed since the last run.
fn watch(args: &ImportArgs, tool: Tool, paths: &[std::path::PathBuf]) -> ExitCode {
    if let Ok(client) = Client::connect(&args.target) {
        let body = json!({"tool": tool.as_str(), "paths": paths});
        match client.call("POST", "/api/imports/watch", Some(body)) {
            Ok(_) => {
                println!(
                    "the server mirrors {} from now on, until it stops (`[import] watch` in its configuration keeps it across restarts)",
                    tool.as_str()
                );
                return ExitCode::SUCCESS;
            }
            Err(ClientError::Unreachable { .. }) if args.target.url.is_none() => {}
            Err(e) => {
                eprintln!("[error] {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    let overrides = Overrides {
        config_file: None,
        state_dir: args.target.state_dir.clone(),
        bind: None,
    };
    let config = match Config::load(&overrides) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("[error] {e}");
            return ExitCode::FAILURE;
        }
    };
    let paths = paths.to_vec();
    let res = actix_web::rt::System::new().block_on(async move {
        let (engine, _lock) = crate::startup::start_engine(&config).map_err(|e| e.to_string())?;
        let mirrors = openprogram_actors::importers::watch::Mirrors::new(engine.clone(), SETTLE);
        mirrors.start(tool, paths);
        eprintln!("mirroring {} (Ctrl-C stops)", tool.as_str());
        crate::startup::wait_for_signal().await;
        engine.flush().await;
        engine.stop_maintenance(Duration::from_secs(5)).await;
        engine.close_log().await;
        Ok::<(), String>(())
    });
    match res {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("[error] {e}");
            ExitCode::FAILURE
        }
    }
}

/// Through the running server; None when none runs for the state
/// directory.
fn through_server(args: &ImportArgs, opts: &ImportOptions) -> Option<Result<Value, ClientError>> {
    let client = match Client::connect(&args.target) {
        Ok(c) => c.patient(),
        Err(ClientError::NoServer(_)) => return None,
        Err(e) => return Some(Err(e)),
    };
    let body = json!({
        "tool": opts.tool.as_str(),
        "paths": opts.paths,
        "since": opts.since,
        "dry_run": opts.dry_run,
        "projects": opts.projects,
    });
    // The server's progress, shown while it imports.
    let done = std::sync::atomic::AtomicBool::new(false);
    let answer = std::thread::scope(|scope| {
        scope.spawn(|| follow(args, opts.tool, &done));
        let answer = client.call("POST", "/api/imports", Some(body));
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        answer
    });
    match answer {
        // server.json left by a server that is gone (nothing listens):
        // work here.
        Err(ClientError::Unreachable { .. }) if args.target.url.is_none() => None,
        // A server took the import: it goes on without this command.
        Err(ClientError::Lost { url, reason }) => Some(Err(ClientError::Other(format!(
            "the connection to the server at {url} was lost ({reason}); the server goes on importing: `GET /api/imports` shows its progress"
        )))),
        other => Some(other),
    }
}

/// A progress bar from `GET /api/imports` (the newest run of `tool`)
/// until `done`.
fn follow(args: &ImportArgs, tool: Tool, done: &std::sync::atomic::AtomicBool) {
    let Ok(client) = Client::connect(&args.target) else {
        return;
    };
    let mut bar: Option<Progress> = None;
    while !done.load(std::sync::atomic::Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(250));
        let Ok(v) = client.call("GET", "/api/imports", None) else {
            continue;
        };
        let run = v["running"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|r| r["tool"] == tool.as_str())
            .max_by_key(|r| r["id"].as_u64());
        let Some(run) = run else { continue };
        let total = run["files_total"].as_u64().unwrap_or(0);
        if total == 0 {
            continue;
        }
        bar.get_or_insert_with(|| Progress::new("importing", total))
            .set(run["files_done"].as_u64().unwrap_or(0));
    }
    if let Some(b) = bar {
        b.finish();
    }
}

/// On the state directory, with the engine in this process.
fn here(args: &ImportArgs, opts: ImportOptions) -> Result<ImportSummary, String> {
    let overrides = Overrides {
        config_file: None,
        state_dir: args.target.state_dir.clone(),
        bind: None,
    };
    let config = Config::load(&overrides).map_err(|e| e.to_string())?;
    if opts.dry_run {
        // Counted from the state folder as it is: nothing opened for
        // writing, no lock taken, nothing written.
        let state_dir = config.state_dir().map_err(|e| e.to_string())?;
        let bar = Mutex::new(None::<Progress>);
        let progress = |p: openprogram_actors::importers::ImportProgress| {
            if let Ok(mut bar) = bar.lock() {
                bar.get_or_insert_with(|| Progress::new("counting", p.files_total))
                    .inc();
            }
        };
        let sum = openprogram_actors::importers::dry::count(&opts, &state_dir, &progress);
        if let Ok(mut bar) = bar.lock() {
            if let Some(b) = bar.take() {
                b.finish();
            }
        }
        return Ok(sum);
    }
    actix_web::rt::System::new().block_on(async move {
        let (engine, _lock) = crate::startup::start_engine(&config).map_err(|e| e.to_string())?;
        let bar = Mutex::new(None::<Progress>);
        let progress = |p: openprogram_actors::importers::ImportProgress| {
            if let Ok(mut bar) = bar.lock() {
                bar.get_or_insert_with(|| Progress::new("importing", p.files_total))
                    .inc();
            }
        };
        let result = engine.import_history(opts, &progress).await;
        if let Ok(mut bar) = bar.lock() {
            if let Some(b) = bar.take() {
                b.finish();
            }
        }
        engine.flush().await;
        engine.stop_maintenance(Duration::from_secs(5)).await;
        engine.close_log().await;
        result.map_err(|e| e.to_string())
    })
}

fn print_summary(s: &Value) {
    let n = |k: &str| s[k].as_u64().unwrap_or(0);
    let verb = if s["dry_run"].as_bool() == Some(true) {
        "would import"
    } else {
        "imported"
    };
    println!(
        "{}: {verb} {} turns ({} starting a branch) into {} new and {} updated sessions, from {} files ({} unchanged, {} older than --since)",
        s["tool"].as_str().unwrap_or(""),
        n("turns"),
        n("branches"),
        n("sessions_new"),
        n("sessions_updated"),
        n("files"),
        n("files_unchanged"),
        n("files_older"),
    );
    if n("files") == 0 {
        let places: Vec<&str> = s["looked_in"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        if places.is_empty() {
            println!("  looked nowhere: give the folders to read (or register the projects)");
        } else {
            println!(
                "  no history found in {} (HOME and the tool's own variables, such as CLAUDE_CONFIG_DIR or CODEX_HOME, say where it keeps them; or give the folders)",
                places.join(", ")
            );
        }
    }
    if n("turns_continued") > 0 {
        println!(
            "  {} turns imported before got what the tool wrote of them since",
            n("turns_continued")
        );
    }
    if n("turns_present") > 0 {
        println!("  {} turns were there already", n("turns_present"));
    }
    if n("turns_open") > 0 {
        println!(
            "  {} turns are still being written: run again when they end",
            n("turns_open")
        );
    }
    if let Some(reasons) = s["skipped"]["by_reason"].as_object() {
        for (reason, count) in reasons {
            println!("  skipped {count} lines: {reason}");
        }
        for p in s["skipped"]["first"]
            .as_array()
            .into_iter()
            .flatten()
            .take(10)
        {
            println!(
                "    {}:{}: {}",
                p["file"].as_str().unwrap_or(""),
                p["line"],
                p["reason"].as_str().unwrap_or("")
            );
        }
    }
    for e in s["errors"].as_array().into_iter().flatten() {
        println!(
            "  [error] {}: {}",
            e["file"].as_str().unwrap_or(""),
            e["reason"].as_str().unwrap_or("")
        );
    }
}

/// `2025-06-01`, an RFC 3339 time, or seconds since the epoch.
fn parse_since(s: &str) -> Result<f64, String> {
    if let Ok(secs) = s.parse::<f64>() {
        return Ok(secs);
    }
    let full = if s.len() == 10 {
        format!("{s}T00:00:00Z")
    } else {
        s.to_string()
    };
    openprogram_actors::importers::model::parse_time(&full)
        .ok_or_else(|| format!("'{s}' is not a date (2025-06-01), an RFC 3339 time or seconds"))
}
