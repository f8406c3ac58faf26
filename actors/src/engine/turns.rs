//! A whole turn in one call: the turn's nodes (system notes, the user
//! message, the replies, the tool and code nodes with their callers) and
//! its end, for a client that has the turn in hand when it persists it.
//! The nodes are checked together before anything is written, so a bad node
//! rejects the whole turn; then the session's actor appends them and ends
//! the turn in one step: one log entry (one shared flush) and one commit
//! when the turn continues the branch's tip (`session::whole`), with the
//! same checks, answers and errors as the separate calls. A retry with the same node ids (and the same
//! `Idempotency-Key`) answers the turn already made.
//!
//! Such a turn is answered as soon as its log entry is durable: the
//! session's actor writes its files after the answer, before it takes its
//! next message (`session::whole::Early`). Not with a cluster or a
//! synchronous replication remote, which read the session's files before
//! the answer.

use std::collections::HashSet;

use serde::Serialize;

use crate::error::EngineError;
use crate::ids;
use crate::meta::SessionMeta;
use crate::node::{Node, Role};
use crate::session::whole::{Early, TurnWritten, WriteTurn};
use crate::session::{ContinueTurn, Continued};
use crate::session::{EndTurn, NewNode, SessionError, TurnOutcome, ROOT_CALLER};

use super::Engine;

/// What a whole turn wrote: its nodes as stored and the end of the turn.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct WholeTurn {
    pub nodes: Vec<Node>,
    #[serde(flatten)]
    pub outcome: TurnOutcome,
}

fn invalid(message: impl Into<String>) -> EngineError {
    SessionError::Invalid(message.into()).into()
}

/// Check the nodes of one turn together, and give an id to each node that
/// has none. Returns the index of the user message.
pub fn check(nodes: &mut [NewNode]) -> Result<usize, EngineError> {
    let user = nodes
        .iter()
        .position(|n| n.role != Role::System)
        .filter(|&i| nodes[i].role == Role::User)
        .ok_or_else(|| {
            invalid("a turn is its user message (after any system notes), then its replies")
        })?;
    let mut seen = HashSet::new();
    let mut replies: HashSet<String> = HashSet::new();
    // The conversational node before each reply: a reply may name it as
    // its predecessor (as the message-by-message API has it).
    let mut previous: Option<String> = None;
    for (i, n) in nodes.iter_mut().enumerate() {
        let id = n.id.get_or_insert_with(ids::new_id).clone();
        ids::validate("node id", &id)?;
        if !seen.insert(id.clone()) {
            return Err(invalid(format!("node id '{id}' is given twice")));
        }
        if i > user && n.role == Role::User {
            return Err(invalid(
                "one user message per turn: a second one opens the next turn",
            ));
        }
        if i != user {
            if let Some(p) = n.predecessor.take() {
                // The order says it already: a predecessor that agrees is
                // taken, one that contradicts it refused.
                if previous.as_deref() != Some(p.as_str()) || n.caller.is_some() {
                    return Err(invalid(format!(
                        "node '{id}' names '{p}' as its predecessor; in a whole turn a reply follows the message before it ({}), and only it may be named",
                        previous.as_deref().unwrap_or("none")
                    )));
                }
            }
        }
        let conversational = matches!(n.role, Role::User | Role::Assistant)
            && n.caller.as_deref().is_none_or(|c| c == ROOT_CALLER);
        if conversational && i >= user {
            previous = Some(id.clone());
        }
        if n.role.needs_name() && n.name.as_deref().is_none_or(str::is_empty) {
            return Err(SessionError::MissingName(n.role.as_str()).into());
        }
        match (n.role, n.caller.as_deref()) {
            (Role::Tool, None) => return Err(SessionError::MissingCaller.into()),
            (Role::Tool | Role::Code, Some(c)) if c != ROOT_CALLER && !replies.contains(c) => {
                return Err(SessionError::InvalidCaller(c.to_string()).into());
            }
            (Role::User | Role::Assistant | Role::System, Some(c)) if c != ROOT_CALLER => {
                return Err(invalid(format!(
                    "a {} node of a whole turn has no caller (got '{c}')",
                    n.role.as_str()
                )));
            }
            _ => {}
        }
        if n.role == Role::Assistant {
            replies.insert(id);
        }
    }
    Ok(user)
}

impl Engine {
    /// Append a whole turn and end it (see the module's description).
    /// `create` makes the session when it does not exist yet.
    pub async fn whole_turn(
        &self,
        id: &str,
        nodes: Vec<NewNode>,
        create: SessionMeta,
        end: EndTurn,
    ) -> Result<WholeTurn, EngineError> {
        self.write_turn(id, nodes, create, end, true).await
    }

