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
pub mod query;
pub mod tokenizer;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use actix::prelude::*;
use crossbeam_channel::Sender;
use serde::Serialize;
use tantivy::collector::TopDocs;
use tantivy::schema::Value;
use tantivy::snippet::SnippetGenerator;
use tantivy::{IndexReader, ReloadPolicy, TantivyDocument};

use index::{Fields, KIND_TITLE};
use indexer::Job;

#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    #[error("bad query: {0}")]
    BadQuery(String),
    #[error("search index: {0}")]
    Index(#[from] tantivy::TantivyError),
    #[error("search is not available")]
    Unavailable,
}

impl SearchError {
    pub fn kind(&self) -> crate::error::ErrorKind {
        use crate::error::ErrorKind;
        match self {
            SearchError::BadQuery(_) => ErrorKind::BadRequest,
            SearchError::Index(_) => ErrorKind::Internal,
            SearchError::Unavailable => ErrorKind::Unavailable,
        }
    }

    pub fn code(&self) -> &'static str {
        match self {
            SearchError::BadQuery(_) => "bad_query",
            SearchError::Index(_) => "storage_error",
            SearchError::Unavailable => "unavailable",
        }
    }
}

/// One message (or title) found.
#[derive(Debug, Clone, Serialize)]
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
    /// HTML: the matched words in `<b>`, everything else escaped.
    pub snippet: String,
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

pub struct Search {
    tx: Option<Sender<Job>>,
    reader: IndexReader,
    fields: Fields,
    /// Where each session lives (snippets are read from its repository).
    dirs: Arc<HashMap<String, PathBuf>>,
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
        let dir = index::dir_of(state_dir);
        let (index, fields, rebuilt) = index::open(&dir)?;
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()?;
        let writer = index.writer(32 * 1024 * 1024)?;
        crate::fsio::make_private(&dir)?;
        let (tx, rx) = crossbeam_channel::unbounded();
        let (r, f) = (reader.clone(), fields);
        std::thread::Builder::new()
            .name("search-indexer".into())
            .spawn(move || indexer::run(rx, writer, r, f, dir))?;
        let dirs = sessions
            .iter()
            .map(|(id, dir, _)| (id.clone(), dir.clone()))
            .collect();
        let job = if rebuilt {
            Job::Rebuild(sessions)
        } else {
            // Touches: each session's tips are compared with the index.
            let _ = sessions.iter().try_for_each(|(id, dir, title)| {
                tx.send(Job::Touch {
                    id: id.clone(),
                    dir: dir.clone(),
                    title: title.clone(),
                })
            });
            Job::Flush(tokio::sync::oneshot::channel().0)
        };
        let _ = tx.send(job);
        Ok(Search {
            tx: Some(tx),
            reader,
            fields,
            dirs: Arc::new(dirs),
        })
    }

    /// Rebuild the index of a stopped server's state directory from its
    /// session repositories, waiting until it is done.
    pub fn rebuild_offline(state_dir: &Path) -> tantivy::Result<usize> {
        let search = Search::open(state_dir, Vec::new())?;
        search.rebuild_now(Search::sessions_on_disk(state_dir)?)
    }

    /// Every session of a state directory, read from disk: (id, dir,
    /// the title search indexes).
    pub fn sessions_on_disk(state_dir: &Path) -> std::io::Result<Vec<(String, PathBuf, String)>> {
        Ok(crate::maintenance::sessions_of(state_dir)?
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

    /// Answer a query on this thread (benchmarks, tools); the actor runs
    /// the same on the blocking pool.
    pub fn query_now(&self, req: &Request) -> Result<Found, SearchError> {
        run_query(&self.reader, self.fields, &self.dirs, req)
    }

    fn send(&self, job: Job) {
        if let Some(tx) = &self.tx {
            if tx.send(job).is_err() {
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

/// A session changed (committed a turn, got a title, was imported, forked,
/// migrated, loaded) or was deleted.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Touched {
    pub id: String,
    pub dir: PathBuf,
    pub title: String,
    pub deleted: bool,
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
        req.sessions.as_ref(),
        req.role.as_deref(),
        req.since,
        req.until,
    );
    let (top, total) = searcher.search(
        &*full,
        &(
            TopDocs::with_limit(req.limit.max(1)).and_offset(req.offset),
            tantivy::collector::Count,
        ),
    )?;
    let mut snippets = SnippetGenerator::create(&searcher, &*text, f.text)?;
    snippets.set_max_num_chars(200);
    let mut repos: HashMap<String, Option<git2::Repository>> = HashMap::new();
    let mut hits = Vec::with_capacity(top.len());
    for (score, addr) in top {
        let doc: TantivyDocument = searcher.doc(addr)?;
        let get = |field| {
            doc.get_first(field)
                .and_then(|v| v.as_str())
                .map(str::to_owned)
        };
        let getu = |field| doc.get_first(field).and_then(|v| v.as_u64());
        let session_id = get(f.session).unwrap_or_default();
        let role = get(f.role).unwrap_or_default();
        let body = if role == KIND_TITLE {
            get(f.title).unwrap_or_default()
        } else {
            let repo = repos.entry(session_id.clone()).or_insert_with(|| {
                dirs.get(&session_id)
                    .and_then(|d| git2::Repository::open(d).ok())
            });
            node_text(
                repo.as_ref(),
                get(f.commit).as_deref(),
                getu(f.seq),
                &role,
                get(f.node_id).as_deref(),
            )
            .unwrap_or_default()
        };
        let snippet = snippets.snippet(&body);
        let html = if snippet.fragment().is_empty() {
            html_escape(&crate::node::one_line_prefix(&body, 200))
        } else {
            snippet.to_html()
        };
        let is_title = role == KIND_TITLE;
        hits.push(Hit {
            session_id,
            title: String::new(),
            branch: get(f.branch),
            turn: getu(f.turn).filter(|_| !is_title),
            node_id: get(f.node_id),
            tool: get(f.tool).filter(|t| !t.is_empty()),
            created_at: doc.get_first(f.created_at).and_then(|v| v.as_f64()),
            role,
            score,
            snippet: html,
        });
    }
    Ok(Found { total, hits })
}

/// A node's searchable text, read from the commit that added it.
fn node_text(
    repo: Option<&git2::Repository>,
    commit: Option<&str>,
    seq: Option<u64>,
    role: &str,
    node_id: Option<&str>,
) -> Option<String> {
    let repo = repo?;
    let role = crate::node::Role::parse(role)?;
    let path = crate::session::layout::node_rel_path(seq?, role, node_id?);
    let commit = repo.find_commit(git2::Oid::from_str(commit?).ok()?).ok()?;
    let entry = commit.tree().ok()?.get_path(&path).ok()?;
    let blob = repo.find_blob(entry.id()).ok()?;
    let node: crate::node::Node = serde_json::from_slice(blob.content()).ok()?;
    indexer::searchable_text(&node)
}

fn html_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}
