//! `import --dry-run` with no server: the files read and their turns
//! counted as an import would, from the state folder as it is, with
//! nothing written anywhere (no lock, no log, no checkpoint, no project).
//! A session's nodes are known from its history files' names, so turns
//! already imported are told apart from new ones without opening it.

use std::collections::HashSet;
use std::path::Path;

use super::checkpoint::Checkpoint;
use super::discover::discover;
use super::model::{Header, ImportedTurn, Read, Tool};
use super::{opencode, read, ImportOptions, ImportProgress, ImportSummary, Problem};
use crate::locations::Locations;
use crate::meta::now;
use crate::session::layout;

/// One session as the state folder holds it.
struct Known {
    exists: bool,
    nodes: HashSet<String>,
    head: Option<String>,
    copied: HashSet<String>,
    wrote: u64,
}

impl Known {
    fn of(sessions: &Path, locations: &Locations, header: &Header) -> Known {
        let id = &header.session_id;
        let dir = locations
            .get(id)
            .map(Path::to_path_buf)
            .unwrap_or_else(|| sessions.join(id));
        let mut nodes = HashSet::new();
        let mut stack = vec![dir.join(layout::HISTORY)];
        while let Some(d) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&d) else {
                continue;
            };
            for e in entries.flatten() {
                let p = e.path();
                if p.is_dir() {
                    stack.push(p);
                } else if let Some((_, _, node)) = p
                    .file_name()
                    .and_then(|n| n.to_str())
                    .and_then(layout::parse_node_file_name)
                {
                    nodes.insert(node);
                }
            }
        }
        Known {
            exists: dir.join("meta.json").is_file(),
            nodes,
            head: None,
            copied: header.copied.clone(),
            wrote: 0,
        }
    }

    fn count(&mut self, turn: &ImportedTurn, sum: &mut ImportSummary) {
        let Some(user) = turn.user_id().map(str::to_string) else {
            return;
        };
        let last = turn.last_conversational();
        if self.copied.contains(&user) {
            sum.turns_forked += 1;
        } else if self.nodes.contains(&user) {
            if turn.nodes.iter().any(|n| !self.nodes.contains(&n.id)) {
                sum.turns_continued += 1;
            } else {
                sum.turns_present += 1;
            }
        } else {
            sum.turns += 1;
            self.wrote += 1;
            let follows = turn.follows.as_ref();
            if follows.is_some_and(|f| Some(f) != self.head.as_ref() && self.nodes.contains(f)) {
                sum.branches += 1;
            }
        }
        self.nodes.extend(turn.nodes.iter().map(|n| n.id.clone()));
        self.head = last.or(self.head.take());
    }

    fn finish(&self, sum: &mut ImportSummary) {
        if self.wrote > 0 {
            if self.exists {
                sum.sessions_updated += 1;
            } else {
                sum.sessions_new += 1;
            }
        }
    }
}

/// Count what importing would do (see the module's description).
pub fn count(
    opts: &ImportOptions,
    state_dir: &Path,
    progress: &dyn Fn(ImportProgress),
) -> ImportSummary {
    let tool = opts.tool;
    let files = discover(tool, &opts.paths);
    let cp = Checkpoint::load(state_dir, tool);
    let sessions = state_dir.join("sessions");
    let locations = Locations::load(&sessions);
    let mut sum = ImportSummary {
        tool: tool.as_str().to_string(),
        dry_run: true,
        looked_in: super::discover::roots(tool, &opts.paths)
            .iter()
            .map(|p| p.display().to_string())
            .collect(),
        files: files.len() as u64,
        ..ImportSummary::default()
    };
    let total = files.len() as u64;
    for (i, file) in files.iter().enumerate() {
        if let Err(e) = count_file(opts, file, &cp, &sessions, &locations, &mut sum) {
            sum.errors.push(Problem {
                file: file.display().to_string(),
                line: 0,
                reason: e.to_string(),
            });
        }
        progress(ImportProgress {
            files_done: i as u64 + 1,
            files_total: total,
            turns: sum.turns,
        });
    }
    sum
}

fn count_file(
    opts: &ImportOptions,
    file: &Path,
    cp: &Checkpoint,
    sessions: &Path,
    locations: &Locations,
    sum: &mut ImportSummary,
) -> std::io::Result<()> {
    let tool = opts.tool;
    let ((header, _), mark) = read::header_and_mark(tool, file)?;
    if cp.unchanged(file, &mark) {
        sum.files_unchanged += 1;
        return Ok(());
    }
    let modified = mark.mtime_ns as f64 / 1e9;
    if opts.since.is_some_and(|s| modified < s) {
        sum.files_older += 1;
        return Ok(());
    }
    let idle = now() - modified >= opts.settle.as_secs_f64();
    let several = tool == Tool::Aider
        || (tool == Tool::Opencode && file.file_name().is_some_and(|n| n == opencode::DATABASE));
    let mut known = (!several).then(|| Known::of(sessions, locations, &header));
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Read>(4);
    let path = file.to_path_buf();
    let reader = std::thread::spawn(move || read::turns(tool, &path, idle, several, &tx));
    while let Some(r) = rx.blocking_recv() {
        match r {
            Read::Begin(h) => {
                if let Some(done) = known.take() {
                    done.finish(sum);
                }
                known = Some(Known::of(sessions, locations, &h));
            }
            Read::Turn(t) if !t.complete => sum.turns_open += 1,
            Read::Turn(t) => {
                if let Some(k) = known.as_mut() {
                    k.count(&t, sum);
                }
            }
        }
    }
    if let Some(done) = known {
        done.finish(sum);
    }
    let skipped = reader
        .join()
        .map_err(|_| std::io::Error::other("the reader stopped"))??;
    sum.skipped.merge(skipped);
    Ok(())
}
