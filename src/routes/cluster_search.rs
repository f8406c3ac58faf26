//! Search on a cluster node (docs/CLUSTER.md, "Search"): each node indexes
//! the sessions it holds (its index is fed by its own commits, so nothing
//! crosses the network per turn); a search asks every live node for its
//! best `offset + limit` answers at once and merges them by score. A node
//! that does not answer leaves its sessions out and is named in the
//! `X-OpenProgram-Partial` header.

use std::cmp::Ordering;

use actix_web::{web, HttpRequest, HttpResponse};
use openprogram_actors::cluster::Cluster;
use openprogram_actors::engine::SearchQuery;
use serde_json::Value;

use super::search::SearchAnswer;
use crate::error::ApiError;
use crate::state::AppState;

/// Set on the search a node sends another: answer from your own index.
pub const LOCAL_ONLY: &str = "X-OpenProgram-Local-Only";

/// Names the nodes whose sessions a merged search lacks.
pub const PARTIAL: &str = "X-OpenProgram-Partial";

/// How deep any node's answer goes (the API's largest page).
const DEEPEST: usize = 1000;

pub async fn search(
    state: &AppState,
    cluster: Cluster,
    req: &HttpRequest,
    q: SearchQuery,
) -> Result<HttpResponse, ApiError> {
    let (offset, limit, grouped) = (q.offset, q.limit, q.group_by_session);
    let depth = (offset + limit).min(DEEPEST);
    let mut mine = q;
    mine.offset = 0;
    mine.limit = depth;
    let local = state.engine.search(mine).await?;
    let local = serde_json::to_value(SearchAnswer::from(local)).unwrap_or_default();
    // The same search on every other live node, as deep as this page.
    let query: Vec<(String, String)> =
        web::Query::<Vec<(String, String)>>::from_query(req.query_string())
            .map(|q| q.into_inner())
            .unwrap_or_default()
            .into_iter()
            .filter(|(k, _)| k != "offset" && k != "limit")
            .chain([
                ("offset".into(), "0".into()),
                ("limit".into(), depth.to_string()),
            ])
            .collect();
    let me = cluster.node_id().to_string();
    let others: Vec<(String, String)> = cluster
        .status()
        .nodes
        .into_iter()
        .filter(|n| n.live && n.node_id != me)
        .map(|n| (n.node_id, n.advertise))
        .collect();
    let token = cluster.token().map(str::to_string);
    let answers = web::block(move || {
        std::thread::scope(|s| {
            let asks: Vec<_> = others
                .iter()
                .map(|(node, url)| {
                    let (query, token) = (&query, &token);
                    s.spawn(move || (node.clone(), ask(url, query, token.as_deref())))
                })
                .collect();
            asks.into_iter()
                .filter_map(|h| h.join().ok())
                .collect::<Vec<_>>()
        })
    })
    .await
    .map_err(|_| ApiError::from(openprogram_actors::EngineError::Unavailable))?;
    let key = if grouped { "sessions" } else { "hits" };
    // Each node's answers in its own order, the nodes in the order of
    // their ids; then a stable sort by score. Equal scores keep that
    // order, so the first `offset + limit` of the merge never depend on
    // how deep each node was asked: pages neither repeat nor skip.
    let mut lists: Vec<(String, Value)> = vec![(me, local)];
    let mut missing = Vec::new();
    for (node, answer) in answers {
        match answer {
            Ok(v) => lists.push((node, v)),
            Err(e) => {
                tracing::warn!(node = %node, error = %e, "a node did not answer a search");
                missing.push(node);
            }
        }
    }
    lists.sort_by(|a, b| a.0.cmp(&b.0));
    let total: u64 = lists
        .iter()
        .map(|(_, v)| v["total"].as_u64().unwrap_or(0))
        .sum();
    let mut items: Vec<Value> = lists
        .into_iter()
        .flat_map(|(_, v)| v[key].as_array().cloned().unwrap_or_default())
        .collect();
    items.sort_by(|a, b| {
        let (x, y) = (a["score"].as_f64(), b["score"].as_f64());
        y.partial_cmp(&x).unwrap_or(Ordering::Equal)
    });
    let page: Vec<Value> = items.into_iter().skip(offset).take(limit).collect();
    let mut out = HttpResponse::Ok();
    if !missing.is_empty() {
        out.insert_header((PARTIAL, missing.join(",")));
    }
    Ok(out.json(serde_json::json!({ "total": total, key: page })))
}

fn ask(base: &str, query: &[(String, String)], token: Option<&str>) -> Result<Value, String> {
    let agent = ureq::AgentBuilder::new()
        .timeout_connect(std::time::Duration::from_secs(2))
        .timeout(std::time::Duration::from_secs(30))
        .build();
    let mut r = agent
        .get(&format!("{}/api/search", base.trim_end_matches('/')))
        .set(LOCAL_ONLY, "1");
    for (k, v) in query {
        r = r.query(k, v);
    }
    if let Some(t) = token {
        r = r.set("Authorization", &format!("Bearer {t}"));
    }
    r.call()
        .map_err(|e| e.to_string())?
        .into_json()
        .map_err(|e| e.to_string())
}
