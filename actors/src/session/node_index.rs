//! The session's DAG in memory: for each node its id, role, sequence
//! number, time, predecessor and caller, and nothing else. Contents stay
//! in the history files (and in git for the branches the work tree does
//! not hold) and are read on demand (`contents.rs`), so a live session
//! holds a few dozen bytes a node however long its messages are.
//!
//! Entries sit in sequence order in one vector; ids live back to back in
//! one string; predecessor and caller are positions in the vector; the id
//! lookup is a hash table of positions (4 bytes a slot).

use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};

use hashbrown::HashTable;

use crate::node::{Node, Role};

/// No predecessor (or no caller).
const NONE: u32 = u32::MAX;
/// A reference to an id no node has (hand-edited files); the id is kept
/// in `NodeIndex::dangling`.
const DANGLING: u32 = u32::MAX - 1;

#[derive(Clone, Copy)]
struct Entry {
    created_at: f64,
    seq: u32,
    id_at: u32,
    predecessor: u32,
    caller: u32,
    id_len: u8,
    role: Role,
}

/// What the index keeps of a node: read from a history file or a blob,
/// the content dropped at once.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeHead {
    pub id: String,
    pub role: Role,
    pub predecessor: Option<String>,
    pub caller: Option<String>,
    pub seq: u64,
    pub created_at: f64,
}

impl From<&Node> for NodeHead {
    fn from(n: &Node) -> NodeHead {
        NodeHead {
            id: n.id.clone(),
            role: n.role,
            predecessor: n.predecessor.clone(),
            caller: n.caller.clone(),
            seq: n.seq,
            created_at: n.created_at,
        }
    }
}

impl From<Node> for NodeHead {
    fn from(n: Node) -> NodeHead {
        NodeHead {
            id: n.id,
            role: n.role,
            predecessor: n.predecessor,
            caller: n.caller,
            seq: n.seq,
            created_at: n.created_at,
        }
    }
}

#[derive(Default)]
pub struct NodeIndex {
    entries: Vec<Entry>,
    ids: String,
    table: HashTable<u32>,
    hasher: RandomState,
    /// Ids of dangling references: (position, is the caller) → id.
    dangling: HashMap<(u32, bool), Box<str>>,
}

impl NodeIndex {
    /// The index of `heads` (any order; sorted by sequence number here).
    /// A head whose id is already taken is dropped.
    pub fn build(mut heads: Vec<NodeHead>) -> NodeIndex {
        heads.sort_by_key(|h| h.seq);
        let mut index = NodeIndex {
            entries: Vec::with_capacity(heads.len()),
            ids: String::with_capacity(heads.iter().map(|h| h.id.len()).sum()),
            ..NodeIndex::default()
        };
        let mut kept = Vec::with_capacity(heads.len());
        for h in heads {
            if index.insert_id(&h) {
                kept.push(h);
            }
        }
        // References resolve once every id is known (a hand-edited file
        // may name a later node).
        for (at, h) in kept.iter().enumerate() {
            let at = at as u32;
            let predecessor = index.resolve(h.predecessor.as_deref(), at, false);
            let caller = index.resolve(h.caller.as_deref(), at, true);
            let e = &mut index.entries[at as usize];
            e.predecessor = predecessor;
            e.caller = caller;
        }
        index.ids.shrink_to_fit();
        index
    }

    /// Add the entry and its id (references unresolved); false when the
    /// id is taken.
    fn insert_id(&mut self, h: &NodeHead) -> bool {
        if self.get(&h.id).is_some() {
            return false;
        }
        let at = self.entries.len() as u32;
        self.entries.push(Entry {
            created_at: h.created_at,
            seq: h.seq.min(u64::from(u32::MAX)) as u32,
            id_at: self.ids.len() as u32,
            predecessor: NONE,
            caller: NONE,
            id_len: h.id.len().min(usize::from(u8::MAX)) as u8,
            role: h.role,
        });
        self.ids.push_str(&h.id);
        let hasher = &self.hasher;
        let hash = hasher.hash_one(h.id.as_str());
        let (entries, ids) = (&self.entries, &self.ids);
        self.table
            .insert_unique(hash, at, |&i| hasher.hash_one(id_of(entries, ids, i)));
        true
    }

