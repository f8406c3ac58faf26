//! `openprogram sessions …`

use std::process::ExitCode;

use serde_json::{json, Value};

use crate::cli::{ServerTarget, SessionsCommand};
use crate::client::{Client, ClientError};

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
    println!("ID\tSTATUS\tUPDATED (UTC)\tFLAGS\tTITLE");
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
            "{}\t{}\t{}\t{}\t{}",
            r["id"].as_str().unwrap_or(""),
            r["status"].as_str().unwrap_or(""),
            utc_minute(r["updated_at"].as_f64().unwrap_or(0.0)),
            flags.join(","),
            title
        );
    }
}

/// `YYYY-MM-DD HH:MM` (UTC) of seconds since the epoch.
pub fn utc_minute(secs: f64) -> String {
    let secs = secs.max(0.0) as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}",
        rem / 3600,
        (rem % 3600) / 60
    )
}

fn fail(message: &str) -> ExitCode {
    eprintln!("[error] {message}");
    ExitCode::FAILURE
}

#[cfg(test)]
mod tests {
    #[test]
    fn utc_minutes() {
        assert_eq!(super::utc_minute(0.0), "1970-01-01 00:00");
        assert_eq!(super::utc_minute(1_796_131_260.0), "2026-12-01 13:21");
        assert_eq!(super::utc_minute(951_782_400.0), "2000-02-29 00:00");
    }
}
