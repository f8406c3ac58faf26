//! Search through the engine: the filters that live in the registry
//! (project, archived) become the set of sessions to look in, the hits get
//! their session's title, and `group = session` folds them per session.

use std::collections::HashMap;
use std::path::PathBuf;

use serde::Serialize;

use crate::error::EngineError;
use crate::registry::ListQuery;
use crate::search::{Flush, Hit, Query, Reindex, Request, SearchError};

use super::Engine;

/// A search as a client asks it.
#[derive(Debug, Clone, Default)]
pub struct SearchQuery {
    pub q: String,
    pub project_id: Option<String>,
    pub role: Option<String>,
    /// `Some(true)`: only archived sessions; `Some(false)`: only active.
    pub archived: Option<bool>,
    pub since: Option<f64>,
    pub until: Option<f64>,
    pub limit: usize,
    pub offset: usize,
    /// One row per session (its best hits) instead of one per message.
    pub group_by_session: bool,
}

#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SessionHits {
    pub session_id: String,
    pub title: String,
    pub score: f32,
    pub hits: Vec<Hit>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum SearchResult {
    Messages {
        total: usize,
        hits: Vec<Hit>,
    },
    Sessions {
        total: usize,
        sessions: Vec<SessionHits>,
    },
}

/// Hits looked at per session row when grouping.
const GROUP_DEPTH: usize = 20;

impl Engine {
    pub async fn search(&self, q: SearchQuery) -> Result<SearchResult, EngineError> {
        let sessions = if q.project_id.is_some() || q.archived.is_some() {
            let mut query = ListQuery::everything(q.project_id.clone());
            query.archived = q.archived;
            query.include_archived = q.archived.is_none();
            let page = self.list(query).await?;
            Some(page.sessions.into_iter().map(|r| r.id.clone()).collect())
        } else {
            None
        };
        let (limit, offset) = if q.group_by_session {
            ((q.offset + q.limit) * GROUP_DEPTH, 0)
        } else {
            (q.limit, q.offset)
        };
        let found = self
            .search_actor()?
            .send(Query(Request {
                q: q.q.clone(),
                role: q.role.clone(),
                since: q.since,
                until: q.until,
                limit: limit.min(100_000),
                offset,
                sessions,
            }))
            .await
            .map_err(|_| EngineError::Search(SearchError::Unavailable))??;
        let mut hits = found.hits;
        let mut titles: HashMap<String, String> = HashMap::new();
        for h in &mut hits {
            if !titles.contains_key(&h.session_id) {
                let title = self.row(&h.session_id).await?.map(|r| r.display_title());
                titles.insert(h.session_id.clone(), title.unwrap_or_default());
            }
            h.title = titles[&h.session_id].clone();
        }
        if !q.group_by_session {
            return Ok(SearchResult::Messages {
                total: found.total,
                hits,
            });
        }
        let mut order: Vec<String> = Vec::new();
        let mut by: HashMap<String, SessionHits> = HashMap::new();
        for h in hits {
            let entry = by.entry(h.session_id.clone()).or_insert_with(|| {
                order.push(h.session_id.clone());
                SessionHits {
                    session_id: h.session_id.clone(),
                    title: h.title.clone(),
                    score: h.score,
                    hits: Vec::new(),
                }
            });
            if entry.hits.len() < 3 {
                entry.hits.push(h);
            }
        }
        let total = order.len();
        let sessions = order
            .into_iter()
            .skip(q.offset)
            .take(q.limit)
            .filter_map(|id| by.remove(&id))
            .collect();
        Ok(SearchResult::Sessions { total, sessions })
    }

    /// Drop the search index's content and index every session again from
    /// its repository (in the background).
    pub async fn reindex(&self) -> Result<usize, EngineError> {
        self.writable()?;
        let page = self.list(ListQuery::everything(None)).await?;
        let dirs: HashMap<String, PathBuf> = self.session_folders().await?;
        let all: Vec<(String, PathBuf, String)> = page
            .sessions
            .into_iter()
            .filter_map(|r| Some((r.id.clone(), dirs.get(&r.id)?.clone(), r.search_title())))
            .collect();
        let n = all.len();
        self.search_actor()?.do_send(Reindex(all));
        Ok(n)
    }

    /// Wait until every change made so far is searchable.
    pub async fn search_flush(&self) {
        if let Some(search) = &self.search {
            let _ = search.send(Flush).await;
        }
    }

    fn search_actor(&self) -> Result<&actix::Addr<crate::search::Search>, EngineError> {
        self.search
            .as_ref()
            .ok_or(EngineError::Search(SearchError::Disabled))
    }

    /// Every session's directory (the recorded locations, else
    /// `<sessions>/<id>`).
    async fn session_folders(&self) -> Result<HashMap<String, PathBuf>, EngineError> {
        let store = self.store.clone();
        tokio::task::spawn_blocking(move || {
            store.all_session_folders().map(|v| v.into_iter().collect())
        })
        .await
        .map_err(|_| EngineError::Unavailable)?
        .map_err(EngineError::from)
    }
}

/// A hit's place: session, branch, turn.
pub type HitPlace = (String, String, u64);

impl Engine {
    /// The commit of each hit's turn on its branch, read from the
    /// sessions' repositories directly (a read-only git handle each, on the
    /// blocking pool): a search over many sessions does not load each
    /// session it hits. Places not found are left out.
    pub async fn hit_commits(&self, places: Vec<HitPlace>) -> HashMap<HitPlace, String> {
        let mut by_session: HashMap<String, Vec<(String, u64)>> = HashMap::new();
        for (s, b, t) in places {
            by_session.entry(s).or_default().push((b, t));
        }
        let mut dirs = Vec::with_capacity(by_session.len());
        for (session, wanted) in by_session {
            if crate::ids::validate("session id", &session).is_err() {
                continue;
            }
            let Ok(dir) = self
                .ask_manager(crate::manager::Locate(session.clone()))
                .await
            else {
                continue;
            };
            dirs.push((session, dir, wanted));
        }
        let found = tokio::task::spawn_blocking(move || {
            let mut out = HashMap::new();
            for (session, dir, wanted) in dirs {
                let Ok(repo) = git2::Repository::open(&dir) else {
                    continue;
                };
                for (branch, turn) in wanted {
                    if let Some(sha) = turn_commit(&repo, &branch, turn) {
                        out.insert((session.clone(), branch, turn), sha);
                    }
                }
            }
            out
        })
        .await;
        found.unwrap_or_default()
    }
}

/// The commit of turn `turn` on `branch`: back from its tip along first
/// parents (a turn's number only falls going back).
fn turn_commit(repo: &git2::Repository, branch: &str, turn: u64) -> Option<String> {
    let tip = repo
        .find_reference(&format!("refs/heads/{branch}"))
        .ok()?
        .peel_to_commit()
        .ok()?;
    let mut cursor = Some(tip);
    while let Some(c) = cursor {
        let t = crate::git::Trailers::parse(c.message().unwrap_or("")).turn;
        if t == turn {
            return Some(c.id().to_string());
        }
        if t < turn {
            return None;
        }
        cursor = c.parent(0).ok();
    }
    None
}
