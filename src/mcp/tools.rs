//! The MCP tools, each a call of the engine (see `mod.rs` for the order
//! they are listed in, `args.rs` for their typed arguments).

use std::collections::BTreeMap;

use openprogram_actors::engine::SearchQuery;
use openprogram_actors::registry::ListQuery;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::{tool, tool_router, ErrorData};
use serde_json::{json, Value};

use super::args::*;
use super::views::{markdown, one_turn, session_turns};
use super::{answer, refused, MemoryServer};

/// Most rows a tool answers with.
const MAX_LIMIT: usize = 200;
/// Most turns `session_get` answers with at once.
const TURNS_PER_ANSWER: u64 = 50;

/// `limit` as given (1–200), or `default`; out of range is a tool error
/// (`invalid_input`), never clamped behind the agent's back.
fn limit(given: Option<u32>, default: usize) -> Result<usize, Result<CallToolResult, ErrorData>> {
    match given {
        None => Ok(default),
        Some(l) if (1..=MAX_LIMIT).contains(&(l as usize)) => Ok(l as usize),
        Some(l) => Err(refused(
            "invalid_input",
            format!("limit {l} is out of range: 1 to {MAX_LIMIT}"),
        )),
    }
}

/// An engine error as a tool error the agent reads.
fn failed(e: openprogram_actors::EngineError) -> Result<CallToolResult, ErrorData> {
    refused(e.code(), e.to_string())
}

/// A cursor: the offset of the next page, opaque to clients.
fn offset_of(cursor: Option<&str>) -> Result<usize, String> {
    match cursor {
        None | Some("") => Ok(0),
        Some(c) => c
            .strip_prefix("o")
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| format!("'{c}' is not a cursor this server gave")),
    }
}

fn next_cursor(offset: usize, shown: usize, total: usize) -> Value {
    if offset + shown < total {
        Value::String(format!("o{}", offset + shown))
    } else {
        Value::Null
    }
}

#[tool_router(vis = "pub(super)")]
impl MemoryServer {
    #[tool(
        description = "Search every session's messages; answers ids to fetch (the pair ChatGPT-style clients use).",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn search(
        &self,
        Parameters(args): Parameters<SearchArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let q = SearchQuery {
            q: args.query,
            limit: 10,
            ..SearchQuery::default()
        };
        let found = match self.engine.search(q).await {
            Ok(f) => f,
            Err(e) => return failed(e),
        };
        let hits = match serde_json::to_value(found) {
            Ok(v) => v["hits"].as_array().cloned().unwrap_or_default(),
            Err(_) => Vec::new(),
        };
        let mut seen = std::collections::HashSet::new();
        let results: Vec<Value> = hits
            .iter()
            .filter_map(|h| {
                let session = h["session_id"].as_str()?;
                let turn = h["turn"].as_u64().unwrap_or(0);
                let id = format!("{session}/{turn}");
                seen.insert(id.clone()).then(|| {
                    json!({"id": id, "title": h["title"], "url": self.link(session, Some(turn))})
                })
            })
            .collect();
        answer(json!({ "results": results }))
    }

