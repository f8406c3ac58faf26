//! The indexing thread: the one writer of the index. It takes the changed
//! sessions from its queue, indexes every commit of theirs not indexed yet
//! (the nodes each commit added, with its branch and turn), replaces their
//! titles, removes deleted sessions, and commits the index once per batch.
//! Never on the reply path of a write: it reads the session repositories'
//! commits, which are immutable once made.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::time::Duration;

use crossbeam_channel::{Receiver, RecvTimeoutError};
use git2::{Oid, Repository};
use tantivy::collector::Count;
use tantivy::query::TermQuery;
use tantivy::schema::IndexRecordOption;
use tantivy::{doc, IndexReader, IndexWriter, Term};

use super::index::{Fields, KIND_COMMIT, KIND_NODE, KIND_TITLE};
use crate::git::{self, Trailers};
use crate::node::{Node, Role};

pub enum Job {
    /// The session changed: index its new commits, refresh its title.
    Touch {
        id: String,
        dir: PathBuf,
        title: String,
    },
    /// The session was deleted.
    Forget(String),
    /// Drop everything, then index these sessions.
    Rebuild(Vec<(String, PathBuf, String)>),
    /// Answer once everything queued before is committed.
    Flush(tokio::sync::oneshot::Sender<()>),
}

/// Changes gathered for a little while are committed together.
const BATCH_WINDOW: Duration = Duration::from_millis(200);

pub fn run(
    rx: Receiver<Job>,
    mut writer: IndexWriter,
    reader: IndexReader,
    f: Fields,
    dir: PathBuf,
) {
    // The title each session has in the index (replaced only on a change).
    let mut titles: HashMap<String, String> = HashMap::new();
    while let Ok(first) = rx.recv() {
        let mut jobs = vec![first];
        loop {
            match rx.recv_timeout(BATCH_WINDOW) {
                Ok(j) => jobs.push(j),
                Err(RecvTimeoutError::Timeout) => break,
                Err(RecvTimeoutError::Disconnected) => break,
            }
            if jobs.len() >= 256 {
                break;
            }
        }
        let mut batch = Batch {
            writer: &mut writer,
            reader: &reader,
            f,
            added: HashSet::new(),
            titles: &mut titles,
            cleared: false,
            forgotten: HashSet::new(),
        };
        let mut waiters = Vec::new();
        // The last word on each session wins; a deletion cancels a touch.
        let mut touched: HashMap<String, (PathBuf, String)> = HashMap::new();
        let mut order: Vec<String> = Vec::new();
        for job in jobs {
            match job {
                Job::Touch { id, dir, title } => {
                    if touched.insert(id.clone(), (dir, title)).is_none() {
                        order.push(id);
                    }
                }
                Job::Forget(id) => {
                    touched.remove(&id);
                    batch.forget(&id);
                }
                Job::Rebuild(all) => {
                    touched.clear();
                    order.clear();
                    batch.titles.clear();
                    batch.cleared = true;
                    if let Err(e) = batch.writer.delete_all_documents() {
                        tracing::error!(error = %e, "search index: clearing failed");
                    }
                    for (id, dir, title) in all {
                        order.push(id.clone());
                        touched.insert(id, (dir, title));
                    }
                }
                Job::Flush(done) => waiters.push(done),
            }
        }
        let total = order.len();
        let started = std::time::Instant::now();
        let mut last_log = started;
        for (i, id) in order.iter().enumerate() {
            if let Some((dir, title)) = touched.get(id) {
                if let Err(e) = batch.index_session(id, dir, title) {
                    tracing::warn!(session = %id, error = %e, "search index: session not indexed; tried again at its next change or start");
                }
            }
            if last_log.elapsed() >= Duration::from_secs(3) {
                tracing::info!(done = i + 1, of = total, "indexing sessions for search");
                last_log = std::time::Instant::now();
            }
        }
        if let Err(e) = writer.commit() {
            tracing::error!(error = %e, "search index commit failed; the next start indexes again");
        }
        if let Err(e) = reader.reload() {
            tracing::warn!(error = %e, "search reader reload failed");
        }
        // tantivy creates its files under the umask: make them private.
        if let Err(e) = crate::fsio::make_private(&dir) {
            tracing::warn!(error = %e, "search index files not made private");
        }
        if total > 100 {
            tracing::info!(
                sessions = total,
                elapsed_ms = started.elapsed().as_millis() as u64,
                "search index updated"
            );
        }
        for w in waiters {
            let _ = w.send(());
        }
    }
}

struct Batch<'a> {
    writer: &'a mut IndexWriter,
    reader: &'a IndexReader,
    f: Fields,
    /// Commit keys added in this batch (not visible to the reader yet).
    added: HashSet<String>,
    titles: &'a mut HashMap<String, String>,
    /// Everything was deleted in this batch: the reader's markers are void.
    cleared: bool,
    /// Sessions deleted in this batch (a new one of the same id starts over).
    forgotten: HashSet<String>,
}

fn commit_key(session: &str, oid: Oid) -> String {
    format!("commit/{session}/{oid}")
}

