//! False positives: how much ordinary technical text the rules alter. The
//! corpus is every record of the real agents' recordings in
//! `tests/agents/recordings` (prompts, replies, tool calls and their
//! output: code, paths, UUIDs, hashes, commands), every paragraph of this
//! engine's own source, and generated lines of what agent output is full of
//! (git SHAs, UUIDs, SHA-256 sums, base64 of short strings, URLs without
//! credentials, documented example keys). At most 1 % of its messages may
//! be altered; the figure is printed (docs/BENCHMARKS.md).

use std::path::{Path, PathBuf};
use std::time::Instant;

use super::*;

fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            files_under(&p, out);
        } else {
            out.push(p);
        }
    }
}

/// The corpus, one message per entry, by source.
fn corpus() -> Vec<(&'static str, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut out = Vec::new();
    let mut files = Vec::new();
    files_under(&root.join("tests/agents/recordings"), &mut files);
    files.sort();
    for f in files {
        let Ok(text) = std::fs::read_to_string(&f) else {
            continue;
        };
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            out.push(("agent recordings", line.to_string()));
        }
    }
    let mut files = Vec::new();
    files_under(&root.join("actors/src"), &mut files);
    files.sort();
    for f in files {
        // The redactor's own rules and test secrets are not ordinary text.
        if f.components().any(|c| c.as_os_str() == "redact") {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&f) else {
            continue;
        };
        for para in text.split("\n\n").filter(|p| !p.trim().is_empty()) {
            out.push(("engine source", para.to_string()));
        }
    }
    let mut x: u64 = 0x2545_F491_4F6C_DD1D;
    let mut hex = |n: usize| -> String {
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                char::from(b"0123456789abcdef"[(x % 16) as usize])
            })
            .collect()
    };
    for i in 0..2_000 {
        let line = match i % 8 {
            0 => format!("commit {}", hex(40)),
            1 => format!(
                "request {}-{}-4{}-a{}-{}",
                hex(8),
                hex(4),
                hex(3),
                hex(3),
                hex(12)
            ),
            2 => format!("sha256:{}  target/release/app", hex(64)),
            3 => format!("Merge {} into {}", hex(7), hex(7)),
            4 => "echo aGVsbG8gd29ybGQ= | base64 -d".to_string(),
            5 => format!("see https://github.com/rust-lang/regex/pull/{i} and http://localhost:{}/api/health", 3000 + i),
            6 => "The AWS docs use AKIAIOSFODNN7EXAMPLE and wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY.".to_string(),
            _ => format!("integrity sha512-{}== in package-lock.json", hex(40)),
        };
        out.push(("generated", line));
    }
    out
}

#[test]
fn ordinary_text_is_altered_in_at_most_one_percent_of_messages() {
    let r = Redactor::with_key(&RedactionConfig::default(), vec![3; 32]).unwrap();
    let policy = r.scan_policy();
    let corpus = corpus();
    assert!(corpus.len() > 5_000, "corpus of {} messages", corpus.len());
    let bytes: usize = corpus.iter().map(|(_, m)| m.len()).sum();
    let started = Instant::now();
    let mut altered: Vec<(&str, String)> = Vec::new();
    for (source, message) in &corpus {
        let mut found = Vec::new();
        if r.redact_text(&policy, message, "/m", &mut found)
            .unwrap()
            .is_some()
        {
            let kinds: Vec<&str> = found.iter().map(|f| f.kind.as_str()).collect();
            altered.push((*source, kinds.join(",")));
        }
    }
    let took = started.elapsed();
    let share = altered.len() as f64 / corpus.len() as f64;
    println!(
        "false positives: {} of {} messages ({:.2} %), {:.1} MB scanned at {:.1} MB/s; kinds: {:?}",
        altered.len(),
        corpus.len(),
        share * 100.0,
        bytes as f64 / 1e6,
        bytes as f64 / 1e6 / took.as_secs_f64(),
        altered
    );
    assert!(share <= 0.01, "{:.2} % altered: {altered:?}", share * 100.0);
}
