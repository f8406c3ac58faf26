//! Appending nodes: validation, turn opening (and the branch a turn goes
//! on), the head, and amending a node of the open turn.

use super::core::{is_reply, SessionCore};
use super::error::SessionError;
use super::layout;
use super::node_index::{NodeHead, NodeRef};
use super::wire::{AppendOutcome, EndTurn, NewNode, NodePatch, TurnOutcome, ROOT_CALLER};

use crate::ids;
use crate::meta::{now, OpenTurn, ProjectBaseline, ProjectOutcome, Status};
use crate::node::{Node, Role};

impl SessionCore {
    /// Append a node. Acknowledged only once its file (and, when the node
    /// opens a turn, `meta.json`) is durable.
    pub fn append(&mut self, new: NewNode) -> Result<AppendOutcome, SessionError> {
        self.append_with(new, None)
    }

    /// Append; a user message that opens a turn records `baseline`, the
    /// bound project's working tree at that moment.
    pub fn append_with(
        &mut self,
        mut new: NewNode,
        baseline: Option<ProjectBaseline>,
    ) -> Result<AppendOutcome, SessionError> {
        let id = match &new.id {
            Some(id) => {
                ids::validate("node id", id)?;
                id.clone()
            }
            None => ids::new_id(),
        };
        if let Some(existing) = self.node(&id) {
            if existing.role() != new.role {
                return Err(SessionError::NodeConflict(id));
            }
            return Ok(AppendOutcome {
                node: self.load_node(existing)?,
                created: false,
                turn: self.meta.open_turn.as_ref().map(|t| t.number),
                closed_interrupted_turn: None,
            });
        }
        self.check_new(&new)?;
        self.redact_new(&mut new)?;
        let conversational =
            new.caller.is_none() && matches!(new.role, Role::User | Role::Assistant);
        let opens_turn = self.opens_turn(&new);
        let mut closed = None;
        if opens_turn {
            // The next turn never absorbs an ended turn whose commit is
            // still pending: it is made first, or the new turn waits.
            self.retry_pending_commit()?;
            closed = self.close_interrupted_turn()?;
        } else if matches!(new.role, Role::Assistant | Role::Tool) && self.meta.open_turn.is_none()
        {
            return Err(SessionError::NoOpenTurn);
        }
        let seq = self.last_seq() + 1;
        if seq > layout::MAX_SEQ {
            return Err(SessionError::Full);
        }
        // A system message without a caller (a prompt, a note of the
        // runtime) sits where it was written: after the head, which it
        // does not move (none before the first message).
        let placed = conversational || (new.role == Role::System && new.caller.is_none());
        let predecessor = if placed {
            new.predecessor.or_else(|| self.meta.head.clone())
        } else {
            new.predecessor
        };
        let created_at = new.at.unwrap_or_else(now);
        let node = Node {
            id: id.clone(),
            role: new.role,
            content: new.content,
            predecessor,
            caller: new.caller,
            seq,
            created_at,
            metadata: new.metadata,
            name: new.name,
            output: new.output,
        };
        // A node opening a turn is written with meta.json, below.
        if !opens_turn {
            self.write_node(&node)?;
        }
        self.dag.push(&NodeHead::from(&node));
        self.replies += u32::from(is_reply(&node));
        self.keep_open(&node);
        if opens_turn {
            // A turn that does not continue the current branch's tip gets
            // a branch of its own (a retry, or a message sent from a replay).
            if let Err(e) = self.place_turn(&id) {
                self.forget_last_node();
                return Err(e);
            }
        }
        if conversational {
            self.advance_head(&node, opens_turn, baseline)?;
        }
        Ok(AppendOutcome {
            node,
            created: true,
            turn: self.meta.open_turn.as_ref().map(|t| t.number),
            closed_interrupted_turn: closed,
        })
    }

    /// Refuse a node that cannot be appended: a tool or code node without
    /// a name, a call answered outside the open turn or of a node that is
    /// not an assistant's, an unknown predecessor.
    fn check_new(&self, new: &NewNode) -> Result<(), SessionError> {
        if new.role.needs_name() && new.name.as_deref().is_none_or(str::is_empty) {
            return Err(SessionError::MissingName(if new.role == Role::Tool {
                "tool"
            } else {
                "code"
            }));
        }
        if let Some(c) = &new.caller {
            if c != ROOT_CALLER {
                let Some(caller) = self.node(c) else {
                    return Err(SessionError::UnknownCaller(c.clone()));
                };
                // Only a call of the open turn is answered: a node hung on
                // an ended turn would appear in that turn's view, which it
                // was not part of when the turn ended.
                let in_open_turn = self
                    .meta
                    .open_turn
                    .as_ref()
                    .is_some_and(|t| caller.seq() >= t.first_seq);
                if caller.role() != Role::Assistant || !in_open_turn {
                    if self.meta.open_turn.is_none() && new.role == Role::Tool {
                        return Err(SessionError::NoOpenTurn);
                    }
                    return Err(SessionError::InvalidCaller(c.clone()));
                }
            }
        } else if new.role == Role::Tool {
            return Err(SessionError::MissingCaller);
        }
        if let Some(p) = &new.predecessor {
            if !self.dag.contains(p) {
                return Err(SessionError::UnknownPredecessor(p.clone()));
            }
        }
        Ok(())
    }