    fn resolve(&mut self, id: Option<&str>, at: u32, caller: bool) -> u32 {
        match id {
            None => NONE,
            Some(id) => match self.get(id) {
                Some(r) => r.at,
                None => {
                    self.dangling.insert((at, caller), id.into());
                    DANGLING
                }
            },
        }
    }

    /// Append a node (sequence numbers only grow); false when its id is
    /// taken.
    pub fn push(&mut self, n: &NodeHead) -> bool {
        if !self.insert_id(n) {
            return false;
        }
        let at = (self.entries.len() - 1) as u32;
        let predecessor = self.resolve(n.predecessor.as_deref(), at, false);
        let caller = self.resolve(n.caller.as_deref(), at, true);
        let e = &mut self.entries[at as usize];
        e.predecessor = predecessor;
        e.caller = caller;
        true
    }

    /// Remove the last node (an append undone).
    pub fn pop(&mut self) {
        let Some(e) = self.entries.pop() else {
            return;
        };
        let at = self.entries.len() as u32;
        let id = self.ids.get(e.id_at as usize..).unwrap_or("");
        let hash = self.hasher.hash_one(id);
        if let Ok(slot) = self.table.find_entry(hash, |&i| i == at) {
            slot.remove();
        }
        self.ids.truncate(e.id_at as usize);
        self.dangling.remove(&(at, false));
        self.dangling.remove(&(at, true));
    }

    pub fn get(&self, id: &str) -> Option<NodeRef<'_>> {
        let hash = self.hasher.hash_one(id);
        self.table
            .find(hash, |&i| id_of(&self.entries, &self.ids, i) == id)
            .map(|&at| NodeRef { index: self, at })
    }

    pub fn contains(&self, id: &str) -> bool {
        self.get(id).is_some()
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn last(&self) -> Option<NodeRef<'_>> {
        self.len().checked_sub(1).map(|i| self.at(i as u32))
    }

    pub fn at(&self, at: u32) -> NodeRef<'_> {
        NodeRef { index: self, at }
    }

    /// Every node in sequence order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = NodeRef<'_>> + '_ {
        (0..self.entries.len() as u32).map(|at| NodeRef { index: self, at })
    }

    /// Bytes held, roughly (for the memory figures).
    pub fn heap_bytes(&self) -> usize {
        self.entries.capacity() * std::mem::size_of::<Entry>()
            + self.ids.capacity()
            + self.table.capacity() * (std::mem::size_of::<u32>() + 1)
    }
}

fn id_of<'a>(entries: &[Entry], ids: &'a str, at: u32) -> &'a str {
    let e = &entries[at as usize];
    let start = e.id_at as usize;
    ids.get(start..start + usize::from(e.id_len)).unwrap_or("")
}

/// One node of the index: its place and what the index keeps of it.
#[derive(Clone, Copy)]
pub struct NodeRef<'a> {
    index: &'a NodeIndex,
    at: u32,
}

impl PartialEq for NodeRef<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.at == other.at && std::ptr::eq(self.index, other.index)
    }
}

impl std::fmt::Debug for NodeRef<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "NodeRef({} {})", self.seq(), self.id())
    }
}

