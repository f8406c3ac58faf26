//! Title planning at the end of a turn (spec 003 `_maybe_auto_title`) and
//! the race rules for writing a generated title.

use super::core::SessionCore;
use super::error::SessionError;
use crate::node::{Node, Role};

/// An LLM naming pass the end of a turn made due.
#[derive(Debug, Clone)]
pub struct TitlePlan {
    pub pass: u32,
    pub input: String,
    pub expected_title: Option<String>,
}

/// Default thresholds: LLM titles at the 1st, 6th, 16th and 40th reply.
pub const RETITLE_AT: [u32; 4] = [1, 6, 16, 40];

impl SessionCore {
    /// Set the assistant-reply counts at which an LLM title is due.
    pub fn set_retitle_at(&mut self, thresholds: Vec<u32>) {
        self.retitle_at = thresholds;
    }

    /// Naming at the end of a turn (spec 003 `_maybe_auto_title`): never
    /// when the user named the session; when this turn's replies crossed a
    /// threshold, an LLM pass is due, and on the first one the phase-1
    /// title (the first user message, cut) is set at once.
    pub(super) fn title_plan(&mut self, turn_first_seq: u64) -> Option<TitlePlan> {
        if self.meta.user_titled {
            return None;
        }
        // Nodes are in sequence order: this turn's are at the end.
        let in_turn = self
            .dag
            .iter()
            .rev()
            .take_while(|n| n.seq() >= turn_first_seq)
            .filter(|n| n.is_reply())
            .count() as u32;
        let after = self.replies;
        let before = after - in_turn;
        let pass = self
            .retitle_at
            .iter()
            .enumerate()
            .filter(|(_, t)| before < **t && **t <= after)
            .map(|(i, _)| i as u32 + 1)
            .max()?;
        let excerpt = |n: &Node| -> String { n.text().chars().take(500).collect() };
        let mut expected_title = None;
        let input = if pass == 1 {
            self.refresh_previews();
            let user = self
                .first_user_text()
                .map(|t| t.chars().take(500).collect::<String>())
                .unwrap_or_default();
            let reply = self
                .dag
                .iter()
                .find(|n| n.is_reply())
                .and_then(|n| self.load_node(n).ok())
                .as_ref()
                .map(excerpt)
                .unwrap_or_default();
            if !self.meta.auto_titled {
                self.meta.title = crate::titler::text::title_from_text(&user);
                self.meta.auto_titled = true;
                self.meta.title_gen_count = 1;
            }
            expected_title = Some(self.meta.title.clone());
            format!("User: {user}\n\nAssistant: {reply}")
        } else {
            self.recent_messages(20)
        };
        Some(TitlePlan {
            pass,
            input,
            expected_title,
        })
    }

    /// The last `n` conversational messages of the current branch, as text
    /// for an LLM ("User: …" / "Assistant: …", each at most 500 characters).
    pub fn recent_messages(&self, n: usize) -> String {
        // The chain from the head back, `n` conversational nodes deep: only
        // those are read.
        let mut refs = Vec::new();
        let mut cursor = self.meta.head.as_deref().and_then(|h| self.node(h));
        while let Some(r) = cursor.filter(|_| refs.len() < n) {
            if r.is_conversational() {
                refs.push(r);
            }
            cursor = r.predecessor();
        }
        refs.reverse();
        let conv = self.load_nodes(&refs).unwrap_or_default();
        conv.iter()
            .map(|m| {
                let who = if m.role == Role::User {
                    "User"
                } else {
                    "Assistant"
                };
                format!("{who}: {}", m.text().chars().take(500).collect::<String>())
            })
            .collect::<Vec<_>>()
            .join("\n\n")
    }

    /// Write a generated title under the race rules: never over a title the
    /// user typed, and on the first pass only if the title is still the
    /// phase-1 one. `force` (an explicit regenerate) skips both rules.
    pub fn apply_title(
        &mut self,
        title: &str,
        pass: u32,
        expected: Option<&str>,
        force: bool,
    ) -> Result<bool, SessionError> {
        if !force && (self.meta.user_titled || expected.is_some_and(|e| e != self.meta.title)) {
            return Ok(false);
        }
        if self.meta.title == title && self.meta.auto_titled {
            return Ok(false);
        }
        let gen = if force {
            self.meta.title_gen_count
        } else {
            pass + 1
        };
        self.update_meta(|m| {
            m.title = title.to_string();
            m.auto_titled = true;
            m.title_gen_count = gen;
        })?;
        Ok(true)
    }
}
