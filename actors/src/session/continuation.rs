//! Records that reach a turn after it ended: an importer read a tool's
//! turn as over (its file was quiet for the settle time, or the tool wrote
//! its end and then went on) and the tool then wrote more of it: a tool's
//! result, the final answer, the rest of a reply's text. They are added to
//! the session's last turn in a new commit on the same line: the turn is
//! opened again under its own number, the new nodes follow its head, a
//! node the tool wrote more of (a reply's text, a tool's result) gets its
//! content and output as they are now, and the turn ends again. The first commit of the
//! turn stays as it was (an acknowledged commit is never rewritten); the
//! new one holds the turn whole.
//!
//! Only the last turn of the current line can be continued: a record for
//! an older turn is reported, not written (`Continued::NotLast`).

use actix::prelude::*;

use super::actor::{SessionActor, RETRY_FIRST};
use super::core::SessionCore;
use super::error::SessionError;
use super::wire::{EndTurn, NewNode, NodePatch, TurnOutcome};
use crate::messages::ChangeKind;
use crate::meta::OpenTurn;

/// Continue the turn opened by `user_id` with `nodes`: the turn's nodes
/// as the importer read them now, those already stored included (they
/// are recognised by their ids).
#[derive(Message, Clone)]
#[rtype(result = "Result<Continued, SessionError>")]
pub struct ContinueTurn {
    pub user_id: String,
    pub nodes: Vec<NewNode>,
    pub end: EndTurn,
}

/// What a continuation did.
#[derive(Debug, Clone)]
pub enum Continued {
    /// Everything given is stored already.
    Nothing,
    /// New nodes or changed ones were written: the turn's new commit.
    Ended {
        outcome: TurnOutcome,
        nodes: usize,
        results: usize,
    },
    /// The turn is not the last of the current line: `new` nodes were
    /// not written (results are not looked at).
    NotLast { new: usize },
}

impl SessionCore {
    /// See the module's description.
    pub fn continue_turn(
        &mut self,
        user_id: &str,
        nodes: Vec<NewNode>,
        end: EndTurn,
    ) -> Result<Continued, SessionError> {
        let user_seq = self
            .node(user_id)
            .map(|n| n.seq())
            .ok_or_else(|| SessionError::UnknownNode(user_id.to_string()))?;
        let ours_open = self
            .meta
            .open_turn
            .as_ref()
            .is_some_and(|t| t.user_node == user_id);
        let last = self.meta.last_turn.clone();
        let is_last = self.meta.open_turn.is_none()
            && last.as_ref().is_some_and(|l| {
                (l.first_seq..=l.last_seq).contains(&user_seq) && self.meta.head == l.head
            });
        if !ours_open && !is_last {
            let new = nodes
                .iter()
                .filter(|n| n.id.as_deref().is_some_and(|id| self.node(id).is_none()))
                .count();
            return Ok(Continued::NotLast { new });
        }
        let mut fresh = Vec::new();
        let mut known = Vec::new();
        for n in nodes {
            let Some(id) = n.id.clone() else {
                continue;
            };
            match self.node(&id) {
                None => fresh.push(n),
                Some(r) if r.role() != n.role => return Err(SessionError::NodeConflict(id)),
                Some(r) if r.seq() >= user_seq => known.push(n),
                Some(_) => {}
            }
        }
        // Nodes of the turn the tool wrote more of since (a reply's text
        // streamed in, a tool's result): their content and output as the
        // tool has them now.
        let mut changed = Vec::new();
        for n in known {
            let Some(r) = n.id.as_deref().and_then(|id| self.node(id)) else {
                continue;
            };
            let stored = self.load_node(r)?;
            let content = (stored.content != n.content).then_some(n.content);
            let output = n.output.filter(|o| stored.output.as_ref() != Some(o));
            if content.is_some() || output.is_some() {
                let patch = NodePatch {
                    content,
                    output,
                    metadata: Some(n.metadata),
                };
                changed.push((stored.id, patch));
            }
        }
        if !ours_open && fresh.is_empty() && changed.is_empty() {
            return Ok(Continued::Nothing);
        }
        if !ours_open {
            if self.meta.run_holds() {
                return Err(SessionError::RunActive);
            }
            self.retry_pending_commit()?;
            let Some(last) = last else {
                return Err(SessionError::NoOpenTurn);
            };
            // The turn is open again from its first node: its nodes are
            // kept whole, its results can be filled, its commit holds it
            // whole (built on its first commit, nothing else to bring).
            self.meta.open_turn = Some(OpenTurn {
                number: last.number,
                user_node: user_id.to_string(),
                first_seq: last.first_seq,
                started_at: last.ended_at,
                project: None,
            });
            let refs: Vec<_> = self
                .dag
                .iter()
                .filter(|n| n.seq() >= last.first_seq)
                .collect();
            for n in self.load_nodes(&refs)? {
                self.keep_open(&n);
            }
            self.write_meta()?;
        }
        let counts = (fresh.len(), changed.len());
        for (id, patch) in changed {
            self.update_node(&id, patch)?;
        }
        for n in fresh {
            self.append(n)?;
        }
        let outcome = self.end_turn(end, None)?;
        Ok(Continued::Ended {
            outcome,
            nodes: counts.0,
            results: counts.1,
        })
    }
}

impl Handler<ContinueTurn> for SessionActor {
    type Result = AtomicResponse<Self, Result<Continued, SessionError>>;

    fn handle(&mut self, msg: ContinueTurn, _: &mut Self::Context) -> Self::Result {
        let fut =
            self.on_core_write(move |core| core.continue_turn(&msg.user_id, msg.nodes, msg.end));
        AtomicResponse::new(Box::pin(fut.map(|res, act, ctx| {
            match &res {
                Ok(Continued::Ended { .. }) => act.notify(ChangeKind::Updated),
                Err(SessionError::CommitPending(_)) => {
                    act.notify(ChangeKind::Updated);
                    act.retry_commit_later(ctx, RETRY_FIRST);
                }
                _ => {}
            }
            res
        })))
    }
}

#[cfg(test)]
#[path = "continuation_tests.rs"]
mod tests;