impl<'a> NodeRef<'a> {
    fn entry(&self) -> &'a Entry {
        &self.index.entries[self.at as usize]
    }

    /// The position in the index (sequence order).
    pub fn at(&self) -> u32 {
        self.at
    }

    pub fn id(&self) -> &'a str {
        id_of(&self.index.entries, &self.index.ids, self.at)
    }

    pub fn role(&self) -> Role {
        self.entry().role
    }

    pub fn seq(&self) -> u64 {
        u64::from(self.entry().seq)
    }

    pub fn created_at(&self) -> f64 {
        self.entry().created_at
    }

    fn link(&self, to: u32, caller: bool) -> Option<&'a str> {
        match to {
            NONE => None,
            DANGLING => self.index.dangling.get(&(self.at, caller)).map(|s| &**s),
            at => Some(id_of(&self.index.entries, &self.index.ids, at)),
        }
    }

    /// The predecessor's id (also when no node has it).
    pub fn predecessor_id(&self) -> Option<&'a str> {
        self.link(self.entry().predecessor, false)
    }

    /// The predecessor, when it is a node.
    pub fn predecessor(&self) -> Option<NodeRef<'a>> {
        match self.entry().predecessor {
            NONE | DANGLING => None,
            at => Some(self.index.at(at)),
        }
    }

    pub fn caller_id(&self) -> Option<&'a str> {
        self.link(self.entry().caller, true)
    }

    pub fn has_caller(&self) -> bool {
        self.entry().caller != NONE
    }

    /// Conversational nodes (user/assistant without a caller) form the
    /// main chain and move the head.
    pub fn is_conversational(&self) -> bool {
        !self.has_caller() && matches!(self.role(), Role::User | Role::Assistant)
    }

    /// An assistant reply (not a runtime node called by another).
    pub fn is_reply(&self) -> bool {
        self.role() == Role::Assistant && !self.has_caller()
    }

    /// A user message that opens a turn.
    pub fn is_user_message(&self) -> bool {
        self.role() == Role::User && !self.has_caller()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(id: &str, seq: u64, role: Role, pred: Option<&str>, caller: Option<&str>) -> NodeHead {
        NodeHead {
            id: id.into(),
            role,
            predecessor: pred.map(Into::into),
            caller: caller.map(Into::into),
            seq,
            created_at: seq as f64,
        }
    }

    #[test]
    fn builds_links_and_looks_up_by_id() {
        let index = NodeIndex::build(vec![
            head("a1", 2, Role::Assistant, Some("u1"), None),
            head("u1", 1, Role::User, None, None),
            head("t1", 3, Role::Tool, None, Some("a1")),
            head("x", 4, Role::User, Some("ghost"), None),
        ]);
        assert_eq!(index.len(), 4);
        let a1 = index.get("a1").unwrap();
        assert_eq!(a1.seq(), 2);
        assert_eq!(a1.predecessor().unwrap().id(), "u1");
        assert!(a1.is_reply() && a1.is_conversational());
        let t1 = index.get("t1").unwrap();
        assert_eq!(t1.caller_id(), Some("a1"));
        assert!(!t1.is_conversational());
        let x = index.get("x").unwrap();
        assert_eq!(x.predecessor_id(), Some("ghost"));
        assert!(x.predecessor().is_none());
        assert!(index.get("ghost").is_none());
        let order: Vec<_> = index.iter().map(|n| n.id()).collect();
        assert_eq!(order, ["u1", "a1", "t1", "x"]);
    }

    #[test]
    fn push_and_pop_keep_the_table_right() {
        let mut index = NodeIndex::default();
        for i in 0..1000u64 {
            let id = format!("n{i}");
            let pred = (i > 0).then(|| format!("n{}", i - 1));
            assert!(index.push(&head(&id, i + 1, Role::User, pred.as_deref(), None)));
        }
        assert!(!index.push(&head("n5", 2000, Role::User, None, None)));
        index.pop();
        assert!(index.get("n999").is_none());
        assert_eq!(index.get("n998").unwrap().predecessor_id(), Some("n997"));
        assert!(index.push(&head("n999", 1000, Role::Assistant, Some("n998"), None)));
        assert_eq!(index.last().unwrap().role(), Role::Assistant);
        assert_eq!(index.len(), 1000);
    }
}
