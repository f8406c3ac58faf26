//! Reading one tool file, on a blocking thread: its header (and the mark
//! the checkpoint compares), then its turns handed on one at a time, the
//! last one told finished or not. Shared by the import and the dry run.

use std::path::Path;

use tokio::sync::mpsc::Sender;

use super::checkpoint::{mark_of, FileMark};
use super::model::{Header, ImportedTurn, LineReader, Read, Skipped, Tool};
use super::{aider, claude_code, codex, gemini, opencode};

/// The file's header, whether the tool archived it, and its mark.
pub fn header_and_mark(tool: Tool, path: &Path) -> std::io::Result<((Header, bool), FileMark)> {
    let header = match tool {
        Tool::ClaudeCode => (claude_code::header(path)?, false),
        Tool::Codex => codex::header(path)?,
        Tool::GeminiCli => (gemini::header(path)?, false),
        Tool::Opencode => (opencode::header(path)?, false),
        Tool::Aider => (aider::header(path), false),
    };
    let mark = mark_of(path, &header.0.session_id)?;
    Ok((header, mark))
}

/// Read `path`'s turns into `tx`. `idle`: the file is no longer written,
/// so its last turn is over; `several`: it holds several conversations
/// (each begins with `Read::Begin`). Returns the lines skipped.
pub fn turns(
    tool: Tool,
    path: &Path,
    idle: bool,
    several: bool,
    tx: &Sender<Read>,
) -> std::io::Result<Skipped> {
    let send = |t: ImportedTurn| tx.blocking_send(Read::Turn(t)).is_ok();
    let (last, skipped) = match tool {
        Tool::ClaudeCode => {
            let f = std::io::BufReader::new(std::fs::File::open(path)?);
            let mut parser = claude_code::Parser::new(path);
            (parser.read(f, send)?, parser.skipped)
        }
        Tool::Codex => {
            let mut parser = codex::Parser::new(path);
            (parser.read(codex::open(path)?, send)?, parser.skipped)
        }
        Tool::GeminiCli => {
            let mut parser = gemini::Parser::new(path);
            let last = if path.extension().is_some_and(|e| e == "json") {
                gemini::read_legacy(&mut parser, path, send)?
            } else {
                let f = std::io::BufReader::new(std::fs::File::open(path)?);
                parser.read(f, send)?
            };
            (last, parser.skipped)
        }
        Tool::Aider => {
            let f = std::io::BufReader::new(std::fs::File::open(path)?);
            let mut parser = aider::Parser::new(path);
            let last = parser.read_events(f, |e| tx.blocking_send(e).is_ok())?;
            (last, parser.skipped)
        }
        Tool::Opencode if several => {
            // Each session's last turn is handed on in its place, told
            // finished or not by the reader itself.
            let mut skipped = Skipped::default();
            opencode::read_database(path, &mut skipped, |r| {
                let r = match r {
                    Read::Turn(mut t) => {
                        t.complete |= idle;
                        Read::Turn(t)
                    }
                    begin => begin,
                };
                tx.blocking_send(r).is_ok()
            })
            .map_err(|e| std::io::Error::other(format!("{}: {e}", path.display())))?;
            (None, skipped)
        }
        Tool::Opencode => {
            let mut skipped = Skipped::default();
            let last = opencode::read_tree(path, &mut skipped, |r| tx.blocking_send(r).is_ok())?;
            (last, skipped)
        }
    };
    if let Some(mut t) = last {
        t.complete |= idle;
        let _ = tx.blocking_send(Read::Turn(t));
    }
    Ok(skipped)
}
