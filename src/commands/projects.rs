//! `openprogram projects …`

use std::process::ExitCode;

use serde_json::json;

use crate::cli::{ProjectsCommand, ServerTarget};
use crate::client::{Client, ClientError};

pub fn run(target: &ServerTarget, command: ProjectsCommand) -> ExitCode {
    let client = match Client::connect(target) {
        Ok(c) => c,
        Err(e) => return fail(&e),
    };
    match command {
        ProjectsCommand::List => match client.call("GET", "/api/projects", None) {
            Ok(v) => {
                for p in v["projects"].as_array().cloned().unwrap_or_default() {
                    let missing = if p["path_missing"].as_bool() == Some(true) {
                        "\t[folder missing]"
                    } else {
                        ""
                    };
                    println!(
                        "{}\t{}\t{}\t{} sessions{missing}",
                        p["id"].as_str().unwrap_or(""),
                        p["name"].as_str().unwrap_or(""),
                        p["path"].as_str().unwrap_or(""),
                        p["session_count"].as_u64().unwrap_or(0)
                    );
                }
                ExitCode::SUCCESS
            }
            Err(e) => fail(&e),
        },
        ProjectsCommand::Create { path, name } => {
            let path = absolute(&path);
            match client.call(
                "POST",
                "/api/projects",
                Some(json!({"path": path, "name": name})),
            ) {
                Ok(p) => {
                    println!(
                        "Project {} ({}) at {}",
                        p["id"].as_str().unwrap_or(""),
                        p["name"].as_str().unwrap_or(""),
                        p["path"].as_str().unwrap_or("")
                    );
                    ExitCode::SUCCESS
                }
                Err(e) => fail(&e),
            }
        }
        ProjectsCommand::Relocate { id, path } => {
            let path = absolute(&path);
            match client.call(
                "POST",
                &format!("/api/projects/{id}/relocate"),
                Some(json!({"path": path})),
            ) {
                Ok(r) => {
                    println!(
                        "Relocated project {id}: {} → {}",
                        r["old_path"].as_str().unwrap_or(""),
                        r["path"].as_str().unwrap_or("")
                    );
                    ExitCode::SUCCESS
                }
                Err(ClientError::Api { status: 404, .. }) => {
                    fail_msg(&format!("no project '{id}' found."))
                }
                Err(e) => fail(&e),
            }
        }
    }
}

/// The CLI accepts paths relative to where it runs; the server only takes
/// absolute ones.
fn absolute(path: &str) -> String {
    let p = std::path::Path::new(path);
    if p.is_absolute() {
        return path.to_string();
    }
    std::env::current_dir()
        .map(|d| d.join(p).display().to_string())
        .unwrap_or_else(|_| path.to_string())
}

fn fail(e: &ClientError) -> ExitCode {
    fail_msg(&e.to_string())
}

fn fail_msg(message: &str) -> ExitCode {
    eprintln!("[error] {message}");
    ExitCode::FAILURE
}