    /// A conversational node moves the head to itself; one that opens a
    /// turn opens it (written with meta.json in one durable write; undone
    /// in memory if that fails), and one that jumps off the chain saves
    /// the head now (replay cannot follow a jump).
    fn advance_head(
        &mut self,
        node: &Node,
        opens_turn: bool,
        baseline: Option<ProjectBaseline>,
    ) -> Result<(), SessionError> {
        let id = node.id.clone();
        let before = opens_turn.then(|| self.meta.clone());
        let off_chain = node.predecessor != self.meta.head;
        self.meta.head = Some(id.clone());
        self.meta.updated_at = node.created_at;
        if opens_turn {
            self.meta.open_turn = Some(OpenTurn {
                number: self.head_trailers()?.turn + 1,
                user_node: self.answered_user_node(self.dag.at(self.dag.len() as u32 - 1)),
                first_seq: self.ended_seq() + 1,
                started_at: node.created_at,
                project: baseline,
            });
            self.meta.status = Status::Running;
            self.meta.viewing = None;
            self.keep_turn_user();
            if let Err(e) = self.write_node_and_meta(node) {
                self.forget_last_node();
                if let Some(before) = before {
                    self.meta = before;
                }
                return Err(e);
            }
        } else if off_chain {
            // Replay cannot follow a jump; persist the head now.
            self.write_meta()?;
        }
        Ok(())
    }

    /// Whether appending `new` opens a turn: a user message does, and so
    /// does a retried answer (an assistant node whose predecessor already
    /// has a conversational child from an earlier turn).
    pub fn opens_turn(&self, new: &NewNode) -> bool {
        if new.caller.is_some() {
            return false;
        }
        match new.role {
            Role::User => true,
            Role::Assistant => {
                let p = new.predecessor.as_deref().or(self.meta.head.as_deref());
                match (p.and_then(|p| self.node(p)), &self.meta.open_turn) {
                    (Some(p), Some(open)) if p.seq() >= open.first_seq => false,
                    (Some(p), _) => self
                        .dag
                        .iter()
                        .any(|n| n.is_conversational() && n.predecessor() == Some(p)),
                    (None, _) => false,
                }
            }
            _ => false,
        }
    }

    /// Before a new turn opens (or the head moves): a running turn refuses
    /// it; a turn left open by a crash is closed (and committed) first.
    pub(super) fn close_interrupted_turn(&mut self) -> Result<Option<TurnOutcome>, SessionError> {
        let Some(open) = &self.meta.open_turn else {
            return Ok(None);
        };
        if self.meta.run_holds() {
            return Err(SessionError::RunActive);
        }
        let skipped = open.project.as_ref().map(|_| ProjectOutcome::Skipped {
            reason: "the turn was interrupted by a restart".into(),
            dirty_paths: Vec::new(),
            held: None,
        });
        self.end_turn_inner(EndTurn::default(), true, skipped)
            .map(Some)
    }

    /// Undo the append of the last node (its turn could not be placed).
    fn forget_last_node(&mut self) {
        if let Some(node) = self.dag.last() {
            let path = self
                .dir
                .join(layout::node_rel_path(node.seq(), node.role(), node.id()));
            let (id, reply) = (node.id().to_string(), node.is_reply());
            self.dag.pop();
            self.open_nodes.retain(|n| n.id != id);
            self.forget_previews();
            self.replies -= u32::from(reply);
            let _ = self.store.commit(vec![crate::wal::Change::Remove {
                root: self.dir.clone(),
                path,
            }]);
        }
    }

    /// The user message a turn answers: its opener, or for a retried
    /// answer the nearest user message before it.
    pub(super) fn answered_user_node(&self, opener: NodeRef<'_>) -> String {
        let mut cursor = Some(opener);
        let mut steps = 0;
        while let Some(n) = cursor {
            if n.is_user_message() {
                return n.id().to_string();
            }
            steps += 1;
            if steps > self.dag.len() {
                break; // a cycle in hand-edited files
            }
            cursor = n.predecessor();
        }
        opener.id().to_string()
    }

    /// The node that opened the turn starting at `first_seq`.
    pub(super) fn turn_opener(&self, first_seq: u64) -> Option<NodeRef<'_>> {
        self.dag
            .iter()
            .rev()
            .take_while(|n| n.seq() >= first_seq)
            .filter(|n| n.is_conversational())
            .last()
    }

    /// Fill or amend a node of the open turn.
    pub fn update_node(&mut self, id: &str, mut patch: NodePatch) -> Result<Node, SessionError> {
        let r = self
            .node(id)
            .ok_or_else(|| SessionError::UnknownNode(id.to_string()))?;
        match &self.meta.open_turn {
            Some(open) if r.seq() >= open.first_seq => {}
            _ => return Err(SessionError::Immutable(id.to_string())),
        }
        let (found, replaced) = self.redact_patch(&mut patch)?;
        let mut node = self.load_node(r)?;
        if let Some(c) = patch.content {
            node.content = c;
        }
        if let Some(m) = patch.metadata {
            node.metadata.extend(m);
        }
        if let Some(o) = patch.output {
            node.output = Some(o);
        }
        super::redaction::merge_redactions(&mut node.metadata, found, &replaced);
        self.write_node(&node)?;
        self.keep_open(&node);
        self.forget_previews();
        Ok(node)
    }
}
