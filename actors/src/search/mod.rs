//! Full-text search over every session, branch and turn: an embedded
//! tantivy index under `<state>/search/`, owned by the search actor and
//! written by one indexing thread fed from the engine's change events
//! (never on the reply path of a write). The index is a cache of the
//! session repositories: rebuilt when missing, damaged or of an older
//! schema, and healed at every start (a session whose branch tips are not
//! all indexed is indexed again).
//!
//! Indexed: user and assistant messages and tool outputs (with the tool's
//! name), each once, with the branch and turn of the commit that added it,
//! and titles. A session's project and archived flag are not copied into
//! the index: they change without a commit, so the filters are resolved
//! from the registry at query time (no reindexing on archive).

pub mod index;
pub mod indexer;
mod only;
pub mod query;
pub mod tokenizer;

#[cfg(test)]
mod tests;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use actix::prelude::*;
use crossbeam_channel::Sender;
use serde::Serialize;
use tantivy::collector::TopDocs;
use tantivy::schema::Value;
use tantivy::snippet::SnippetGenerator;
use tantivy::{IndexReader, ReloadPolicy, TantivyDocument};

use index::{Fields, ROLE_TITLE};
use indexer::Job;

use crate::messages::Touched;
use crate::store::Store;

#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    #[error("bad query: {0}")]
    BadQuery(String),
    #[error("search index: {0}")]
    Index(#[from] tantivy::TantivyError),
    #[error("search is not available")]
    Unavailable,
    #[error("search is turned off on this server ([search] enabled = false)")]
    Disabled,
}

impl SearchError {
    pub fn kind(&self) -> crate::error_kind::ErrorKind {
        use crate::error_kind::ErrorKind;
        match self {
            SearchError::BadQuery(_) => ErrorKind::BadRequest,
            SearchError::Index(_) => ErrorKind::Internal,
            SearchError::Unavailable | SearchError::Disabled => ErrorKind::Unavailable,
        }
    }

    pub fn code(&self) -> &'static str {
        match self {
            SearchError::BadQuery(_) => "bad_query",
            SearchError::Index(_) => "storage_error",
            SearchError::Unavailable => "unavailable",
            SearchError::Disabled => "search_disabled",
        }
    }
}

/// One message (or title) found.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Hit {
    pub session_id: String,
    /// Filled in by the engine from the registry.
    pub title: String,
    pub branch: Option<String>,
    pub turn: Option<u64>,
    pub node_id: Option<String>,
    /// `user`, `assistant`, `tool` or `title`.
    pub role: String,
    pub tool: Option<String>,
    pub created_at: Option<f64>,
    pub score: f32,
    /// The text around the match (at most 200 characters), plain.
    pub text: String,
    /// Byte ranges of `text` that matched, in order, not overlapping (the
    /// overlapping bigrams of CJK text are merged).
    pub highlights: Vec<[usize; 2]>,
}

/// What to look for.
#[derive(Debug, Clone, Default)]
pub struct Request {
    pub q: String,
    pub role: Option<String>,
    pub since: Option<f64>,
    pub until: Option<f64>,
    pub limit: usize,
    pub offset: usize,
    /// Only these sessions (project and archived filters), when set.
    pub sessions: Option<HashSet<String>>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Found {
    /// Matching messages (and titles) in all.
    pub total: usize,
    pub hits: Vec<Hit>,
}

/// Sessions queued for the indexer or being indexed (a touch counts one,
/// a rebuild each of its sessions): `openprogram_search_backlog`.
#[derive(Clone, Default)]
pub struct Backlog(Arc<AtomicUsize>);

impl Backlog {
    pub fn get(&self) -> usize {
        self.0.load(Ordering::Relaxed)
    }

    fn add(&self, n: usize) {
        self.0.fetch_add(n, Ordering::Relaxed);
    }

    /// Taken off by the indexer, never below zero.
    pub(crate) fn done(&self, n: usize) {
        let _ = self
            .0
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| {
                Some(v.saturating_sub(n))
            });
    }
}

