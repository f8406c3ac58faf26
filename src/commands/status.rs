//! `openprogram status`: whether a server runs for a state directory.
//! The server holds `server.lock`; `server.json` alone (left by a crash)
//! means no server.

use std::process::ExitCode;

use crate::cli::{ServerTarget, StateDirArg};
use crate::client::Client;
use crate::client::{ServerInfo, SERVER_INFO};

/// Whether a server holds the state directory's lock right now.
pub fn server_running(state_dir: &std::path::Path) -> bool {
    let Ok(file) = std::fs::OpenOptions::new()
        .read(true)
        .open(state_dir.join(crate::client::LOCK_FILE))
    else {
        return false;
    };
    match file.try_lock() {
        Ok(()) => {
            let _ = file.unlock();
            false
        }
        Err(_) => true,
    }
}

pub fn run(args: &StateDirArg) -> ExitCode {
    let dir = match args.resolve() {
        Ok(d) => d,
        Err(code) => return code,
    };
    let info: Option<ServerInfo> = std::fs::read(dir.join(SERVER_INFO))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok());
    if !server_running(&dir) {
        match info {
            Some(i) => println!(
                "no server running for {} (server.json was left by pid {}, which did not stop cleanly)",
                dir.display(),
                i.pid
            ),
            None => println!("no server running for {}", dir.display()),
        }
        return ExitCode::from(1);
    }
    let Some(info) = info else {
        println!(
            "a server holds {} but wrote no server.json yet (starting?)",
            dir.display()
        );
        return ExitCode::SUCCESS;
    };
    let uptime = (openprogram_actors::meta::now() - info.started_at).max(0.0);
    println!("server running for {}", dir.display());
    println!("  address   {}", info.url);
    println!("  pid       {}", info.pid);
    println!("  uptime    {}", human_duration(uptime));
    let target = ServerTarget {
        url: Some(info.url.clone()),
        state_dir: Some(dir.clone()),
        token: None,
    };
    match Client::connect(&target).and_then(|c| c.call("GET", "/api/health", None)) {
        Ok(h) => {
            println!("  version   {}", h["version"].as_str().unwrap_or("?"));
            println!("  sessions  {}", h["registry"]["sessions"]);
            println!("  live      {} session actors", h["live_sessions"]);
        }
        Err(e) => println!("  (health check failed: {e})"),
    }
    ExitCode::SUCCESS
}

fn human_duration(secs: f64) -> String {
    let s = secs as u64;
    match s {
        0..=59 => format!("{s}s"),
        60..=3599 => format!("{}m {}s", s / 60, s % 60),
        3600..=86_399 => format!("{}h {}m", s / 3600, (s % 3600) / 60),
        _ => format!("{}d {}h", s / 86_400, (s % 86_400) / 3600),
    }
}
