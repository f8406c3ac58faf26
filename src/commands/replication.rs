//! `openprogram replication status|push --all` (through the running
//! server), `openprogram restore --from REMOTE` and the remote lookup
//! `fsck --remote` shares (on a state directory).

use std::path::Path;
use std::process::ExitCode;

use openprogram_actors::locations::Locations;
use openprogram_actors::replication::{remote::redact, restore, RemoteConfig};
use serde_json::json;

use crate::cli::{ReplicationCommand, RestoreArgs, ServerTarget};
use crate::client::{Client, ClientError};

pub fn run(target: &ServerTarget, command: ReplicationCommand) -> ExitCode {
    let client = match Client::connect(target) {
        Ok(c) => c,
        Err(e) => return fail(&e),
    };
    match command {
        ReplicationCommand::Status => match client.call("GET", "/api/replication", None) {
            Ok(v) => {
                let remotes = v["remotes"].as_array().cloned().unwrap_or_default();
                if remotes.is_empty() {
                    println!("no replication remote is configured ([[replication.remotes]])");
                }
                for r in remotes {
                    println!(
                        "{}\t{}\t{}\t{}\tqueue {}\tlag {:.1} s\tpushes {}\tfailures {}",
                        r["name"].as_str().unwrap_or(""),
                        r["mode"].as_str().unwrap_or(""),
                        r["layout"].as_str().unwrap_or(""),
                        r["url"].as_str().unwrap_or(""),
                        r["queue"].as_u64().unwrap_or(0),
                        r["lag_seconds"].as_f64().unwrap_or(0.0),
                        r["pushes"].as_u64().unwrap_or(0),
                        r["failures"].as_u64().unwrap_or(0),
                    );
                    if let Some(e) = r["last_error"]["message"].as_str() {
                        println!("\tlast error: {e}");
                    }
                }
                ExitCode::SUCCESS
            }
            Err(e) => fail(&e),
        },
        ReplicationCommand::Push { remote, .. } => {
            match client.call(
                "POST",
                "/api/replication/push",
                Some(json!({ "remote": remote })),
            ) {
                Ok(v) => {
                    println!(
                        "{} sessions queued for {}",
                        v["queued"].as_u64().unwrap_or(0),
                        remote.as_deref().unwrap_or("every remote")
                    );
                    ExitCode::SUCCESS
                }
                Err(e) => fail(&e),
            }
        }
    }
}

fn fail(e: &ClientError) -> ExitCode {
    eprintln!("[error] {e}");
    ExitCode::from(1)
}

/// A remote named in the configuration, or given as a URL.
pub fn find_remote(spec: &str, config: Option<&Path>) -> Result<RemoteConfig, String> {
    let looks_like_url = spec.contains("://") || spec.starts_with('/') || spec.contains('@');
    if looks_like_url {
        return Ok(RemoteConfig {
            name: "cli".into(),
            url: spec.to_string(),
            ..RemoteConfig::default()
        });
    }
    let loaded = crate::config::Config::load(&crate::config::Overrides {
        config_file: config.map(Path::to_path_buf),
        state_dir: None,
        bind: None,
    })
    .map_err(|e| e.to_string())?;
    loaded
        .replication
        .remotes
        .into_iter()
        .find(|r| r.name == spec)
        .ok_or_else(|| {
            format!("no replication remote named {spec:?} in the configuration (give --config, or a URL)")
        })
}

/// `openprogram restore`.
pub fn restore(args: &RestoreArgs) -> ExitCode {
    let dir = match args.dir.resolve() {
        Ok(d) => d,
        Err(code) => return code,
    };
    if super::status::server_running(&dir) {
        eprintln!(
            "[error] a server is running on {}; stop it before `restore`",
            dir.display()
        );
        return ExitCode::from(2);
    }
    let remote = match find_remote(&args.from, args.config.as_deref()) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("[error] {e}");
            return ExitCode::from(2);
        }
    };
    if let Err(e) = openprogram_actors::fsio::create_private_dir_all(&dir) {
        eprintln!("[error] {}: {e}", dir.display());
        return ExitCode::from(2);
    }
    // The state folder's lock, held for the whole run: a server started
    // meanwhile refuses to start instead of clearing the restore's
    // folders as left by a crash.
    let _lock = match crate::startup::claim_state_dir(&dir, &dir.join("sessions")) {
        Ok(lock) => lock,
        Err(e) => {
            eprintln!("[error] {e}");
            return ExitCode::from(2);
        }
    };
    let store = match super::open_store(&dir) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let taken = Locations::load(store.sessions_dir())
        .iter()
        .map(|(id, _)| id.clone())
        .collect();
    println!(
        "restoring from {} into {}",
        redact(&remote.url),
        dir.display()
    );
    let result = restore::restore(&store, &remote, &args.sessions, &taken, |id| {
        tracing::debug!(session = id, "restoring");
    });
    store.close_log();
    match result {
        Ok(r) => {
            println!(
                "restored {} sessions; {} already here; {} failed; {} projects registered again",
                r.restored.len(),
                r.present.len(),
                r.failed.len(),
                r.projects
            );
            for (id, why) in &r.failed {
                println!("  failed: session {id}: {why}");
            }
            if r.failed.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            }
        }
        Err(e) => {
            eprintln!("[error] {e}");
            ExitCode::from(1)
        }
    }
}