    #[tool(
        description = "Fetch one turn by an id from search: its messages as text, with its session, branch and commit.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn fetch(
        &self,
        Parameters(args): Parameters<FetchArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let Some((session, turn)) = args
            .id
            .rsplit_once('/')
            .and_then(|(s, t)| Some((s.to_string(), t.parse::<u64>().ok()?)))
        else {
            return refused("invalid_input", "an id is <session id>/<turn>");
        };
        let title = match self.engine.meta(&session).await {
            Ok(m) => m.title,
            Err(e) => return failed(e),
        };
        let found = match one_turn(&self.engine, &session, Some(turn), None, None).await {
            Ok(t) => t,
            Err(e) => return failed(e),
        };
        let Some(t) = found else {
            return refused("not_found", format!("no turn {turn} in session {session}"));
        };
        let text = markdown(&title, std::slice::from_ref(&t));
        answer(json!({
            "id": args.id, "title": title, "text": text, "url": self.link(&session, Some(turn)),
            "metadata": {"session_id": session, "turn": t.turn, "branch": t.branch, "commit": t.commit}
        }))
    }

    #[tool(
        description = "Search past sessions: hits with session, title, branch, turn, commit, role, snippet, score and a web UI link; filters and a cursor.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn sessions_search(
        &self,
        Parameters(args): Parameters<SessionsSearchArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let offset = match offset_of(args.cursor.as_deref()) {
            Ok(o) => o,
            Err(e) => return refused("invalid_input", e),
        };
        let limit = match limit(args.limit, 10) {
            Ok(l) => l,
            Err(e) => return e,
        };
        // A branch filter looks further, then keeps that branch's hits.
        let want = if args.branch.is_some() {
            MAX_LIMIT
        } else {
            limit
        };
        let q = SearchQuery {
            q: args.query,
            project_id: args.project_id,
            role: args.role,
            archived: args.archived,
            since: args.since,
            until: args.until,
            limit: want,
            offset,
            group_by_session: false,
        };
        let found = match self.engine.search(q).await {
            Ok(f) => serde_json::to_value(f).unwrap_or_default(),
            Err(e) => return failed(e),
        };
        let total = found["total"].as_u64().unwrap_or(0) as usize;
        let mut hits: Vec<Value> = found["hits"].as_array().cloned().unwrap_or_default();
        if let Some(b) = &args.branch {
            hits.retain(|h| h["branch"].as_str() == Some(b.as_str()));
            hits.truncate(limit);
        }
        // Each hit's commit, read from the repositories (no session loaded).
        let places = hits
            .iter()
            .filter_map(|h| {
                Some((
                    h["session_id"].as_str()?.to_string(),
                    h["branch"].as_str()?.to_string(),
                    h["turn"].as_u64()?,
                ))
            })
            .collect();
        let commits = self.engine.hit_commits(places).await;
        let mut out = Vec::with_capacity(hits.len());
        for h in &hits {
            let session = h["session_id"].as_str().unwrap_or_default().to_string();
            let turn = h["turn"].as_u64();
            let commit = match (h["branch"].as_str(), turn) {
                (Some(b), Some(t)) => commits.get(&(session.clone(), b.to_string(), t)).cloned(),
                _ => None,
            };
            out.push(json!({
                "session_id": session, "title": h["title"], "branch": h["branch"], "turn": turn,
                "commit": commit, "node_id": h["node_id"], "role": h["role"], "tool": h["tool"],
                "snippet": h["text"], "score": h["score"], "created_at": h["created_at"],
                "link": self.link(&session, turn),
            }));
        }
        let next = if args.branch.is_some() {
            Value::Null
        } else {
            next_cursor(offset, out.len(), total)
        };
        answer(json!({"total": total, "hits": out, "next_cursor": next}))
    }

    #[tool(
        description = "List sessions, newest activity first: id, title, source, project, status, turns, times; filters and a cursor.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn sessions_list(
        &self,
        Parameters(args): Parameters<SessionsListArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let offset = match offset_of(args.cursor.as_deref()) {
            Ok(o) => o,
            Err(e) => return refused("invalid_input", e),
        };
        let limit = match limit(args.limit, 20) {
            Ok(l) => l,
            Err(e) => return e,
        };
        let mut q = ListQuery::everything(args.project_id);
        q.include_archived = false;
        q.archived = Some(args.archived.unwrap_or(false));
        q.source = args.source;
        q.pinned = args.pinned;
        q.offset = offset;
        q.limit = openprogram_actors::limit::ListLimit::new(limit).unwrap_or_default();
        let page = match self.engine.list_all(q).await {
            Ok(p) => p,
            Err(e) => return failed(e),
        };
        let total = page.total;
        let rows: Vec<Value> = page
            .sessions
            .iter()
            .map(|r| {
                json!({"session_id": r.id, "title": r.title, "source": r.source,
                       "project_id": r.project_id, "status": r.status, "pinned": r.pinned,
                       "archived": r.archived, "created_at": r.created_at,
                       "updated_at": r.updated_at, "preview": r.preview,
                       "link": self.link(&r.id, None)})
            })
            .collect();
        let next = next_cursor(offset, rows.len(), total);
        answer(json!({"total": total, "sessions": rows, "next_cursor": next}))
    }

    #[tool(
        description = "A session's turns (a range, on a branch): each turn's commit and messages, as data or as Markdown.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn session_get(
        &self,
        Parameters(args): Parameters<SessionGetArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let markdown_out = match args.format.as_deref() {
            None | Some("messages") => false,
            Some("markdown") => true,
            Some(other) => {
                return refused(
                    "invalid_input",
                    format!("format is messages or markdown (got '{other}')"),
                )
            }
        };
        let meta = match self.engine.meta(&args.session_id).await {
            Ok(m) => m,
            Err(e) => return failed(e),
        };
        let from = args.from_turn.unwrap_or(1).max(1);
        let to = args
            .to_turn
            .unwrap_or(u64::MAX)
            .min(from.saturating_add(TURNS_PER_ANSWER - 1));
        let (branch, turns) = match session_turns(
            &self.engine,
            &args.session_id,
            args.branch.as_deref(),
            from,
            to,
        )
        .await
        {
            Ok(t) => t,
            Err(e) => return failed(e),
        };
        let last = turns.last().map_or(0, |t| t.turn);
        // More after `to` on this line: its turn count when it is the one
        // shown, else as far as a full answer suggests.
        let more = last == to
            && args.to_turn.is_none_or(|t| t > to)
            && (args.branch.is_some() || to < meta.turn_count);
        let mut v = json!({
            "session_id": meta.id, "title": meta.title, "project_id": meta.project_id,
            "branch": branch, "turn_count": meta.turn_count,
            "next_from_turn": if more { json!(to + 1) } else { Value::Null },
            "link": self.link(&args.session_id, None),
        });
        if markdown_out {
            v["markdown"] = Value::String(markdown(&meta.title, &turns));
        } else {
            v["turns"] = serde_json::to_value(&turns).unwrap_or_default();
        }
        answer(v)
    }

    #[tool(
        description = "One turn by its number (on a branch) or its commit: its messages, branch, commit time and project commit.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn turn_get(
        &self,
        Parameters(args): Parameters<TurnGetArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        if args.turn.is_none() && args.commit.is_none() {
            return refused("invalid_input", "give the turn's number or its commit");
        }
        let found = match one_turn(
            &self.engine,
            &args.session_id,
            args.turn,
            args.commit.as_deref(),
            args.branch.as_deref(),
        )
        .await
        {
            Ok(t) => t,
            Err(e) => return failed(e),
        };
        match found {
            Some(t) => {
                let link = self.link(&args.session_id, Some(t.turn));
                let mut v = serde_json::to_value(&t).unwrap_or_default();
                v["session_id"] = Value::String(args.session_id);
                v["link"] = Value::String(link);
                answer(v)
            }
            None => refused("not_found", "no such turn in the session"),
        }
    }

    #[tool(
        description = "The agent's commits in a project, newest first, each linked to the session and turn that made it.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn project_commits(
        &self,
        Parameters(args): Parameters<ProjectCommitsArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let want = match limit(args.limit, 20) {
            Ok(l) => l,
            Err(e) => return e,
        };
        let commits = match self.engine.project_commits(&args.project_id, want).await {
            Ok(c) => c,
            Err(e) => return failed(e),
        };
        let rows: Vec<Value> = commits
            .iter()
            .map(|c| {
                let link = c.session_id.as_deref().map(|s| self.link(s, c.turn));
                json!({"commit": c.commit.sha, "summary": c.commit.summary,
                       "committed_at": c.commit.timestamp, "author": c.author,
                       "session_id": c.session_id, "turn": c.turn, "link": link})
            })
            .collect();
        answer(json!({"project_id": args.project_id, "commits": rows}))
    }

    #[tool(
        description = "What changed since a time: the sessions active since then, per project, newest first.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn recent_activity(
        &self,
        Parameters(args): Parameters<RecentActivityArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        if !args.since.is_finite() {
            return refused(
                "invalid_input",
                "since is a time in seconds since the epoch",
            );
        }
        let page = match self.engine.list(ListQuery::everything(None)).await {
            Ok(p) => p,
            Err(e) => return failed(e),
        };
        let mut projects: BTreeMap<String, Vec<Value>> = BTreeMap::new();
        let cap = match limit(args.limit, 50) {
            Ok(l) => l,
            Err(e) => return e,
        };
        let active = page.sessions.iter().filter(|r| r.updated_at >= args.since);
        for r in active.take(cap) {
            projects
                .entry(r.project_id.clone())
                .or_default()
                .push(json!({
                    "session_id": r.id, "title": r.title, "updated_at": r.updated_at,
                    "status": r.status, "source": r.source, "link": self.link(&r.id, None),
                }));
        }
        let projects: Vec<Value> = projects
            .into_iter()
            .map(|(p, s)| json!({"project_id": p, "sessions": s}))
            .collect();
        answer(json!({"since": args.since, "projects": projects}))
    }

    #[tool(
        description = "Resolve provenance pointers (project, session, node ids, commit): the nodes as that commit holds them, the session's title and the turn's project commit; a status per pointer.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn provenance_resolve(
        &self,
        Parameters(args): Parameters<ProvenanceArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        use openprogram_actors::engine::{Pointer, MAX_POINTERS};
        if args.pointers.len() > MAX_POINTERS {
            return refused(
                "invalid_input",
                format!("at most {MAX_POINTERS} pointers per call"),
            );
        }
        let pointers = args
            .pointers
            .into_iter()
            .map(|p| Pointer {
                project_id: p.project_id,
                session_id: p.session_id,
                node_ids: p.node_ids,
                commit: p.commit,
                event_time: p.event_time,
                ingestion_time: p.ingestion_time,
            })
            .collect();
        let results = self.engine.resolve_provenance(pointers).await;
        answer(json!({ "results": results }))
    }

    #[tool(
        description = "Append a note to a session: a runtime node (named mcp/note) kept with the session's next commit. Only with mcp.allow_writes.",
        annotations(
            read_only_hint = false,
            destructive_hint = false,
            open_world_hint = false
        )
    )]
    async fn session_note(
        &self,
        Parameters(args): Parameters<NoteArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        use openprogram_actors::node::Role;
        use openprogram_actors::session::{NewNode, ROOT_CALLER};
        if args.text.trim().is_empty() {
            return refused("invalid_input", "a note has text");
        }
        let mut metadata = serde_json::Map::new();
        metadata.insert("display".into(), "runtime".into());
        metadata.insert("source".into(), "mcp".into());
        let node = NewNode {
            id: None,
            role: Role::System,
            content: Value::String(args.text),
            predecessor: None,
            caller: Some(ROOT_CALLER.into()),
            metadata,
            name: Some("mcp/note".into()),
            output: None,
            at: None,
        };
        match self.engine.append(&args.session_id, node, None).await {
            Ok(out) => answer(
                json!({"session_id": args.session_id, "node_id": out.node.id,
                                     "seq": out.node.seq}),
            ),
            Err(e) => failed(e),
        }
    }

    #[tool(
        description = "Fork a session at a turn commit (default: its last turn) into a new session with that history. Only with mcp.allow_writes.",
        annotations(
            read_only_hint = false,
            destructive_hint = false,
            open_world_hint = false
        )
    )]
    async fn session_fork(
        &self,
        Parameters(args): Parameters<ForkArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        match self.engine.fork(&args.session_id, args.commit, None).await {
            Ok(meta) => answer(json!({"session_id": meta.id, "title": meta.title,
                                     "forked_from": args.session_id,
                                     "turn_count": meta.turn_count,
                                     "link": self.link(&meta.id, None)})),
            Err(e) => failed(e),
        }
    }

    #[tool(
        description = "Set a session's title (locked, as a rename), pin or archive it. Only with mcp.allow_writes.",
        annotations(
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn session_update(
        &self,
        Parameters(args): Parameters<UpdateArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        use openprogram_actors::meta::MetaPatch;
        if args.title.is_none() && args.pinned.is_none() && args.archived.is_none() {
            return refused("invalid_input", "give a title, pinned or archived");
        }
        if let Some(t) = &args.title {
            if let Err(e) = self.engine.rename_or_regenerate(&args.session_id, t).await {
                return failed(e);
            }
        }
        let patch = MetaPatch {
            pinned: args.pinned,
            archived: args.archived,
            ..MetaPatch::default()
        };
        let meta = if args.pinned.is_some() || args.archived.is_some() {
            self.engine.update_meta(&args.session_id, patch).await
        } else {
            self.engine.meta(&args.session_id).await
        };
        match meta {
            Ok(m) => answer(
                json!({"session_id": m.id, "title": m.title, "pinned": m.pinned,
                                  "archived": m.archived}),
            ),
            Err(e) => failed(e),
        }
    }
}
