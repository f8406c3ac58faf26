//! `openprogram search "query"` and `openprogram search --reindex`.

use std::process::ExitCode;

use serde_json::Value;

use crate::cli::SearchArgs;
use crate::client::{Client, ClientError};
use crate::config::state_dir_or_default;

pub fn run(args: &SearchArgs) -> ExitCode {
    let configured = args
        .target
        .state_dir
        .as_ref()
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    let dir = state_dir_or_default(&configured).ok();
    let running =
        args.target.url.is_some() || dir.as_deref().is_some_and(super::status::server_running);
    if args.reindex {
        if running {
            return match Client::connect(&args.target)
                .and_then(|c| c.call("POST", "/api/search/reindex", None))
            {
                Ok(v) => {
                    println!("reindexing {} sessions in the background", v["sessions"]);
                    ExitCode::SUCCESS
                }
                Err(e) => fail(&e),
            };
        }
        let Some(dir) = dir else {
            eprintln!("[error] no state directory: pass --state-dir");
            return ExitCode::from(2);
        };
        crate::telemetry::init(Default::default());
        return match openprogram_actors::search::Search::rebuild_offline(&super::read_store(&dir)) {
            Ok(n) => {
                println!("reindexed {n} sessions in {}", dir.display());
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("[error] {e}");
                ExitCode::FAILURE
            }
        };
    }
    let query = args.query.clone().unwrap_or_default();
    let client = match Client::connect(&args.target) {
        Ok(c) => c,
        Err(e) => return fail(&e),
    };
    let mut path = format!(
        "/api/search?q={}&limit={}",
        encode(&query),
        args.limit.clamp(1, 1000)
    );
    if args.sessions {
        path.push_str("&group=session");
    }
    match client.call("GET", &path, None) {
        Ok(found) => {
            print_found(&found);
            ExitCode::SUCCESS
        }
        Err(e) => fail(&e),
    }
}

fn print_found(found: &Value) {
    let plain = |html: &str| {
        html.replace("<b>", "\u{1b}[1m")
            .replace("</b>", "\u{1b}[0m")
            .replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&quot;", "\"")
            .replace("&#x27;", "'")
            .replace("&amp;", "&")
    };
    let bold = std::io::IsTerminal::is_terminal(&std::io::stdout());
    // One line per hit: a snippet's line breaks become spaces, and a long
    // one is cut.
    let show = |html: &str| {
        let s = one_line(&plain(html), SNIPPET_CHARS);
        if bold {
            s
        } else {
            s.replace("\u{1b}[1m", "").replace("\u{1b}[0m", "")
        }
    };
    if let Some(sessions) = found["sessions"].as_array() {
        println!("{}", count(&found["total"], "session", "sessions"));
        for s in sessions {
            println!(
                "{}  {}",
                s["session_id"].as_str().unwrap_or(""),
                s["title"].as_str().unwrap_or("")
            );
            for h in s["hits"].as_array().into_iter().flatten() {
                println!("    {}", show(h["snippet"].as_str().unwrap_or("")));
            }
        }
        return;
    }
    let hits = found["hits"].as_array().cloned().unwrap_or_default();
    println!("{}", count(&found["total"], "hit", "hits"));
    for h in hits {
        let place = match (h["branch"].as_str(), h["turn"].as_u64()) {
            (Some(b), Some(t)) => format!("{b} turn {t}"),
            _ => h["role"].as_str().unwrap_or("").to_string(),
        };
        println!(
            "{}  [{}] {}  {}",
            h["session_id"].as_str().unwrap_or(""),
            place,
            h["role"].as_str().unwrap_or(""),
            show(h["snippet"].as_str().unwrap_or(""))
        );
    }
}

/// Characters of a snippet printed (the rest is cut, with "…").
const SNIPPET_CHARS: usize = 160;

/// "1 hit", "2 hits".
fn count(total: &Value, one: &str, many: &str) -> String {
    let n = total.as_u64().unwrap_or(0);
    format!("{n} {}", if n == 1 { one } else { many })
}

/// `text` on one line (runs of whitespace, line breaks included, become
/// one space), cut to `max` characters with "…".
fn one_line(text: &str, max: usize) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= max {
        return flat;
    }
    let mut cut: String = flat.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    if cut.contains('\u{1b}') {
        // A bold run cut short ends here.
        cut.push_str("\u{1b}[0m");
    }
    cut
}

/// Percent-encode a query parameter value.
fn encode(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

fn fail(e: &ClientError) -> ExitCode {
    eprintln!("[error] {e}");
    ExitCode::FAILURE
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hit_is_one_line_and_counts_read_as_words() {
        assert_eq!(one_line("a\n\nb\tc  d", 20), "a b c d");
        let long = "word ".repeat(100);
        let cut = one_line(&long, 30);
        assert_eq!(cut.chars().count(), 30);
        assert!(cut.ends_with('…'));
        assert_eq!(count(&serde_json::json!(1), "hit", "hits"), "1 hit");
        assert_eq!(count(&serde_json::json!(0), "hit", "hits"), "0 hits");
        assert_eq!(count(&serde_json::json!(7), "hit", "hits"), "7 hits");
    }
}
