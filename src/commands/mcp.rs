//! `openprogram mcp`: the MCP server over stdio, for an agent that starts
//! it as a subprocess (Claude Code, Codex, Gemini CLI and most MCP clients).
//!
//! With a server running for the state directory, each JSON-RPC message
//! read from stdin is posted to the server's `/mcp` (with its token) and
//! the answer written to stdout: one MCP server, whichever way it is
//! reached, and the server's sessions, search and engine are the ones
//! asked. Without one, the engine runs in this process on the state
//! directory (holding its lock, as `serve` does) and the SDK's stdio
//! transport serves the same tools.

use std::io::{BufRead, Write};
use std::process::ExitCode;

use serde_json::Value;

use crate::cli::McpArgs;
use crate::client::{Client, ClientError};
use crate::config::{Config, Overrides};

pub fn run(args: &McpArgs) -> ExitCode {
    let outcome = match Client::connect(&args.target) {
        Ok(client) => bridge(&client),
        Err(ClientError::NoServer(_)) => in_process(args),
        Err(e) => Err(e.to_string()),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("[error] {e}");
            ExitCode::FAILURE
        }
    }
}

/// Each message from stdin to the server's `/mcp`, each answer to stdout.
fn bridge(client: &Client) -> Result<(), String> {
    let stdin = std::io::stdin();
    let mut stdout = std::io::stdout().lock();
    // The protocol version the first answer negotiated, sent with every
    // later message (as an HTTP client of the transport does).
    let mut version: Option<String> = None;
    for line in stdin.lock().lines() {
        let line = line.map_err(|e| e.to_string())?;
        if line.trim().is_empty() {
            continue;
        }
        let mut headers = vec![
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
        ];
        if let Some(v) = &version {
            headers.push(("MCP-Protocol-Version", v.as_str()));
        }
        let (status, kind, body) = client
            .post_raw("/mcp", &line, &headers)
            .map_err(|e| e.to_string())?;
        let messages: Vec<String> = if kind.starts_with("text/event-stream") {
            body.lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .map(|d| d.trim().to_string())
                .filter(|d| !d.is_empty())
                .collect()
        } else if body.trim().is_empty() {
            Vec::new()
        } else {
            vec![body]
        };
        if messages.is_empty() && status >= 400 {
            // A refusal of the transport itself (a notification has no
            // answer to carry it): said on stderr, the session goes on.
            eprintln!("[warn] /mcp answered {status}");
        }
        for m in messages {
            if version.is_none() {
                version = serde_json::from_str::<Value>(&m)
                    .ok()
                    .and_then(|v| v["result"]["protocolVersion"].as_str().map(str::to_string));
            }
            writeln!(stdout, "{}", m.replace('\n', " ")).map_err(|e| e.to_string())?;
            stdout.flush().map_err(|e| e.to_string())?;
        }
    }
    Ok(())
}

/// No server: the engine here, the SDK's stdio transport.
fn in_process(args: &McpArgs) -> Result<(), String> {
    use rmcp::ServiceExt;
    let overrides = Overrides {
        config_file: None,
        state_dir: args.target.state_dir.clone(),
        bind: None,
    };
    let config = Config::load(&overrides).map_err(|e| e.to_string())?;
    let base_url = format!("http://{}", config.server.bind);
    actix_web::rt::System::new().block_on(async move {
        let (engine, _lock) = crate::startup::start_engine(&config).map_err(|e| e.to_string())?;
        let server =
            crate::mcp::MemoryServer::new(engine.clone(), base_url, config.mcp.allow_writes);
        let served = match server.serve(rmcp::transport::stdio()).await {
            Ok(running) => running
                .waiting()
                .await
                .map(|_| ())
                .map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        };
        engine.flush().await;
        engine
            .stop_maintenance(std::time::Duration::from_secs(5))
            .await;
        engine.close_log().await;
        served
    })
}
