//! The indexing thread: the one writer of the index. It takes the changed
//! sessions from its queue, indexes every commit of theirs not indexed yet
//! (the nodes each commit added, with its branch and turn), replaces their
//! titles, removes deleted sessions, and commits the index once per batch.
//! Never on the reply path of a write: it reads the session repositories'
//! commits, which are immutable once made.
//!
//! What is indexed is told by one *tips* document per session: the branch
//! tips whose whole history is in the index, committed with the nodes they
//! cover (a crash loses both or neither). A commit is indexed when it is
//! one of them or an ancestor of one.

use std::collections::{HashMap, HashSet, VecDeque};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crossbeam_channel::{Receiver, RecvTimeoutError};
use git2::{Oid, Repository};
use tantivy::collector::DocSetCollector;
use tantivy::schema::Value;
use tantivy::{doc, IndexReader, IndexWriter, TantivyDocument};

use super::index::{self, Fields, ROLE_TIPS, ROLE_TITLE};
use crate::git::{self, Trailers};
use crate::node::{Node, Role};
use crate::registry::SessionRow;

pub enum Job {
    /// The session changed: index its new commits, refresh its title.
    Touch {
        id: String,
        dir: PathBuf,
        title: String,
    },
    /// Every session of a start, to compare with the index: handled as
    /// one `Touch` each, in batches like any other.
    TouchAll(Vec<(String, PathBuf, String)>),
    /// The session was deleted.
    Forget(String),
    /// The session's history was rewritten (a purge): its documents go,
    /// it is indexed again from scratch, and the segments are merged so
    /// that no file keeps the old texts.
    Expunge {
        id: String,
        dir: PathBuf,
        title: String,
    },
    /// Drop everything, then index these sessions.
    Rebuild(Vec<(String, PathBuf, String)>),
    /// Every session a server's start found, as the registry holds them
    /// (shared, not copied: the start's own thread does nothing per
    /// session for search): taken apart here into a `Rebuild` or a
    /// `TouchAll`.
    Known(Known),
    /// Answer once everything queued before is committed.
    Flush(tokio::sync::oneshot::Sender<()>),
}

/// The sessions of a start: the registry's rows and where each session
/// lives; `rebuild` when the index was made anew.
pub struct Known {
    pub rows: Vec<Arc<SessionRow>>,
    pub dirs: Arc<HashMap<String, PathBuf>>,
    pub rebuild: bool,
}

impl Known {
    /// (id, directory, the title search indexes) of each session with a
    /// directory.
    fn sessions(self) -> Vec<(String, PathBuf, String)> {
        self.rows
            .iter()
            .filter_map(|r| {
                let dir = self.dirs.get(&r.id)?.clone();
                Some((r.id.clone(), dir, r.search_title()))
            })
            .collect()
    }

    /// The job it stands for.
    fn into_job(self) -> Job {
        if self.rebuild {
            Job::Rebuild(self.sessions())
        } else {
            Job::TouchAll(self.sessions())
        }
    }
}

impl Job {
    /// The sessions this job asks to index (the search backlog's unit).
    pub fn weight(&self) -> usize {
        match self {
            Job::Touch { .. } | Job::Expunge { .. } => 1,
            Job::TouchAll(all) | Job::Rebuild(all) => all.len(),
            Job::Known(known) => known.rows.len(),
            Job::Forget(_) | Job::Flush(_) => 0,
        }
    }
}

/// Changes gathered for a little while are committed together.
const BATCH_WINDOW: Duration = Duration::from_millis(200);

/// The indexer starts this long after the engine: a start's check of every
/// session against the index (or its rebuild) then does not share the
/// cores with the server's first answers. What is queued meanwhile waits.
const START_AFTER: Duration = Duration::from_millis(500);