/// Queue `job` for the indexer, counted in `backlog` first.
fn queue(tx: &Sender<Job>, backlog: &Backlog, job: Job) -> bool {
    let weight = job.weight();
    backlog.add(weight);
    if tx.send(job).is_err() {
        backlog.done(weight);
        return false;
    }
    true
}

pub struct Search {
    tx: Option<Sender<Job>>,
    /// The indexer thread (joined by `close`).
    indexer: Option<std::thread::JoinHandle<()>>,
    backlog: Backlog,
    reader: IndexReader,
    fields: Fields,
    /// Where each session lives (snippets are read from its repository).
    dirs: Arc<HashMap<String, PathBuf>>,
}

/// Decompressed document-store blocks a segment's reader keeps.
const DOC_BLOCKS_CACHED: usize = 4;

/// The index open and its writer started, before it is told the sessions
/// (startup opens it while the registry reads the session list).
pub struct Opened {
    tx: Sender<Job>,
    indexer: std::thread::JoinHandle<()>,
    backlog: Backlog,
    reader: IndexReader,
    fields: Fields,
    rebuilt: bool,
}

impl Opened {
    pub fn open(state_dir: &Path) -> tantivy::Result<Opened> {
        let dir = index::dir_of(state_dir);
        let (index, fields, rebuilt) = index::open(&dir)?;
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            // Decompressed document blocks kept per segment: a search
            // reads a page of hits; tantivy's default (100 blocks of
            // 16 KiB per segment) held megabytes across a busy index's
            // segments once the load that made them was over.
            .doc_store_cache_num_blocks(DOC_BLOCKS_CACHED)
            .try_into()?;
        let writer = index.writer(32 * 1024 * 1024)?;
        crate::fsio::make_private(&dir)?;
        let (tx, rx) = crossbeam_channel::unbounded();
        let (r, f) = (reader.clone(), fields);
        let backlog = Backlog::default();
        let b = backlog.clone();
        let indexer = std::thread::Builder::new()
            .name("search-indexer".into())
            .spawn(move || indexer::run(rx, writer, r, f, dir, b))?;
        Ok(Opened {
            tx,
            indexer,
            backlog,
            reader,
            fields,
            rebuilt,
        })
    }

    /// A server's start: every session the registry listed (`rows`, and
    /// where each lives), handed to the indexer as they are; it makes its
    /// list of them after its start delay, off the start's path.
    pub fn catch_up_known(
        self,
        rows: Vec<Arc<crate::registry::SessionRow>>,
        dirs: Arc<HashMap<String, PathBuf>>,
    ) -> Search {
        let known_dirs = dirs.clone();
        self.start_with(dirs, |rebuild| {
            Job::Known(indexer::Known {
                rows,
                dirs: known_dirs,
                rebuild,
            })
        })
    }

    /// `sessions` (id, directory, title): every one is indexed when the
    /// index was rebuilt, otherwise checked for commits not indexed yet.
    pub fn catch_up(self, sessions: Vec<(String, PathBuf, String)>) -> Search {
        let dirs = sessions
            .iter()
            .map(|(id, dir, _)| (id.clone(), dir.clone()))
            .collect();
        self.start_with(Arc::new(dirs), |rebuilt| {
            if rebuilt {
                Job::Rebuild(sessions)
            } else {
                // Each session's tips compared with the index: one
                // message, taken apart by the indexer.
                Job::TouchAll(sessions)
            }
        })
    }

    /// The search actor's state, with the indexer's first job (`first`
    /// of whether the index was rebuilt) queued, and a commit after it
    /// unless the index was rebuilt.
    fn start_with(
        self,
        dirs: Arc<HashMap<String, PathBuf>>,
        first: impl FnOnce(bool) -> Job,
    ) -> Search {
        let Opened {
            tx,
            indexer,
            backlog,
            reader,
            fields,
            rebuilt,
        } = self;
        queue(&tx, &backlog, first(rebuilt));
        if !rebuilt {
            queue(&tx, &backlog, Job::Flush(tokio::sync::oneshot::channel().0));
        }
        Search {
            tx: Some(tx),
            indexer: Some(indexer),
            backlog,
            reader,
            fields,
            dirs,
        }
    }
}