    /// `whole_turn`; `project`: a live turn records the bound project's
    /// tree and commits the agent's changes there, a turn from the past
    /// (an import) leaves the project alone.
    pub(crate) async fn write_turn(
        &self,
        id: &str,
        mut nodes: Vec<NewNode>,
        mut create: SessionMeta,
        end: EndTurn,
        project: bool,
    ) -> Result<WholeTurn, EngineError> {
        self.writable()?;
        ids::validate("session id", id)?;
        crate::meta::check_title(&create.title).map_err(SessionError::Invalid)?;
        end.check_files()?;
        let user = check(&mut nodes)?;
        let user_id = nodes[user].id.clone().unwrap_or_default();
        let predecessor = nodes[user].predecessor.clone();
        let project_id = create.project_id.clone();
        let count = nodes.len() as u64;
        // The session checks the turn itself (another turn running, an
        // unknown predecessor) before writing anything: one message. A
        // session that does not exist yet is placed, then made by the
        // same message again.
        let (early, mut answer) = if self.cluster.is_none() && !self.replicates_in_sync() {
            let (e, rx) = Early::new();
            (Some(e), Some(rx))
        } else {
            (None, None)
        };
        let turn = |create: Option<SessionMeta>| WriteTurn {
            nodes: nodes.clone(),
            end: end.clone(),
            create,
            user_id: user_id.clone(),
            predecessor: predecessor.clone(),
            project,
            early: early.clone(),
        };
        // A live turn that makes its session in a project makes it inside
        // the project (recorded before the session's actor first looks
        // for it, as a message that creates one does); a turn from the
        // past (an import) keeps its session in the state folder: nothing
        // is written into the project's folder for it.
        if project {
            create.project_home = self.place(id, &project_id).await?;
        }
        let written = async {
            match self.call(id, turn(None)).await {
                Err(e) if e.is_unknown_session() => {
                    if let Some(p) = &predecessor {
                        return Err(SessionError::UnknownPredecessor(p.clone()).into());
                    }
                    self.call(id, turn(Some(create.clone()))).await
                }
                other => other,
            }
        };
        let written: TurnWritten = {
            tokio::pin!(written);
            loop {
                tokio::select! {
                    biased;
                    // The early answer: the actor goes on writing the files.
                    a = async {
                        match answer.as_mut() {
                            Some(rx) => rx.await,
                            None => std::future::pending().await,
                        }
                    }, if answer.is_some() => match a {
                        Ok(w) => break w,
                        Err(_) => answer = None,
                    },
                    w = &mut written => break w?,
                }
            }
        };
        metrics::counter!("openprogram_appends_total").increment(count);
        if !written.outcome.repeated {
            metrics::counter!("openprogram_turns_total").increment(1);
        }
        // A live turn is shown as it lands; an import's are not (a bulk
        // import would flood every client).
        if project && !written.outcome.repeated {
            for n in &written.nodes {
                self.announce_node("node_appended", id, n, Some(written.outcome.turn));
            }
            self.announce_end(id, &written.outcome);
        }
        if written.created {
            self.attach(&project_id, id).await;
        }
        if project {
            self.replicate_turn(id).await?;
        }
        Ok(WholeTurn {
            nodes: written.nodes,
            outcome: written.outcome,
        })
    }

    /// Nodes for a turn that ended, those stored already included: what
    /// is new is added to the turn in a new commit when it is the last of
    /// its line (`session::continuation`).
    pub(crate) async fn continue_turn(
        &self,
        id: &str,
        user_id: &str,
        nodes: Vec<NewNode>,
        end: EndTurn,
    ) -> Result<Continued, EngineError> {
        self.writable()?;
        ids::validate("session id", id)?;
        end.check_files()?;
        let msg = ContinueTurn {
            user_id: user_id.to_string(),
            nodes,
            end,
        };
        self.call(id, msg).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn n(v: serde_json::Value) -> NewNode {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn a_turn_is_checked_whole_before_anything_is_written() {
        let mut ok = vec![
            n(json!({"role": "system", "content": "be brief"})),
            n(json!({"role": "user", "content": "q"})),
            n(json!({"id": "a", "role": "assistant", "content": "r"})),
            n(json!({"role": "tool", "name": "grep", "caller": "a", "content": {}})),
        ];
        assert_eq!(check(&mut ok).unwrap(), 1);
        assert!(ok.iter().all(|x| x.id.is_some()), "every node gets an id");
        // Replies naming the message right before them, as the
        // message-by-message API has it: taken (the order says it).
        let mut named = vec![
            n(json!({"id": "u", "role": "user", "content": "q"})),
            n(json!({"id": "a", "role": "assistant", "predecessor": "u", "content": "r"})),
            n(json!({"role": "tool", "name": "grep", "caller": "a", "content": {}})),
            n(json!({"id": "b", "role": "assistant", "predecessor": "a", "content": "r2"})),
        ];
        assert_eq!(check(&mut named).unwrap(), 0);
        assert!(named[1..].iter().all(|x| x.predecessor.is_none()));
        let bad = [
            json!([{"role": "assistant", "content": "no user"}]),
            json!([{"role": "user"}, {"role": "user"}]),
            json!([{"id": "x", "role": "user"}, {"id": "x", "role": "assistant"}]),
            json!([{"role": "user"}, {"role": "tool", "name": "t", "caller": "nope"}]),
            json!([{"role": "user"}, {"role": "tool", "name": "t"}]),
            json!([{"role": "user"}, {"id": "a", "role": "assistant"}, {"role": "tool", "caller": "a"}]),
            json!([{"role": "user"}, {"role": "assistant", "predecessor": "zz"}]),
            // A reply naming the user message when another reply is
            // between them: that would be a retry, not this turn.
            json!([{"id": "u", "role": "user"}, {"id": "a", "role": "assistant"},
                   {"id": "b", "role": "assistant", "predecessor": "u"}]),
            json!([{"id": "u", "role": "user"}, {"id": "a", "role": "assistant"},
                   {"role": "tool", "name": "t", "caller": "a", "predecessor": "a"}]),
            json!([{"id": "bad/id", "role": "user"}]),
            json!([]),
        ];
        for b in bad {
            let mut nodes: Vec<NewNode> = serde_json::from_value(b.clone()).unwrap();
            assert!(check(&mut nodes).is_err(), "{b} must be refused");
        }
    }
}
