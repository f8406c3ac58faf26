//! `openprogram purge SESSION | --all`: a session's history rewritten with
//! its secrets replaced (see `openprogram_actors::session::purge`). A
//! running server does it (`POST /api/sessions/{id}/purge`, `POST
//! /api/purge`), so its sessions, search and replicas follow; without
//! one, the engine runs here on the state directory.

use std::process::ExitCode;
use std::time::Duration;

use serde_json::{json, Value};

use crate::cli::PurgeArgs;
use crate::client::{Client, ClientError};
use crate::config::{Config, Overrides};

pub fn run(args: &PurgeArgs) -> ExitCode {
    let by = format!(
        "cli:{}",
        std::env::var("USER").unwrap_or_else(|_| "unknown".into())
    );
    let answer = match through_server(args, &by) {
        Some(a) => a.map_err(|e| e.to_string()),
        None => here(args, &by),
    };
    let outcome = match answer {
        Ok(v) => v,
        Err(e) => {
            eprintln!("[error] {e}");
            return ExitCode::FAILURE;
        }
    };
    let all: Vec<Value> = match &outcome {
        Value::Array(items) => items.clone(),
        one => vec![one.clone()],
    };
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&outcome).unwrap_or_default()
        );
    } else {
        print_outcome(&all);
    }
    if all
        .iter()
        .any(|p| p["not_pushed"].as_array().is_some_and(|a| !a.is_empty()))
    {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

fn print_outcome(all: &[Value]) {
    let purged: Vec<&Value> = all.iter().filter(|p| !p["record"].is_null()).collect();
    if purged.is_empty() {
        println!("nothing to purge: no stored text holds a secret the rules find");
    }
    for p in purged {
        let r = &p["record"];
        let kinds: Vec<String> = r["kinds"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(k, n)| format!("{n} × {k}"))
            .collect();
        println!(
            "{}: {} commits rewritten, {} stored files, {} work-tree files ({}); purge {}",
            p["session"].as_str().unwrap_or(""),
            r["commits"].as_array().map_or(0, Vec::len),
            r["blobs"],
            r["files"],
            kinds.join(", "),
            r["id"].as_str().unwrap_or("")
        );
        for why in p["not_pushed"].as_array().into_iter().flatten() {
            println!("  [not pushed] {}", why.as_str().unwrap_or(""));
        }
    }
}

/// Through the running server; None when none runs for the state
/// directory.
fn through_server(args: &PurgeArgs, by: &str) -> Option<Result<Value, ClientError>> {
    let client = match Client::connect(&args.target) {
        Ok(c) => c.patient(),
        Err(ClientError::NoServer(_)) => return None,
        Err(e) => return Some(Err(e)),
    };
    let answer = match &args.session {
        Some(id) if !args.all => client.call(
            "POST",
            &format!("/api/sessions/{id}/purge"),
            Some(json!({ "by": by })),
        ),
        _ => client.call("POST", "/api/purge", Some(json!({ "all": true, "by": by }))),
    };
    match answer {
        // server.json left by a server that is gone: work here.
        Err(ClientError::Unreachable { .. }) if args.target.url.is_none() => None,
        other => Some(other),
    }
}

/// On the state directory, with the engine in this process.
fn here(args: &PurgeArgs, by: &str) -> Result<Value, String> {
    let overrides = Overrides {
        config_file: None,
        state_dir: args.target.state_dir.clone(),
        bind: None,
    };
    let config = Config::load(&overrides).map_err(|e| e.to_string())?;
    actix_web::rt::System::new().block_on(async move {
        let (engine, _lock) = crate::startup::start_engine(&config).map_err(|e| e.to_string())?;
        let result = match &args.session {
            Some(id) if !args.all => engine
                .purge(id, by)
                .await
                .map(|p| serde_json::to_value(p).unwrap_or_default()),
            _ => engine
                .purge_all(by)
                .await
                .map(|p| serde_json::to_value(p).unwrap_or_default()),
        };
        engine.flush().await;
        engine.stop_maintenance(Duration::from_secs(5)).await;
        engine.close_log().await;
        result.map_err(|e| e.to_string())
    })
}