impl Search {
    /// Open (or rebuild) the index of `state_dir` and start its writer.
    /// `sessions` are every session with its directory and title: all are
    /// indexed when the index was rebuilt, otherwise checked for commits
    /// not indexed yet (a crash while indexing loses nothing).
    pub fn open(
        state_dir: &Path,
        sessions: Vec<(String, PathBuf, String)>,
    ) -> tantivy::Result<Search> {
        Ok(Opened::open(state_dir)?.catch_up(sessions))
    }

    /// Rebuild the index of a stopped server's state directory from its
    /// session repositories, waiting until it is done.
    pub fn rebuild_offline(store: &Store) -> tantivy::Result<usize> {
        let search = Search::open(store.state_dir(), Vec::new())?;
        search.rebuild_now(Search::sessions_on_disk(store)?)
    }

    /// Every session of a state directory, read from disk: (id, dir,
    /// the title search indexes).
    pub fn sessions_on_disk(store: &Store) -> std::io::Result<Vec<(String, PathBuf, String)>> {
        Ok(store
            .all_session_folders()?
            .into_iter()
            .filter(|(_, d)| d.join("meta.json").is_file())
            .map(|(id, dir)| {
                let title = crate::session::summary::read_summary(&dir)
                    .map(|s| {
                        crate::registry::SessionRow::from_meta(&s.meta, s.preview, s.first_preview)
                            .search_title()
                    })
                    .unwrap_or_default();
                (id, dir, title)
            })
            .collect())
    }

    /// Index `sessions` from scratch and wait until it is done (outside an
    /// async runtime).
    pub fn rebuild_now(&self, sessions: Vec<(String, PathBuf, String)>) -> tantivy::Result<usize> {
        let n = sessions.len();
        self.send(Job::Rebuild(sessions));
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.send(Job::Flush(tx));
        let _ = rx.blocking_recv();
        Ok(n)
    }

    /// Stop taking jobs and wait for the indexer to finish its last batch
    /// and let go of the index (tools, tests; a server's indexer ends with
    /// the process, and a start catches up with what it missed).
    pub fn close(mut self) {
        self.tx = None;
        if let Some(t) = self.indexer.take() {
            let _ = t.join();
        }
    }

    /// Answer a query on this thread (benchmarks, tools); the actor runs
    /// the same on the blocking pool.
    pub fn query_now(&self, req: &Request) -> Result<Found, SearchError> {
        run_query(&self.reader, self.fields, &self.dirs, req)
    }

    /// Bytes by part and field (`postings/text`, `fast/session`…), for
    /// the benchmark's size breakdown.
    pub fn space_by_field(&self) -> std::io::Result<Vec<(String, u64)>> {
        let searcher = self.reader.searcher();
        let schema = searcher.schema();
        let mut out: std::collections::BTreeMap<String, u64> = Default::default();
        for seg in searcher.space_usage()?.segments() {
            let parts = [
                ("terms", seg.termdict()),
                ("postings", seg.postings()),
                ("positions", seg.positions()),
                ("fast", seg.fast_fields()),
                ("norms", seg.fieldnorms()),
            ];
            for (part, usage) in parts {
                for (field, u) in usage.fields() {
                    let key = format!("{part}/{}", schema.get_field_name(*field));
                    *out.entry(key).or_default() += u.total().get_bytes();
                }
            }
            *out.entry("store".into()).or_default() += seg.store().total().get_bytes();
        }
        Ok(out.into_iter().collect())
    }

    /// The sessions waiting to be indexed (a gauge for `/metrics`).
    pub fn backlog(&self) -> Backlog {
        self.backlog.clone()
    }

    fn send(&self, job: Job) {
        if let Some(tx) = &self.tx {
            if !queue(tx, &self.backlog, job) {
                tracing::error!("the search indexer is gone; search results may be stale");
            }
        }
    }
}

impl Actor for Search {
    type Context = Context<Self>;

    fn stopped(&mut self, _: &mut Context<Self>) {
        // Closing the queue ends the indexer after its last batch.
        self.tx = None;
    }
}

