//! `GET /api/search`: full-text search over every session, branch and turn;
//! `POST /api/search/reindex`: rebuild the index from the repositories.

use actix_web::{web, HttpResponse};
use openprogram_actors::engine::{SearchQuery, SearchResult};
use openprogram_actors::limit::Limit;
use openprogram_actors::search::Hit;
use serde::{Deserialize, Serialize};

use crate::error::ApiError;
use crate::state::AppState;

/// The fields of a search, from a query string or a WebSocket frame.
#[derive(Debug, Deserialize)]
pub struct SearchParams {
    pub q: String,
    #[serde(default)]
    pub project_id: Option<String>,
    #[serde(default)]
    pub role: Option<String>,
    #[serde(default)]
    pub archived: Option<bool>,
    #[serde(default)]
    pub since: Option<f64>,
    #[serde(default)]
    pub until: Option<f64>,
    #[serde(default)]
    pub limit: Limit<20, 1000>,
    #[serde(default)]
    pub offset: usize,
    /// `session`: one row per session with its best hits.
    #[serde(default)]
    pub group: Option<String>,
}

impl SearchParams {
    pub fn into_query(self) -> Result<SearchQuery, ApiError> {
        let group_by_session = match self.group.as_deref() {
            None | Some("") | Some("message") => false,
            Some("session") => true,
            Some(other) => {
                return Err(ApiError::bad_request(
                    "invalid_query",
                    format!("group must be \"session\" or \"message\", not {other:?}"),
                ))
            }
        };
        if let Some(role) = &self.role {
            if !["user", "assistant", "tool", "title"].contains(&role.as_str()) {
                return Err(ApiError::bad_request(
                    "invalid_query",
                    format!("role must be user, assistant, tool or title, not {role:?}"),
                ));
            }
        }
        Ok(SearchQuery {
            q: self.q,
            project_id: self.project_id,
            role: self.role,
            archived: self.archived,
            since: self.since,
            until: self.until,
            limit: self.limit.get(),
            offset: self.offset,
            group_by_session,
        })
    }
}

/// The parameters `GET /api/search` knows (others are refused).
const KNOWN: &[&str] = &[
    "q",
    "project_id",
    "role",
    "archived",
    "since",
    "until",
    "limit",
    "offset",
    "group",
];

#[utoipa::path(get, path = "/api/search", tag = "search", summary = "Full-text search: BM25-ranked messages (or sessions) with highlighted snippets",
    params(
        ("q" = String, Query, description = "words, \"phrases\", prefix*, AND / OR / NOT, + / -"),
        ("project_id" = Option<String>, Query, description = "only this project's sessions"),
        ("role" = Option<String>, Query, description = "user, assistant, tool or title"),
        ("archived" = Option<bool>, Query, description = "true: only archived sessions; false: only active ones"),
        ("since" = Option<f64>, Query, description = "created at or after (seconds since the epoch)"),
        ("until" = Option<f64>, Query, description = "created at or before"),
        ("limit" = Option<usize>, Query, description = "1-1000, default 20"),
        ("offset" = Option<usize>, Query, description = "hits to skip"),
        ("group" = Option<String>, Query, description = "session: one row per session"),
    ),
    responses(
        (status = 200, description = "{total, hits} or {total, sessions}", body = SearchAnswer),
        (status = 400, description = "bad_query, invalid_query", body = crate::schemas::ErrorBody),
        (status = 500, description = "storage_error", body = crate::schemas::ErrorBody),
        (status = 503, description = "search_disabled", body = crate::schemas::ErrorBody),
    ))]
#[tracing::instrument(name = "search", skip(state))]
pub async fn search(
    state: web::Data<AppState>,
    req: actix_web::HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let bad = |m: String| ApiError::bad_request("invalid_query", m);
    let pairs = web::Query::<Vec<(String, String)>>::from_query(req.query_string())
        .map_err(|e| bad(e.to_string()))?;
    if let Some((k, _)) = pairs.iter().find(|(k, _)| !KNOWN.contains(&k.as_str())) {
        return Err(bad(format!("unknown parameter `{k}`")));
    }
    let params = web::Query::<SearchParams>::from_query(req.query_string())
        .map_err(|e| bad(e.to_string()))?;
    let q = params.into_inner().into_query()?;
    if let Some(cluster) = state.engine.cluster().cloned() {
        if !req
            .headers()
            .contains_key(crate::routes::cluster_search::LOCAL_ONLY)
        {
            return crate::routes::cluster_search::search(&state, cluster, &req, q).await;
        }
    }
    let found = state.engine.search(q).await?;
    Ok(HttpResponse::Ok().json(SearchAnswer::from(found)))
}

