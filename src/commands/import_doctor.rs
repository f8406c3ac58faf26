//! `openprogram import doctor [--json]`: per tool, the versions that wrote
//! its files, the record types seen and those no reader knows (with their
//! first place), the files the tool has since deleted whose conversations
//! are kept here, and, with a server running, how its live mirrors are
//! doing (their lag and their last problems). Reads only.

use std::process::ExitCode;

use openprogram_actors::importers::doctor::{self, ToolReport};
use openprogram_actors::importers::Tool;
use serde_json::{json, Value};

use crate::cli::ImportArgs;
use crate::client::Client;
use crate::config::{Config, Overrides};

const TOOLS: [Tool; 5] = [
    Tool::ClaudeCode,
    Tool::Codex,
    Tool::GeminiCli,
    Tool::Opencode,
    Tool::Aider,
];

pub fn run(args: &ImportArgs) -> ExitCode {
    let overrides = Overrides {
        config_file: None,
        state_dir: args.target.state_dir.clone(),
        bind: None,
    };
    let state_dir = match Config::load(&overrides).and_then(|c| c.state_dir()) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("[error] {e}");
            return ExitCode::FAILURE;
        }
    };
    let cwd = std::env::current_dir().unwrap_or_default();
    let paths: Vec<_> = args.paths.iter().map(|p| cwd.join(p)).collect();
    let reports: Vec<ToolReport> = TOOLS
        .iter()
        .map(|&t| doctor::report(t, &paths, &state_dir))
        .collect();
    // The mirrors, from the server when one runs.
    let mirrors = Client::connect(&args.target)
        .ok()
        .and_then(|c| c.call("GET", "/api/imports", None).ok())
        .map(|v| v["mirrors"].clone());
    if args.json {
        let out = json!({"tools": reports, "mirrors": mirrors});
        println!("{}", serde_json::to_string_pretty(&out).unwrap_or_default());
        return ExitCode::SUCCESS;
    }
    for r in &reports {
        print_report(r);
    }
    match mirrors {
        None => println!("mirrors: no server runs for this state folder"),
        Some(Value::Array(m)) if m.is_empty() => println!("mirrors: none running"),
        Some(m) => print_mirrors(&m),
    }
    ExitCode::SUCCESS
}

fn print_report(r: &ToolReport) {
    let roots: Vec<String> = r.roots.iter().map(|p| p.display().to_string()).collect();
    if roots.is_empty() {
        println!(
            "{}: no folder to look in (name the repositories: import doctor PATH…)",
            r.tool
        );
        return;
    }
    println!("{}: {} files in {}", r.tool, r.files, roots.join(", "));
    if r.files == 0 {
        return;
    }
    let versions: Vec<String> = r
        .versions
        .iter()
        .map(|(v, n)| format!("{v} ({n} files)"))
        .collect();
    if !versions.is_empty() {
        println!("  versions: {}", versions.join(", "));
    }
    let types: Vec<String> = r.types.iter().map(|(k, n)| format!("{k} {n}")).collect();
    if !types.is_empty() {
        println!("  record types: {}", types.join(", "));
    }
    for u in &r.unknown {
        println!(
            "  not understood: {} x{} (first: {} line {})",
            u.kind, u.count, u.first.file, u.first.line
        );
    }
    for k in &r.deleted {
        println!(
            "  deleted by the tool, kept here: {} -> session {}",
            k.file.display(),
            k.session
        );
    }
}

fn print_mirrors(m: &Value) {
    for s in m.as_array().into_iter().flatten() {
        let lag = |k: &str| {
            s[k].as_f64()
                .map_or("-".to_string(), |l| format!("{l:.2} s"))
        };
        println!(
            "mirror {}: {} imports, lag last {} max {}, {} files waiting",
            s["tool"].as_str().unwrap_or(""),
            s["imports"].as_u64().unwrap_or(0),
            lag("last_lag_s"),
            lag("max_lag_s"),
            s["files_waiting"].as_u64().unwrap_or(0)
        );
        for e in s["errors"].as_array().into_iter().flatten() {
            println!("  problem: {}", e.as_str().unwrap_or(""));
        }
    }
}