fn title_key(session: &str) -> String {
    format!("title/{session}")
}

impl Batch<'_> {
    fn forget(&mut self, id: &str) {
        self.titles.remove(id);
        self.forgotten.insert(id.to_string());
        self.writer
            .delete_term(Term::from_field_text(self.f.session, id));
    }

    fn is_indexed(&self, session: &str, key: &str) -> bool {
        if self.added.contains(key) {
            return true;
        }
        // Deletions of this batch are not committed yet: the reader still
        // shows what they removed.
        if self.cleared || self.forgotten.contains(session) {
            return false;
        }
        let q = TermQuery::new(
            Term::from_field_text(self.f.key, key),
            IndexRecordOption::Basic,
        );
        self.reader
            .searcher()
            .search(&q, &Count)
            .is_ok_and(|n| n > 0)
    }

    fn index_session(&mut self, id: &str, dir: &PathBuf, title: &str) -> Result<(), git2::Error> {
        let f = self.f;
        // The title: replaced whole, when it changed. Placeholders are not
        // titles (the first message, shown instead, is indexed anyway).
        let t = title.trim();
        let title = if t == "New conversation" || t == "Untitled" {
            ""
        } else {
            t
        };
        if self.titles.get(id).map(String::as_str) != Some(title) {
            self.writer
                .delete_term(Term::from_field_text(f.key, &title_key(id)));
            if !title.is_empty() {
                let _ = self.writer.add_document(doc!(
                    f.kind => KIND_TITLE,
                    f.session => id,
                    f.key => title_key(id),
                    f.role => "title",
                    f.text => title,
                    f.title => title,
                ));
            }
            self.titles.insert(id.to_string(), title.to_string());
        }
        if !dir.join(".git").exists() {
            return Ok(());
        }
        let repo = Repository::open(dir)?;
        let mut stack: Vec<Oid> = git::list_branches(&repo)?.iter().map(|t| t.oid).collect();
        let mut seen = HashSet::new();
        while let Some(oid) = stack.pop() {
            if !seen.insert(oid) || self.is_indexed(id, &commit_key(id, oid)) {
                continue;
            }
            let commit = repo.find_commit(oid)?;
            self.index_commit(id, &repo, &commit)?;
            stack.extend(commit.parent_ids());
        }
        Ok(())
    }

    /// The nodes `commit` added (its history files new since its first
    /// parent), then the commit's marker.
    fn index_commit(
        &mut self,
        id: &str,
        repo: &Repository,
        commit: &git2::Commit<'_>,
    ) -> Result<(), git2::Error> {
        let f = self.f;
        let trailers = Trailers::parse(commit.message().unwrap_or(""));
        let branch = trailers.branch.clone().unwrap_or_else(|| "main".into());
        let tree = commit.tree()?;
        let parent_tree = match commit.parent(0) {
            Ok(p) => Some(p.tree()?),
            Err(_) => None,
        };
        let mut opts = git2::DiffOptions::new();
        opts.pathspec(crate::session::layout::HISTORY);
        let diff = repo.diff_tree_to_tree(parent_tree.as_ref(), Some(&tree), Some(&mut opts))?;
        let mut blobs = Vec::new();
        for delta in diff.deltas() {
            if delta.status() == git2::Delta::Added {
                blobs.push(delta.new_file().id());
            }
        }
        for blob in blobs {
            let Ok(blob) = repo.find_blob(blob) else {
                continue;
            };
            let Ok(node) = serde_json::from_slice::<Node>(blob.content()) else {
                continue;
            };
            let Some(text) = searchable_text(&node) else {
                continue;
            };
            let _ = self.writer.add_document(doc!(
                f.kind => KIND_NODE,
                f.session => id,
                f.node_id => node.id.as_str(),
                f.branch => branch.as_str(),
                f.turn => trailers.turn,
                f.seq => node.seq,
                f.commit => commit.id().to_string(),
                f.role => node.role.as_str(),
                f.tool => node.name.clone().unwrap_or_default(),
                f.created_at => node.created_at,
                f.text => text,
            ));
        }
        let key = commit_key(id, commit.id());
        let _ = self.writer.add_document(doc!(
            f.kind => KIND_COMMIT,
            f.session => id,
            f.key => key.as_str(),
        ));
        self.added.insert(key);
        Ok(())
    }
}

/// What a node contributes to search: user and assistant messages, tool
/// outputs with the tool's name; runtime nodes and system prompts are left
/// out.
pub fn searchable_text(node: &Node) -> Option<String> {
    match node.role {
        Role::User | Role::Assistant if node.caller.is_none() => {
            Some(node.text()).filter(|t| !t.trim().is_empty())
        }
        Role::Tool => {
            let output = node
                .output
                .as_ref()
                .map(crate::node::content_text)
                .unwrap_or_default();
            let body = if output.trim().is_empty() {
                node.text()
            } else {
                output
            };
            let name = node.name.clone().unwrap_or_default();
            Some(format!("{name} {body}")).filter(|t| !t.trim().is_empty())
        }
        _ => None,
    }
}