#[utoipa::path(post, path = "/api/search/reindex", tag = "search", summary = "Rebuild the search index from the session repositories (in the background)",
    responses(
        (status = 202, description = "{sessions}: how many are being indexed", body = crate::schemas::Reindexing),
        (status = 500, description = "storage_error", body = crate::schemas::ErrorBody),
        (status = 503, description = "search_disabled", body = crate::schemas::ErrorBody),
    ))]
#[tracing::instrument(name = "reindex", skip(state))]
pub async fn reindex(state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    let n = state.engine.reindex().await?;
    Ok(HttpResponse::Accepted().json(serde_json::json!({ "sessions": n })))
}

/// A hit as clients get it: the engine's data and its `snippet`, the text
/// as HTML with the matched words in `<b>` and everything else escaped.
#[derive(Serialize, utoipa::ToSchema)]
pub struct HitAnswer {
    #[serde(flatten)]
    pub hit: Hit,
    pub snippet: String,
}

impl From<Hit> for HitAnswer {
    fn from(hit: Hit) -> HitAnswer {
        let snippet = snippet_html(&hit.text, &hit.highlights);
        HitAnswer { hit, snippet }
    }
}

/// A session and its best hits (`group=session`).
#[derive(Serialize, utoipa::ToSchema)]
pub struct SessionHitsAnswer {
    pub session_id: String,
    pub title: String,
    pub score: f32,
    pub hits: Vec<HitAnswer>,
}

/// `GET /api/search` and the WebSocket's `search_results`.
#[derive(Serialize, utoipa::ToSchema)]
#[serde(untagged)]
pub enum SearchAnswer {
    Messages {
        total: usize,
        hits: Vec<HitAnswer>,
    },
    Sessions {
        total: usize,
        sessions: Vec<SessionHitsAnswer>,
    },
}

impl From<SearchResult> for SearchAnswer {
    fn from(found: SearchResult) -> SearchAnswer {
        match found {
            SearchResult::Messages { total, hits } => SearchAnswer::Messages {
                total,
                hits: hits.into_iter().map(HitAnswer::from).collect(),
            },
            SearchResult::Sessions { total, sessions } => SearchAnswer::Sessions {
                total,
                sessions: sessions
                    .into_iter()
                    .map(|s| SessionHitsAnswer {
                        session_id: s.session_id,
                        title: s.title,
                        score: s.score,
                        hits: s.hits.into_iter().map(HitAnswer::from).collect(),
                    })
                    .collect(),
            },
        }
    }
}

/// `text` as HTML: each range of `highlights` (byte ranges, in order) in
/// `<b>`, everything escaped. The part of a range before the end of the
/// previous one is not marked twice; a range not on character boundaries
/// is left unmarked.
pub fn snippet_html(text: &str, highlights: &[[usize; 2]]) -> String {
    let mut out = String::with_capacity(text.len() + 16);
    let mut at = 0;
    for &[start, end] in highlights {
        let start = start.max(at);
        if end <= start {
            continue;
        }
        let (Some(before), Some(marked)) = (text.get(at..start), text.get(start..end)) else {
            continue;
        };
        escape_into(&mut out, before);
        out.push_str("<b>");
        escape_into(&mut out, marked);
        out.push_str("</b>");
        at = end;
    }
    escape_into(&mut out, text.get(at..).unwrap_or_default());
    out
}

fn escape_into(out: &mut String, s: &str) {
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#x27;"),
            c => out.push(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::snippet_html;

    #[test]
    fn snippets_mark_the_ranges_and_escape_the_rest() {
        assert_eq!(
            snippet_html("a <parser> bug", &[[3, 9], [11, 14]]),
            "a &lt;<b>parser</b>&gt; <b>bug</b>"
        );
        assert_eq!(snippet_html("plain & simple", &[]), "plain &amp; simple");
        // Bad ranges never panic and never cut a character.
        assert_eq!(snippet_html("héllo", &[[2, 3], [9, 12], [1, 0]]), "héllo");
        // Overlapping ranges (bigrams) mark the union once.
        assert_eq!(
            snippet_html("解析器的", &[[0, 6], [3, 9]]),
            "<b>解析</b><b>器</b>的"
        );
    }
}
