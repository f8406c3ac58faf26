//! The turn commit message of spec 001 §2.2, plus trailers that map the
//! commit back to the DAG.

use crate::git::trailers_keys as keys;
use crate::node::{one_line_prefix, Node, Role};

pub struct TurnSummary<'a> {
    pub session_id: &'a str,
    pub turn: u64,
    pub user_text: String,
    pub assistant_text: Option<String>,
    /// Tool node names in the order they were appended.
    pub tool_names: Vec<&'a str>,
    pub duration_s: f64,
    pub tool_calls: u64,
    pub tokens: Option<u64>,
    pub head: Option<&'a str>,
    pub last_seq: u64,
    pub project_commit: Option<&'a str>,
    pub branch: Option<&'a str>,
}

impl<'a> TurnSummary<'a> {
    /// Summarize the nodes of one turn.
    pub fn from_nodes(session_id: &'a str, turn: u64, nodes: &[&'a Node]) -> TurnSummary<'a> {
        let user_text = nodes
            .iter()
            .find(|n| n.role == Role::User && n.caller.is_none())
            .map(|n| n.text())
            .unwrap_or_default();
        let assistant_text = nodes
            .iter()
            .rev()
            .find(|n| n.role == Role::Assistant)
            .map(|n| n.text());
        let tool_names: Vec<&str> = nodes
            .iter()
            .filter(|n| n.role == Role::Tool)
            .map(|n| n.name.as_deref().unwrap_or("tool"))
            .collect();
        TurnSummary {
            session_id,
            turn,
            user_text,
            assistant_text,
            tool_calls: tool_names.len() as u64,
            tool_names,
            duration_s: 0.0,
            tokens: None,
            head: None,
            last_seq: nodes.iter().map(|n| n.seq).max().unwrap_or(0),
            project_commit: None,
            branch: None,
        }
    }

    pub fn message(&self) -> String {
        let mut msg = format!(
            "turn {}: {}\n\n",
            self.turn,
            one_line_prefix(&self.user_text, 60)
        );
        match &self.assistant_text {
            Some(a) => msg.push_str(&format!("assistant: {}\n", one_line_prefix(a, 80))),
            None => msg.push_str("assistant: (no reply)\n"),
        }
        if !self.tool_names.is_empty() {
            msg.push_str(&format!("tools: {}\n", group_tools(&self.tool_names)));
        }
        let tools = if self.tool_calls == 1 {
            "1 tool".to_string()
        } else {
            format!("{} tools", self.tool_calls)
        };
        match self.tokens {
            Some(t) => msg.push_str(&format!(
                "\n[meta: turn took {:.1}s, {tools}, {t} tokens]\n",
                self.duration_s
            )),
            None => msg.push_str(&format!(
                "\n[meta: turn took {:.1}s, {tools}]\n",
                self.duration_s
            )),
        }
        msg.push('\n');
        msg.push_str(&self.trailers());
        msg
    }

    /// The trailers alone (`Openprogram-Session`, `-Turn`, …), one a line.
    pub fn trailers(&self) -> String {
        let mut msg = String::new();
        msg.push_str(&format!("{}: {}\n", keys::SESSION, self.session_id));
        msg.push_str(&format!("{}: {}\n", keys::TURN, self.turn));
        if let Some(head) = self.head {
            msg.push_str(&format!("{}: {head}\n", keys::HEAD_NODE));
        }
        msg.push_str(&format!("{}: {}\n", keys::LAST_SEQ, self.last_seq));
        if let Some(p) = self.project_commit {
            msg.push_str(&format!("{}: {p}\n", keys::PROJECT_COMMIT));
        }
        if let Some(b) = self.branch {
            msg.push_str(&format!("{}: {b}\n", keys::BRANCH));
        }
        msg
    }
}

/// `read, grep × 3, list`: names in order of first use, repeats counted.
fn group_tools(names: &[&str]) -> String {
    let mut groups: Vec<(&str, usize)> = Vec::new();
    for name in names {
        match groups.iter_mut().find(|(n, _)| n == name) {
            Some((_, count)) => *count += 1,
            None => groups.push((name, 1)),
        }
    }
    groups
        .iter()
        .map(|(n, c)| {
            if *c > 1 {
                format!("{n} × {c}")
            } else {
                (*n).to_string()
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::Trailers;

    #[test]
    fn message_has_spec_format_and_parsable_trailers() {
        let s = TurnSummary {
            session_id: "s1",
            turn: 3,
            user_text:
                "please\nfix the bug in the parser that breaks on unicode input and more text here"
                    .into(),
            assistant_text: Some("done".into()),
            tool_names: vec!["read", "grep", "grep", "list", "grep"],
            duration_s: 12.34,
            tool_calls: 5,
            tokens: Some(4521),
            head: Some("a1"),
            last_seq: 9,
            project_commit: None,
            branch: Some("retry-a1"),
        };
        let m = s.message();
        let first = m.lines().next().unwrap();
        assert_eq!(
            first,
            "turn 3: please fix the bug in the parser that breaks on unicode inpu"
        );
        assert!(m.contains("\n\nassistant: done\ntools: read, grep × 3, list\n\n[meta: turn took 12.3s, 5 tools, 4521 tokens]\n"));
        let t = Trailers::parse(&m);
        assert_eq!(t.turn, 3);
        assert_eq!(t.last_seq, 9);
        assert_eq!(t.head_node.as_deref(), Some("a1"));
        assert_eq!(t.branch.as_deref(), Some("retry-a1"));
    }
}
