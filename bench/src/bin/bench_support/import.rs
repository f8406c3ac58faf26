//! `--import SESSIONS TURNS`: Claude Code transcripts of SESSIONS
//! conversations with TURNS turns each (a prompt, a reply calling a tool,
//! the tool's result, the final reply) imported from a cold start by
//! `openprogram import` on a new state directory; then the same number of
//! turns in files ten times longer, to see that memory follows the
//! conversation, not the file. Prints turns/s against the target (≥ 200 on
//! 2 cores) and the importer's peak RSS, and checks a sample of the
//! repositories with `git fsck --strict`.

use std::io::Write;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

use serde_json::json;

use super::registry::server_exe;

pub fn write_transcripts(dir: &Path, sessions: usize, turns: usize) -> u64 {
    let mut bytes = 0;
    for s in 0..sessions {
        let sid = format!("00000000-0000-4000-8000-{s:012}");
        let folder = dir.join(format!("-work-p{}", s % 20));
        std::fs::create_dir_all(&folder).expect("folder");
        let mut out = std::io::BufWriter::new(
            std::fs::File::create(folder.join(format!("{sid}.jsonl"))).expect("file"),
        );
        let mut parent: Option<String> = None;
        for t in 0..turns {
            let sec = t * 10;
            let at = |d: usize| {
                let x = sec + d;
                format!(
                    "2025-06-{:02}T{:02}:{:02}:{:02}.000Z",
                    1 + x / 86_400 % 28,
                    x / 3600 % 24,
                    x / 60 % 60,
                    x % 60
                )
            };
            let id = |k: &str| format!("{s}-{t}-{k}");
            let recs = [
                json!({"type": "user", "uuid": id("u"), "parentUuid": parent, "sessionId": sid, "timestamp": at(0), "cwd": "/work",
                       "message": {"role": "user", "content": format!("Turn {t}: please look at module {t} and fix the failing test in it")}}),
                json!({"type": "assistant", "uuid": id("a"), "parentUuid": id("u"), "sessionId": sid, "timestamp": at(1),
                       "message": {"id": id("m1"), "role": "assistant", "model": "claude-sonnet-4-5",
                                   "content": [{"type": "text", "text": "Let me read the test first."},
                                               {"type": "tool_use", "id": format!("toolu_{s}_{t}"), "name": "Read", "input": {"file_path": format!("/work/src/m{t}.rs")}}],
                                   "stop_reason": "tool_use", "usage": {"input_tokens": 1200, "output_tokens": 80}}}),
                json!({"type": "user", "uuid": id("r"), "parentUuid": id("a"), "sessionId": sid, "timestamp": at(2),
                       "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": format!("toolu_{s}_{t}"),
                                   "content": "fn check() {\n    assert_eq!(parse(\"1+1\"), 2);\n}\n".repeat(8)}]}}),
                json!({"type": "assistant", "uuid": id("b"), "parentUuid": id("r"), "sessionId": sid, "timestamp": at(3),
                       "message": {"id": id("m2"), "role": "assistant", "model": "claude-sonnet-4-5",
                                   "content": [{"type": "text", "text": "The parser dropped the last token; fixed it and the test passes now."}],
                                   "stop_reason": "end_turn", "usage": {"input_tokens": 1500, "output_tokens": 120}}}),
            ];
            for r in recs {
                let line = r.to_string();
                bytes += line.len() as u64 + 1;
                writeln!(out, "{line}").expect("write");
            }
            parent = Some(id("b"));
        }
    }
    bytes
}

/// Run the import; (seconds, peak RSS of the importer in MiB, its output).
/// The child is reaped by `wait4`, which also gives its own peak RSS.
#[allow(clippy::zombie_processes)]
pub fn run_import(src: &Path, state: &Path) -> (f64, f64, String) {
    let log = state.with_extension("log");
    let out_file = std::fs::File::create(&log).expect("log");
    let err_file = out_file.try_clone().expect("log");
    let start = Instant::now();
    let child = Command::new(server_exe())
        .args(["import", "claude-code", "--no-projects"])
        .arg(src)
        .arg("--state-dir")
        .arg(state)
        .env_remove("OPENPROGRAM_URL")
        .stdout(out_file)
        .stderr(err_file)
        .spawn()
        .expect("run openprogram import");
    // wait4 gives this child's own peak RSS.
    let (status, peak) = unsafe {
        // SAFETY: wait4 reaps the child it is given and fills the structs.
        let mut ru: libc::rusage = std::mem::zeroed();
        let mut status = 0;
        libc::wait4(child.id() as libc::pid_t, &mut status, 0, &mut ru);
        (status, ru.ru_maxrss as f64 / 1024.0)
    };
    let secs = start.elapsed().as_secs_f64();
    let out = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(status == 0, "import failed ({status}): {out}");
    (secs, peak, out)
}

pub fn bench_import(dir: &Path, sessions: usize, turns: usize) {
    let src = dir.join("claude");
    let bytes = write_transcripts(&src, sessions, turns);
    let state = dir.join("import-state");
    println!(
        "import: {sessions} Claude Code sessions of {turns} turns ({:.1} MiB of transcripts), from a cold start",
        bytes as f64 / (1 << 20) as f64
    );
    let (secs, peak, out) = run_import(&src, &state);
    let total = (sessions * turns) as f64;
    print!("  {}", out.lines().next().unwrap_or(""));
    println!();
    let rate = total / secs;
    println!(
        "import: {total} turns in {secs:.1} s = {rate:.0} turns/s (target ≥ 200): {}; importer peak RSS {peak:.1} MiB",
        if rate >= 200.0 { "PASS" } else { "FAIL" }
    );
    // Fewer, ten times longer files: the peak should not grow with them.
    let long_src = dir.join("claude-long");
    write_transcripts(&long_src, (sessions / 10).max(1), turns * 10);
    let (_, long_peak, _) = run_import(&long_src, &dir.join("import-state-long"));
    println!(
        "import: peak RSS with files 10× longer {long_peak:.1} MiB (the first run's {peak:.1} MiB)"
    );
    let sessions_dir = state.join("sessions");
    let mut checked = 0;
    for e in std::fs::read_dir(&sessions_dir)
        .expect("sessions")
        .flatten()
        .take(10)
    {
        if !e.path().join(".git").is_dir() {
            continue;
        }
        let ok = Command::new("git")
            .args(["fsck", "--strict"])
            .current_dir(e.path())
            .output()
            .map(|o| o.status.success())
            .unwrap_or(false);
        assert!(ok, "git fsck --strict failed in {}", e.path().display());
        checked += 1;
    }
    println!("import: git fsck --strict clean in {checked} sampled repositories");
}