impl Handler<Touched> for Search {
    type Result = ();

    fn handle(&mut self, msg: Touched, _: &mut Context<Self>) {
        let dirs = Arc::make_mut(&mut self.dirs);
        if msg.deleted {
            dirs.remove(&msg.id);
            self.send(Job::Forget(msg.id));
        } else {
            dirs.insert(msg.id.clone(), msg.dir.clone());
            self.send(Job::Touch {
                id: msg.id,
                dir: msg.dir,
                title: msg.title,
            });
        }
    }
}

/// A session's history was rewritten: index it again from scratch and
/// merge the segments (`indexer::Job::Expunge`).
#[derive(Message)]
#[rtype(result = "()")]
pub struct Expunge {
    pub id: String,
    pub dir: PathBuf,
    pub title: String,
}

impl Handler<Expunge> for Search {
    type Result = ();

    fn handle(&mut self, msg: Expunge, _: &mut Context<Self>) {
        Arc::make_mut(&mut self.dirs).insert(msg.id.clone(), msg.dir.clone());
        self.send(Job::Expunge {
            id: msg.id,
            dir: msg.dir,
            title: msg.title,
        });
    }
}

/// Index everything again from the repositories.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Reindex(pub Vec<(String, PathBuf, String)>);

impl Handler<Reindex> for Search {
    type Result = ();

    fn handle(&mut self, msg: Reindex, _: &mut Context<Self>) {
        self.dirs = Arc::new(
            msg.0
                .iter()
                .map(|(id, dir, _)| (id.clone(), dir.clone()))
                .collect(),
        );
        self.send(Job::Rebuild(msg.0));
    }
}

/// Wait until every change sent before is indexed and visible.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Flush;

impl Handler<Flush> for Search {
    type Result = ResponseFuture<()>;

    fn handle(&mut self, _: Flush, _: &mut Context<Self>) -> Self::Result {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.send(Job::Flush(tx));
        Box::pin(async move {
            let _ = rx.await;
        })
    }
}

#[derive(Message)]
#[rtype(result = "Result<Found, SearchError>")]
pub struct Query(pub Request);

impl Handler<Query> for Search {
    type Result = ResponseFuture<Result<Found, SearchError>>;

    fn handle(&mut self, Query(req): Query, _: &mut Context<Self>) -> Self::Result {
        let (reader, fields, dirs) = (self.reader.clone(), self.fields, self.dirs.clone());
        Box::pin(async move {
            tokio::task::spawn_blocking(move || run_query(&reader, fields, &dirs, &req))
                .await
                .map_err(|_| SearchError::Unavailable)?
        })
    }
}