pub fn run(
    rx: Receiver<Job>,
    mut writer: IndexWriter,
    reader: IndexReader,
    f: Fields,
    dir: PathBuf,
    backlog: super::Backlog,
) {
    std::thread::sleep(START_AFTER);
    // The committed tips of every session (read once; then kept here).
    let mut tips = load_tips(&reader, f);
    // The title each session has in the index (replaced only on a change).
    let mut titles = load_titles(&reader, f, &tips);
    // The sessions of each owner term (one, bar a 64-bit hash collision).
    let mut owners = owners_of(tips.keys());
    // What is left of a `TouchAll`: taken before the channel, so the
    // order of the jobs is kept.
    let mut carry: VecDeque<Job> = VecDeque::new();
    loop {
        let first = match carry.pop_front() {
            Some(job) => job,
            None => match rx.recv() {
                Ok(job) => job,
                Err(_) => break,
            },
        };
        let jobs = gather(first, &rx, &mut carry, &backlog);
        let mut batch = Batch {
            writer: &mut writer,
            f,
            titles: &mut titles,
            tips: &mut tips,
            owners: &mut owners,
            rebuilt: false,
            changed: false,
        };
        let asked: usize = jobs.iter().map(Job::weight).sum();
        let Planned {
            touched,
            order,
            waiters,
        } = batch.plan(jobs);
        let total = order.len();
        // Touches of one session folded together, or dropped by a rebuild.
        backlog.done(asked.saturating_sub(total));
        let started = std::time::Instant::now();
        let mut last_log = started;
        for (i, id) in order.iter().enumerate() {
            if let Some((dir, title)) = touched.get(id) {
                if let Err(e) = batch.index_session(id, dir, title) {
                    tracing::warn!(session = %id, error = %e, "search index: session not indexed; tried again at its next change or start");
                }
            }
            backlog.done(1);
            if last_log.elapsed() >= Duration::from_secs(3) {
                tracing::info!(done = i + 1, of = total, "indexing sessions for search");
                last_log = std::time::Instant::now();
            }
        }
        let (rebuilt, changed) = (batch.rebuilt, batch.changed);
        if !changed {
            // Nothing to write (the touches of a start on an index that
            // is up to date): no commit, no fsync.
        } else if let Err(e) = writer.commit() {
            tracing::error!(error = %e, "search index commit failed; its sessions are indexed again at their next change or start");
            // What this thread believes indexed goes back to what is.
            let _ = writer.rollback();
            tips = load_tips(&reader, f);
            titles = load_titles(&reader, f, &tips);
        } else if rebuilt {
            compact(&mut writer);
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

/// `first` and the jobs that arrive within `BATCH_WINDOW` of each other,
/// at most 256.
fn gather(
    first: Job,
    rx: &Receiver<Job>,
    carry: &mut VecDeque<Job>,
    backlog: &super::Backlog,
) -> Vec<Job> {
    let mut jobs = Vec::new();
    let mut next = Some(first);
    while jobs.len() < 256 {
        let job = match next.take().or_else(|| carry.pop_front()) {
            Some(job) => job,
            None => match rx.recv_timeout(BATCH_WINDOW) {
                Ok(job) => job,
                Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => break,
            },
        };
        let job = match job {
            Job::Known(known) => {
                // A row without a folder (none, as a start lists them) is
                // not indexed: no longer waited for either.
                let asked = known.rows.len();
                let job = known.into_job();
                backlog.done(asked.saturating_sub(job.weight()));
                job
            }
            job => job,
        };
        match job {
            // Taken apart here (only ever from the channel, carry being
            // empty then): its touches come next, 256 a batch.
            Job::TouchAll(all) => carry.extend(
                all.into_iter()
                    .map(|(id, dir, title)| Job::Touch { id, dir, title }),
            ),
            job => jobs.push(job),
        }
    }
    jobs
}

/// What a batch of jobs comes to: the sessions to index (the last word on
/// each wins), in the order asked, and who waits for the batch's commit.
struct Planned {
    touched: HashMap<String, (PathBuf, String)>,
    order: Vec<String>,
    waiters: Vec<tokio::sync::oneshot::Sender<()>>,
}

struct Batch<'a> {
    writer: &'a mut IndexWriter,
    f: Fields,
    titles: &'a mut HashMap<String, String>,
    /// Each session's indexed tips, as of the end of this batch.
    tips: &'a mut HashMap<String, Vec<Oid>>,
    owners: &'a mut HashMap<u64, Vec<String>>,
    /// The index was cleared in this batch (its segments are merged after).
    rebuilt: bool,
    /// Something was added or deleted in this batch (else no commit).
    changed: bool,
}

fn owners_of<'a>(ids: impl Iterator<Item = &'a String>) -> HashMap<u64, Vec<String>> {
    let mut out: HashMap<u64, Vec<String>> = HashMap::new();
    for id in ids {
        out.entry(index::owner_of(id)).or_default().push(id.clone());
    }
    out
}

/// The stored documents of one role, by session: `read` turns each into
/// its value.
fn load_role<T>(
    reader: &IndexReader,
    f: Fields,
    role: &str,
    read: impl Fn(&TantivyDocument) -> T,
) -> HashMap<String, T> {
    let searcher = reader.searcher();
    let q = index::role_is(&f, role);
    let mut out = HashMap::new();
    let Ok(addrs) = searcher.search(&q, &DocSetCollector) else {
        return out;
    };
    for addr in addrs {
        let Ok(d) = searcher.doc::<TantivyDocument>(addr) else {
            continue;
        };
        let segment = searcher.segment_reader(addr.segment_ord);
        let Some(session) = index::text_at(segment, f.session, addr.doc_id) else {
            continue;
        };
        out.insert(session, read(&d));
    }
    out
}

/// Every session's tips, from the tips documents of the index.
fn load_tips(reader: &IndexReader, f: Fields) -> HashMap<String, Vec<Oid>> {
    load_role(reader, f, ROLE_TIPS, |d| {
        d.get_first(f.tips)
            .and_then(|v| v.as_bytes())
            .unwrap_or(&[])
            .chunks(20)
            .filter_map(|raw| Oid::from_bytes(raw).ok())
            .collect()
    })
}

/// Every session's indexed title (`""` for a session indexed without
/// one), so that an unchanged title is not written again at startup.
fn load_titles(
    reader: &IndexReader,
    f: Fields,
    tips: &HashMap<String, Vec<Oid>>,
) -> HashMap<String, String> {
    let mut titles = load_role(reader, f, ROLE_TITLE, |d| {
        d.get_first(f.title)
            .and_then(|v| v.as_str())
            .unwrap_or_default()
            .to_string()
    });
    for id in tips.keys() {
        titles.entry(id.clone()).or_default();
    }
    titles
}

/// After a rebuild: one segment instead of the writer's many (smaller,
/// and faster to search), the replaced files removed.
fn compact(writer: &mut IndexWriter) {
    let ids = match writer.index().searchable_segment_ids() {
        Ok(ids) => ids,
        Err(e) => {
            tracing::warn!(error = %e, "search index: segments not listed");
            return;
        }
    };
    if ids.len() > 1 {
        if let Err(e) = writer.merge(&ids).wait() {
            tracing::warn!(error = %e, "search index: segments not merged");
        }
    }
    if let Err(e) = writer.garbage_collect_files().wait() {
        tracing::warn!(error = %e, "search index: old files not removed");
    }
}

impl Batch<'_> {
    /// Fold `jobs` into one plan; forgetting and rebuilding happen here
    /// (a deletion cancels a touch, a rebuild clears everything first).
    fn plan(&mut self, jobs: Vec<Job>) -> Planned {
        let mut waiters = Vec::new();
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
                    self.forget(&id);
                }
                Job::Rebuild(mut all) => {
                    // In id order: each segment's session column then only
                    // grows, which tantivy's codecs store in a few bits a
                    // message (in directory order it takes 14 or more).
                    all.sort_by(|a, b| a.0.cmp(&b.0));
                    touched.clear();
                    order.clear();
                    self.titles.clear();
                    self.tips.clear();
                    self.owners.clear();
                    self.rebuilt = true;
                    self.changed = true;
                    if let Err(e) = self.writer.delete_all_documents() {
                        tracing::error!(error = %e, "search index: clearing failed");
                    }
                    for (id, dir, title) in all {
                        order.push(id.clone());
                        touched.insert(id, (dir, title));
                    }
                }
                Job::Expunge { id, dir, title } => {
                    self.forget(&id);
                    self.rebuilt = true;
                    if touched.insert(id.clone(), (dir, title)).is_none() {
                        order.push(id);
                    }
                }
                Job::Flush(done) => waiters.push(done),
                // Taken apart by `gather`.
                Job::TouchAll(_) | Job::Known(_) => {}
            }
        }
        Planned {
            touched,
            order,
            waiters,
        }
    }

    fn forget(&mut self, id: &str) {
        self.titles.remove(id);
        self.tips.remove(id);
        if let Some(sharing) = self.owners.get_mut(&index::owner_of(id)) {
            sharing.retain(|s| s != id);
        }
        // Its nodes, title and tips: all in the session's column (a scan,
        // once per deleted session).
        self.changed = true;
        let _ = self.writer.delete_query(index::session_all(&self.f, id));
    }

    /// A session's record, its title and tips documents, written again
    /// from what this thread holds: they share one owner term, deleted and
    /// added together (a term delete costs a lookup; a query over the
    /// columns would scan them). Another session of the same owner hash
    /// is written again with it.
    fn rewrite_record(&mut self, id: &str) {
        let f = self.f;
        let owner = index::owner_of(id);
        self.changed = true;
        let _ = self.writer.delete_term(index::owner_term(&f, owner));
        let sharing = self.owners.entry(owner).or_default();
        if !sharing.iter().any(|s| s == id) {
            sharing.push(id.to_string());
        }
        for sid in sharing.clone() {
            if let Some(title) = self.titles.get(&sid).filter(|t| !t.is_empty()) {
                let mut d = index::session_doc_base(&f, &sid, ROLE_TITLE);
                d.add_text(f.text, title);
                d.add_text(f.title, title);
                let _ = self.writer.add_document(d);
            }
            if let Some(tips) = self.tips.get(&sid).filter(|t| !t.is_empty()) {
                let listed: Vec<u8> = tips.iter().flat_map(|t| t.as_bytes().to_vec()).collect();
                let mut d = index::session_doc_base(&f, &sid, ROLE_TIPS);
                d.add_bytes(f.tips, &listed);
                let _ = self.writer.add_document(d);
            }
        }
    }

    fn index_session(&mut self, id: &str, dir: &PathBuf, title: &str) -> Result<(), git2::Error> {
        // The title: replaced whole, when it changed. Placeholders are not
        // titles (the first message, shown instead, is indexed anyway).
        let t = title.trim();
        let title = if t == "New conversation" || t == "Untitled" {
            ""
        } else {
            t
        };
        let title_changed = self.titles.get(id).map(String::as_str) != Some(title);
        if title_changed {
            self.titles.insert(id.to_string(), title.to_string());
        }
        if !dir.join(".git").exists() {
            if title_changed {
                self.rewrite_record(id);
            }
            return Ok(());
        }
        let repo = Repository::open(dir)?;
        let known = self.tips.get(id).cloned().unwrap_or_default();
        // Unchanged branches (every session at a start on an index that
        // is up to date): told by the refs alone, no commit read.
        if !known.is_empty() && git::branch_tip_oids(&repo)? == known {
            if title_changed {
                self.rewrite_record(id);
            }
            return Ok(());
        }
        let mut heads: Vec<Oid> = git::list_branches(&repo)?.iter().map(|t| t.oid).collect();
        heads.sort();
        heads.dedup();
        if known == heads {
            if title_changed {
                self.rewrite_record(id);
            }
            return Ok(());
        }
        let indexed = |oid: Oid| {
            known
                .iter()
                .any(|t| repo.graph_descendant_of(*t, oid).unwrap_or(false))
        };
        let mut stack = heads.clone();
        let mut seen = HashSet::new();
        // Old tips the walk reached from a new commit: contained in the
        // heads without asking the graph (a turn's parent, usually).
        let mut reached = HashSet::new();
        while let Some(oid) = stack.pop() {
            if !seen.insert(oid) {
                continue;
            }
            if known.contains(&oid) {
                reached.insert(oid);
                continue;
            }
            if indexed(oid) {
                continue;
            }
            let commit = repo.find_commit(oid)?;
            self.index_commit(id, &repo, &commit)?;
            stack.extend(commit.parent_ids());
        }
        // The new tips: the heads, and any old tip they do not contain (a
        // branch gone since keeps its history marked as indexed).
        let mut tips = heads.clone();
        for k in known {
            let covered = reached.contains(&k)
                || heads
                    .iter()
                    .any(|h| *h == k || repo.graph_descendant_of(*h, k).unwrap_or(false));
            if !covered && repo.find_commit(k).is_ok() {
                tips.push(k);
            }
        }
        tips.sort();
        self.tips.insert(id.to_string(), tips);
        self.rewrite_record(id);
        Ok(())
    }

    /// The nodes `commit` added (its history files new since its first
    /// parent).
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
        let history = std::path::Path::new(crate::session::layout::HISTORY);
        for blob in git::blobs_added_under(repo, parent_tree.as_ref(), &tree, history)? {
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
                f.session => id,
                f.branch => branch.as_str(),
                f.turn => trailers.turn,
                f.seq => node.seq,
                f.role => node.role.as_str(),
                f.created_at => node.created_at,
                f.text => text,
            ));
        }
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
