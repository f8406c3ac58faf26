//! Other agents' histories as sessions: each conversation a tool wrote
//! becomes a session repository with one commit per turn at the turn's own
//! time, its forks as branches, its title, its working directory as a
//! project. The tool's files are read line by line on the blocking pool
//! and each finished turn is written with the engine's whole-turn write,
//! so a session never holds half a turn and a run stopped anywhere goes on
//! where it was: turns already imported are recognised by their node ids
//! (the tool's own record ids), and a checkpoint per file skips the files
//! that did not change.

pub mod aider;
pub mod checkpoint;
pub mod claude_code;
mod claude_fork;
mod claude_records;
pub mod codex;
mod discover;
pub mod doctor;
pub mod dry;
pub mod gemini;
pub mod model;
pub mod opencode;
mod opencode_v2;
mod read;
pub mod watch;

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

use crate::engine::Engine;
use crate::error::EngineError;
use crate::meta::{now, SessionMeta};
use crate::node::Role;
use crate::session::{Continued, EndTurn};

use checkpoint::Checkpoint;
pub use discover::discover;
use discover::{default_roots, history_file_of};
pub use model::{Header, ImportedNode, ImportedTurn, LineReader, Problem, Read, Skipped, Tool};

/// The largest transcript read (a database holding every session aside).
pub const MAX_FILE: u64 = 1 << 30;

/// What to import and how.
#[derive(Debug, Clone)]
pub struct ImportOptions {
    pub tool: Tool,
    /// Files or folders; none: the tool's own folder in the home directory.
    pub paths: Vec<PathBuf>,
    /// Only files modified at or after this time (seconds since the epoch).
    pub since: Option<f64>,
    /// Read and count, write nothing.
    pub dry_run: bool,
    /// Register each conversation's working directory as a project.
    pub projects: bool,
    /// A file untouched this long is no longer being written: its last
    /// turn is over even without the tool's end-of-turn mark.
    pub settle: Duration,
}

/// What a run did.
#[derive(Debug, Clone, Default, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ImportSummary {
    pub tool: String,
    pub dry_run: bool,
    pub files: u64,
    /// Unchanged since the last run (its checkpoint), not read.
    pub files_unchanged: u64,
    /// Modified before `--since`.
    pub files_older: u64,
    pub sessions_new: u64,
    pub sessions_updated: u64,
    /// Turns written (or, in a dry run, that would be).
    pub turns: u64,
    /// Turns that were already imported.
    pub turns_present: u64,
    /// Turns already imported that the tool wrote more of since: what it
    /// added is in a new commit of the turn.
    pub turns_continued: u64,
    /// Turns a fork copied from the conversation it forked: left to that
    /// conversation's session (the fork's names it in `fork_of`).
    pub turns_forked: u64,
    /// Turns the tool is still writing, left for a later run.
    pub turns_open: u64,
    /// Turns that start a branch (a fork, an edit, a rewind).
    pub branches: u64,
    /// Lines not imported, by reason (with the first few places).
    pub skipped: Skipped,
    /// Files that could not be read or written (each stops at its last
    /// whole turn).
    pub errors: Vec<Problem>,
    /// Files holding a turn still being written (the live mirror looks at
    /// them again).
    #[serde(skip)]
    pub open_files: Vec<PathBuf>,
    /// Where the files were looked for (the paths given, or the tool's
    /// own folders as `HOME` and the tool's variables name them).
    #[serde(default)]
    pub looked_in: Vec<String>,
}

/// Where a run is, for a progress bar.
#[derive(Debug, Clone, Copy)]
pub struct ImportProgress {
    pub files_done: u64,
    pub files_total: u64,
    pub turns: u64,
}

/// One file's import: the session it goes to and what is known of it.
struct Target {
    tool: Tool,
    file: PathBuf,
    header: Header,
    /// The session as it was before this file (None: it is new).
    existing: Option<SessionMeta>,
    create: SessionMeta,
    /// The node the session's next turn would follow by itself.
    head: Option<String>,
    /// Nodes known to be in the session (written or found in this run).
    seen: HashSet<String>,
}

