//! `--redaction ROUNDS`: what redaction costs. The redactor alone on the
//! load's whole turns (about 3 KB of prose) and on real agents' records
//! (the recordings in tests/agents/recordings), per turn and per MB; then
//! the one-request load and the Claude Code import, each run with
//! redaction on and off in alternation, ROUNDS times, medians compared.

use std::path::Path;
use std::time::Instant;

use openprogram_actors::redact::{RedactionConfig, Redactor};

use crate::import::{run_import, write_transcripts};
use crate::load::{bench_load, TurnShape};

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

fn pass(ok: bool) -> &'static str {
    if ok {
        "PASS"
    } else {
        "FAIL"
    }
}

/// Every record of the recordings, as text.
fn recorded_records() -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/agents/recordings");
    let mut out = Vec::new();
    let mut stack = vec![root];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if let Ok(text) = std::fs::read_to_string(&p) {
                out.extend(text.lines().map(str::to_owned));
            }
        }
    }
    out
}

pub fn bench_redaction(dir: &Path, rounds: usize) {
    let r = Redactor::with_key(&RedactionConfig::default(), vec![5; 32]).expect("rules");
    let policy = r.scan_policy();
    // The load's whole turn: its four texts.
    let text = |what: &str, n: usize| format!("{what} 7: {}", "lorem ipsum ".repeat(n));
    let turn = [
        text("question", 80),
        text("answer", 80),
        text("file", 40),
        text("hits", 40),
    ];
    let reps = 20_000;
    let started = Instant::now();
    for _ in 0..reps {
        for t in &turn {
            let mut found = Vec::new();
            let _ = r.redact_text(&policy, t, "/content", &mut found);
        }
    }
    let per_turn_ms = started.elapsed().as_secs_f64() * 1e3 / reps as f64;
    let records = recorded_records();
    let bytes: usize = records.iter().map(String::len).sum();
    let started = Instant::now();
    for rec in &records {
        let mut found = Vec::new();
        let _ = r.redact_text(&policy, rec, "/content", &mut found);
    }
    let secs = started.elapsed().as_secs_f64();
    let mb_s = bytes as f64 / 1e6 / secs;
    println!(
        "redaction alone: {per_turn_ms:.4} ms for the load's whole turn (4 texts, {} bytes); real agents' records: {:.1} MB at {mb_s:.1} MB/s ({:.3} ms per 30 KB turn)",
        turn.iter().map(String::len).sum::<usize>(),
        bytes as f64 / 1e6,
        30e3 / (mb_s * 1e6) * 1e3
    );

    // The load, on and off, alternated.
    let mut server_cpu = [Vec::new(), Vec::new()];
    let mut rates = [Vec::new(), Vec::new()];
    let modes = ["redact", "off"];
    for round in 0..rounds {
        for k in 0..2 {
            let m = (k + round) % 2;
            // Read by the in-process servers' configuration (and the
            // importer's): set between runs, never while one runs.
            std::env::set_var("OPENPROGRAM_REDACTION_MODE", modes[m]);
            let f = bench_load(
                &dir.join(format!("redaction-load-{round}-{m}")),
                16,
                40,
                TurnShape::Whole,
            );
            if let Some((user, sys)) = f.cpu {
                let (cu, cs) = f.client_cpu;
                server_cpu[m].push((user + sys - cu - cs) * 1e3 / f.turns as f64);
            }
            let src = dir.join(format!("redaction-claude-{round}-{m}"));
            write_transcripts(&src, 200, 4);
            let (secs, _, _) = run_import(&src, &dir.join(format!("redaction-import-{round}-{m}")));
            rates[m].push(800.0 / secs);
        }
    }
    std::env::remove_var("OPENPROGRAM_REDACTION_MODE");
    let (on, off) = (median(server_cpu[0].clone()), median(server_cpu[1].clone()));
    let (ron, roff) = (median(rates[0].clone()), median(rates[1].clone()));
    println!(
        "redaction under the one-request load (16 × 160 turns, {rounds} rounds, medians): server CPU per turn {on:.3} ms on, {off:.3} ms off; Claude Code import of 200 × 4 turns: {ron:.0} turns/s on, {roff:.0} turns/s off"
    );
    let share = per_turn_ms / off;
    println!(
        "| redaction's CPU on a whole turn / the server's CPU per turn | {:.2} % | ≤ 5 % | {} |",
        share * 100.0,
        pass(share <= 0.05)
    );
    let import_ratio = ron / roff;
    println!(
        "| import throughput with redaction / without | {:.1} % | ≥ 90 % | {} |",
        import_ratio * 100.0,
        pass(import_ratio >= 0.9)
    );
}
