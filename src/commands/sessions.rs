//! `openprogram sessions …`

use std::process::ExitCode;

use serde_json::{json, Value};

use super::client::{Client, ClientError};
use crate::cli::{ServerTarget, SessionsCommand};

pub fn run(target: &ServerTarget, command: SessionsCommand) -> ExitCode {
    let client = match Client::connect(target) {
        Ok(c) => c,
        Err(e) => return fail(&e.to_string()),
    };
    let not_found = |id: &str| fail(&format!("no session '{id}' found."));
    match command {
        SessionsCommand::List { archived, all } => {
            let query = if archived {
                "?archived=true&limit=10000"
            } else if all {
                "?include_archived=true&limit=10000"
            } else {
                "?limit=10000"
            };
            match client.call("GET", &format!("/api/sessions{query}"), None) {
                Ok(page) => {
                    print_list(&page);
                    ExitCode::SUCCESS
                }
                Err(e) => fail(&e.to_string()),
            }
        }
        SessionsCommand::Show { id } => {
            match client.call("GET", &format!("/api/sessions/{id}"), None) {
                Ok(meta) => {
                    println!(
                        "{}",
                        serde_json::to_string_pretty(&meta).unwrap_or_default()
                    );
                    ExitCode::SUCCESS
                }
                Err(ClientError::Api { status: 404, .. }) => not_found(&id),
                Err(e) => fail(&e.to_string()),
            }
        }
        SessionsCommand::Archive { id } => archive(&client, &id, true),
        SessionsCommand::Unarchive { id } => archive(&client, &id, false),
        SessionsCommand::Delete { id } => {
            match client.call("DELETE", &format!("/api/sessions/{id}"), None) {
                Ok(_) => {
                    println!("Deleted session {id}");
                    ExitCode::SUCCESS
                }
                Err(ClientError::Api { status: 404, .. }) => not_found(&id),
                Err(e) => fail(&e.to_string()),
            }
        }
    }
}

fn archive(client: &Client, id: &str, archived: bool) -> ExitCode {
    let route = if archived {
        "/api/sessions/archive"
    } else {
        "/api/sessions/unarchive"
    };
    match client.call("POST", route, Some(json!({ "session_id": id }))) {
        Ok(_) => {
            println!(
                "{} session {id}",
                if archived { "Archived" } else { "Unarchived" }
            );
            ExitCode::SUCCESS
        }
        Err(ClientError::Api { status: 404, .. }) => fail(&format!("no session '{id}' found.")),
        Err(e) => fail(&e.to_string()),
    }
}

fn print_list(page: &Value) {
    let rows = page["sessions"].as_array().cloned().unwrap_or_default();
    if rows.is_empty() {
        println!("No sessions.");
        return;
    }
    for r in rows {
        let title = r["title"]
            .as_str()
            .filter(|t| !t.is_empty())
            .or(r["preview"].as_str())
            .unwrap_or("");
        let mut flags = Vec::new();
        if r["pinned"].as_bool() == Some(true) {
            flags.push("pinned");
        }
        if r["archived"].as_bool() == Some(true) {
            flags.push("archived");
        }
        if r["unread"].as_bool() == Some(true) {
            flags.push("unread");
        }
        println!(
            "{}\t{}\t{}\t{}",
            r["id"].as_str().unwrap_or(""),
            r["status"].as_str().unwrap_or(""),
            flags.join(","),
            title
        );
    }
}

fn fail(message: &str) -> ExitCode {
    eprintln!("[error] {message}");
    ExitCode::FAILURE
}