fn run_query(
    reader: &IndexReader,
    f: Fields,
    dirs: &HashMap<String, PathBuf>,
    req: &Request,
) -> Result<Found, SearchError> {
    let text = query::parse(&req.q, &f)?;
    let searcher = reader.searcher();
    let full = query::filtered(
        text.box_clone(),
        &f,
        req.role.as_deref(),
        req.since,
        req.until,
    );
    let session_field = searcher.schema().get_field_name(f.session);
    let (top, total) = searcher.search(
        &*full,
        &only::OnlySessions {
            allowed: req.sessions.as_ref(),
            field: session_field,
            inner: (
                TopDocs::with_limit(req.limit.max(1)).and_offset(req.offset),
                tantivy::collector::Count,
            ),
        },
    )?;
    let mut snippets = SnippetGenerator::create(&searcher, &*text, f.text)?;
    snippets.set_max_num_chars(200);
    let mut repos: HashMap<String, Option<git2::Repository>> = HashMap::new();
    let mut hits = Vec::with_capacity(top.len());
    for (score, addr) in top {
        let segment = searcher.segment_reader(addr.segment_ord);
        let text = |field| index::text_at(segment, field, addr.doc_id);
        let number = |field| index::u64_at(segment, field, addr.doc_id);
        let session_id = text(f.session).unwrap_or_default();
        let role = text(f.role).unwrap_or_default();
        let is_title = role == ROLE_TITLE;
        let branch = text(f.branch).filter(|_| !is_title);
        let node = if is_title {
            let doc: TantivyDocument = searcher.doc(addr)?;
            let title = doc.get_first(f.title).and_then(|v| v.as_str());
            HitNode {
                text: title.unwrap_or_default().to_string(),
                ..HitNode::default()
            }
        } else {
            let repo = repos.entry(session_id.clone()).or_insert_with(|| {
                dirs.get(&session_id)
                    .and_then(|d| git2::Repository::open(d).ok())
            });
            match (
                repo.as_ref(),
                number(f.seq),
                crate::node::Role::parse(&role),
            ) {
                (Some(repo), Some(seq), Some(r)) => {
                    node_of(repo, branch.as_deref(), seq, r).unwrap_or_default()
                }
                _ => HitNode::default(),
            }
        };
        let body = node.text;
        let snippet = snippets.snippet(&body);
        let (text, highlights) = if snippet.fragment().is_empty() {
            (crate::node::one_line_prefix(&body, 200), Vec::new())
        } else {
            (
                snippet.fragment().to_string(),
                merged(snippet.highlighted()),
            )
        };
        let created_at = index::f64_at(segment, f.created_at, addr.doc_id);
        hits.push(Hit {
            session_id,
            title: String::new(),
            branch,
            turn: number(f.turn).filter(|_| !is_title),
            node_id: node.id,
            tool: node.tool,
            created_at,
            role,
            score,
            text,
            highlights,
        });
    }
    Ok(Found { total, hits })
}

/// `ranges` sorted, with the ones that overlap or touch merged.
fn merged(ranges: &[std::ops::Range<usize>]) -> Vec<[usize; 2]> {
    let mut sorted: Vec<[usize; 2]> = ranges.iter().map(|r| [r.start, r.end]).collect();
    sorted.sort_unstable();
    let mut out: Vec<[usize; 2]> = Vec::with_capacity(sorted.len());
    for [start, end] in sorted {
        match out.last_mut() {
            Some(last) if start <= last[1] => last[1] = last[1].max(end),
            _ => out.push([start, end]),
        }
    }
    out
}

/// What a hit shows of its node, read from the session's repository.
#[derive(Default)]
struct HitNode {
    id: Option<String>,
    text: String,
    tool: Option<String>,
}

/// A node's id, searchable text and tool, read from the tip of its branch
/// (or, when that branch is gone, of any branch holding it): history files
/// are named by seq, role letter and id, and a seq is unique along a path.
fn node_of(
    repo: &git2::Repository,
    branch: Option<&str>,
    seq: u64,
    role: crate::node::Role,
) -> Option<HitNode> {
    let rel = crate::session::layout::node_rel_path(seq, role, "x");
    let folder = rel.parent()?;
    let prefix = format!("{seq:06}-{}-", role.letter());
    let in_tip = |tip: git2::Oid| -> Option<HitNode> {
        let tree = repo.find_commit(tip).and_then(|c| c.tree()).ok()?;
        let dir = repo.find_tree(tree.get_path(folder).ok()?.id()).ok()?;
        let e = dir.iter().find(|e| {
            e.name()
                .is_some_and(|n| n.starts_with(&prefix) && n.ends_with(".json"))
        })?;
        let (_, _, id) = e
            .name()
            .and_then(crate::session::layout::parse_node_file_name)?;
        let blob = repo.find_blob(e.id()).ok()?;
        let node: crate::node::Node = serde_json::from_slice(blob.content()).ok()?;
        Some(HitNode {
            id: Some(id),
            text: indexer::searchable_text(&node).unwrap_or_default(),
            tool: node.name.filter(|n| !n.is_empty()),
        })
    };
    // The branch's own tip first; every branch is listed only when it
    // does not hold the node.
    branch
        .and_then(|b| repo.refname_to_id(&format!("refs/heads/{b}")).ok())
        .and_then(in_tip)
        .or_else(|| {
            crate::git::list_branches(repo)
                .into_iter()
                .flatten()
                .find_map(|t| in_tip(t.oid))
        })
}