impl Engine {
    /// Import a tool's histories (see the module's description).
    #[tracing::instrument(name = "import", skip(self, opts, progress), fields(tool = opts.tool.as_str()))]
    pub async fn import_history(
        &self,
        opts: ImportOptions,
        progress: &(dyn Fn(ImportProgress) + Sync),
    ) -> Result<ImportSummary, EngineError> {
        if !opts.dry_run {
            self.writable()?;
        }
        let (tool, mut paths) = (opts.tool, opts.paths.clone());
        if tool == Tool::Aider && paths.is_empty() {
            paths = self.projects().await?.into_iter().map(|p| p.path).collect();
        }
        let looked_in = discover::roots(tool, &paths)
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        let files = blocking(move || discover(tool, &paths)).await?;
        let state_dir = self.store().state_dir().to_path_buf();
        let mut cp = blocking(move || Checkpoint::load(&state_dir, tool)).await?;
        let mut sum = ImportSummary {
            tool: tool.as_str().to_string(),
            dry_run: opts.dry_run,
            looked_in,
            files: files.len() as u64,
            ..ImportSummary::default()
        };
        let total = files.len() as u64;
        for (i, file) in files.into_iter().enumerate() {
            if let Err(e) = self.import_file(&opts, &file, &mut cp, &mut sum).await {
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
            if !opts.dry_run && i % 64 == 63 {
                cp = save(cp).await?;
            }
        }
        if !opts.dry_run {
            save(cp).await?;
        }
        Ok(sum)
    }

    async fn import_file(
        &self,
        opts: &ImportOptions,
        file: &Path,
        cp: &mut Checkpoint,
        sum: &mut ImportSummary,
    ) -> Result<(), EngineError> {
        let tool = opts.tool;
        let path = file.to_path_buf();
        let (header, mark) = blocking(move || read::header_and_mark(tool, &path))
            .await?
            .map_err(io_error)?;
        if cp.unchanged(file, &mark) {
            sum.files_unchanged += 1;
            return Ok(());
        }
        if mark.size > MAX_FILE && tool != Tool::Opencode {
            let name = file.display().to_string();
            sum.skipped.add(&name, 0, "a file over 1 GiB");
            return Ok(());
        }
        let modified = mark.mtime_ns as f64 / 1e9;
        if opts.since.is_some_and(|s| modified < s) {
            sum.files_older += 1;
            return Ok(());
        }
        let idle = now() - modified >= opts.settle.as_secs_f64();
        let (header, archived) = header;
        // One session per file, but Aider's file holds many: each begins
        // with its own header (`Read::Begin`).
        let several = tool == Tool::Aider
            || (tool == Tool::Opencode
                && file.file_name().is_some_and(|n| n == opencode::DATABASE));
        let mut target = if several {
            None
        } else {
            let mut t = self.target(opts, file, header).await?;
            t.create.archived |= archived;
            Some(t)
        };
        let (tx, mut rx) = tokio::sync::mpsc::channel::<Read>(4);
        let path = file.to_path_buf();
        let reader =
            tokio::task::spawn_blocking(move || read::turns(tool, &path, idle, several, &tx));
        let mut open = 0;
        let mut failure = None;
        let mut wrote = 0;
        while let Some(read) = rx.recv().await {
            if failure.is_some() {
                continue;
            }
            let turn = match read {
                Read::Begin(h) => {
                    if let Some(done) = target.take() {
                        if let Err(e) = self.finish_target(opts, &done, wrote, sum).await {
                            failure = Some(e);
                            continue;
                        }
                    }
                    wrote = 0;
                    match self.target(opts, file, h).await {
                        Ok(t) => target = Some(t),
                        Err(e) => failure = Some(e),
                    }
                    continue;
                }
                Read::Turn(turn) => turn,
            };
            if !turn.complete {
                open += 1;
                continue;
            }
            let Some(t) = target.as_mut() else {
                continue;
            };
            match self.import_turn(opts, t, turn, sum).await {
                Ok(w) => wrote += u64::from(w),
                Err(e) => failure = Some(e),
            }
        }
        let skipped = reader
            .await
            .map_err(|_| EngineError::Unavailable)?
            .map_err(io_error)?;
        sum.skipped.merge(skipped);
        sum.turns_open += open;
        if open > 0 {
            sum.open_files.push(file.to_path_buf());
        }
        if failure.is_none() {
            if let Some(done) = target.take() {
                if let Err(e) = self.finish_target(opts, &done, wrote, sum).await {
                    failure = Some(e);
                }
            }
        }
        if let Some(e) = failure {
            cp.forget(file);
            return Err(e);
        }
        if !opts.dry_run {
            if open == 0 {
                cp.set(file, mark);
            } else {
                cp.forget(file);
            }
        }
        Ok(())
    }

    /// The end of one session's part of a file: counted, and its title.
    async fn finish_target(
        &self,
        opts: &ImportOptions,
        target: &Target,
        wrote: u64,
        sum: &mut ImportSummary,
    ) -> Result<(), EngineError> {
        if wrote > 0 {
            if target.existing.is_some() {
                sum.sessions_updated += 1;
            } else {
                sum.sessions_new += 1;
            }
        }
        if !opts.dry_run {
            self.import_title(target).await?;
        }
        Ok(())
    }

    /// The session a file goes to, as it is now, and how to create it.
    async fn target(
        &self,
        opts: &ImportOptions,
        file: &Path,
        header: Header,
    ) -> Result<Target, EngineError> {
        let existing = match self.meta(&header.session_id).await {
            Ok(m) => Some(m),
            Err(e) if e.is_unknown_session() => None,
            Err(e) => return Err(e),
        };
        // An import writes only into sessions an import of the same tool
        // made (its own id space): never into one made another way.
        if let Some(m) = existing.as_ref().filter(|m| m.source != opts.tool.as_str()) {
            let why = format!(
                "the session '{}' exists and was not made by importing {} (its source is '{}'): nothing is written into it",
                m.id,
                opts.tool.as_str(),
                m.source
            );
            return Err(crate::session::SessionError::Invalid(why).into());
        }
        let created = header.created_at.unwrap_or_else(now);
        let mut create = SessionMeta::new(header.session_id.clone(), created);
        create.source = opts.tool.as_str().to_string();
        create.archived = header.archived;
        if let Some(t) = &header.title {
            create.title = crate::meta::clip_title(t);
            create.user_titled = header.user_titled;
        }
        if let Some((session, node)) = &header.forked_from {
            let from = serde_json::json!({"session": session, "node": node});
            create.extra.insert("fork_of".into(), from);
        }
        if let Some(parent) = &header.parent_session {
            create
                .extra
                .insert("parent_session".into(), parent.clone().into());
        }
        if opts.projects && existing.is_none() && !opts.dry_run {
            if let Some(cwd) = header.cwd.as_ref().filter(|c| c.is_dir()) {
                match self
                    .register_folder(&cwd.to_string_lossy(), None, false)
                    .await
                {
                    Ok((project, _)) => create.project_id = project.id,
                    Err(e) => {
                        tracing::info!(cwd = %cwd.display(), error = %e, "imported without its project")
                    }
                }
            }
        }
        let head = existing.as_ref().and_then(|m| m.head.clone());
        Ok(Target {
            tool: opts.tool,
            file: file.to_path_buf(),
            header,
            existing,
            create,
            head,
            seen: HashSet::new(),
        })
    }

    /// Write one finished turn unless it is there already. Returns whether
    /// it was written.
    async fn import_turn(
        &self,
        opts: &ImportOptions,
        target: &mut Target,
        turn: ImportedTurn,
        sum: &mut ImportSummary,
    ) -> Result<bool, EngineError> {
        let sid = target.header.session_id.clone();
        let Some(user) = turn.user_id().map(str::to_string) else {
            return Ok(false);
        };
        let last = turn.last_conversational();
        // A fork's copy of its parent's turn: the parent's session holds it.
        if target.header.copied.contains(&user) {
            sum.turns_forked += 1;
            target.head = last.or(target.head.take());
            return Ok(false);
        }
        // A turn a crash left open is written again (the same ids answer
        // what is there); one that ended is not.
        let reopened = target
            .existing
            .as_ref()
            .is_some_and(|m| m.open_turn.as_ref().is_some_and(|t| t.user_node == user));
        let written_here = target.seen.contains(&user);
        if reopened || self.known(target, &user).await? {
            target.seen.extend(turn.nodes.iter().map(|n| n.id.clone()));
            target.head = last.or(target.head.take());
            if opts.dry_run || written_here {
                sum.turns_present += 1;
                return Ok(false);
            }
            // What the tool wrote for the turn since it was imported (a
            // result, the answer) is added to it in a new commit.
            let tool = target.tool;
            let nodes = turn
                .nodes
                .into_iter()
                .map(|n| n.into_new_node(tool, None))
                .collect();
            let end = EndTurn {
                at: Some(turn.ended_at),
                ..EndTurn::default()
            };
            return match self.continue_turn(&sid, &user, nodes, end).await? {
                Continued::Ended { .. } => {
                    sum.turns_continued += 1;
                    Ok(true)
                }
                Continued::Nothing => {
                    sum.turns_present += 1;
                    Ok(false)
                }
                Continued::NotLast { new } => {
                    sum.turns_present += 1;
                    if new > 0 {
                        let file = target.file.display().to_string();
                        sum.skipped
                            .add(&file, 0, "records for a turn that is no longer the last");
                    }
                    Ok(false)
                }
            };
        }
        let predecessor = match turn.follows.clone() {
            Some(f) if Some(&f) == target.head.as_ref() => None,
            Some(f) if self.known(target, &f).await? => Some(f),
            _ => None,
        };
        if predecessor.is_some() {
            sum.branches += 1;
        }
        sum.turns += 1;
        target.seen.extend(turn.nodes.iter().map(|n| n.id.clone()));
        if opts.dry_run {
            target.head = last.or(target.head.take());
            return Ok(true);
        }
        let tool = target.tool;
        let nodes = turn
            .nodes
            .into_iter()
            .map(|n| {
                let pred = (n.role == Role::User)
                    .then(|| predecessor.clone())
                    .flatten();
                n.into_new_node(tool, pred)
            })
            .collect();
        let end = EndTurn {
            at: Some(turn.ended_at),
            ..EndTurn::default()
        };
        self.write_turn(&sid, nodes, target.create.clone(), end, false)
            .await
            .map_err(|e| {
                tracing::warn!(session = %sid, file = %target.file.display(), error = %e, "an imported turn was refused");
                e
            })?;
        target.head = last.or(target.head.take());
        Ok(true)
    }

    /// The node is in the session: written in this run, or there before.
    async fn known(&self, target: &Target, node: &str) -> Result<bool, EngineError> {
        if target.seen.contains(node) {
            return Ok(true);
        }
        if target.existing.is_none() {
            return Ok(false);
        }
        match self.has_node(&target.header.session_id, node).await {
            Ok(found) => Ok(found),
            Err(e) if e.is_unknown_session() => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// The tool's title, when it differs from the session's and the
    /// session's own is not the user's while the tool's is not.
    async fn import_title(&self, target: &Target) -> Result<(), EngineError> {
        let Some(title) = target.header.title.as_deref().map(crate::meta::clip_title) else {
            return Ok(());
        };
        let sid = &target.header.session_id;
        let meta = match self.meta(sid).await {
            Ok(m) => m,
            Err(e) if e.is_unknown_session() => return Ok(()),
            Err(e) => return Err(e),
        };
        if meta.title == title || (meta.user_titled && !target.header.user_titled) {
            return Ok(());
        }
        let patch = crate::meta::MetaPatch {
            title: Some(title),
            user_titled: Some(target.header.user_titled),
            ..Default::default()
        };
        self.update_meta(sid, patch).await.map(|_| ())
    }
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, EngineError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|_| EngineError::Unavailable)
}

async fn save(mut cp: Checkpoint) -> Result<Checkpoint, EngineError> {
    blocking(move || cp.save().map(|()| cp))
        .await?
        .map_err(io_error)
}

fn io_error(e: std::io::Error) -> EngineError {
    EngineError::from(e)
}
