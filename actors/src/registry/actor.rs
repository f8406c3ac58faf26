//! The registry actor: sole owner of `index.json`, `index.journal` and the
//! in-memory list of sessions. Listing is answered from memory; changes
//! from session actors arrive as `SessionChanged` events. A change is one
//! journal line with the row (appends debounced: at most one write per
//! interval; every other change at once), so its cost does not grow with
//! the number of sessions; a snapshot of every row replaces the journal
//! once it is as long as the list (and at shutdown).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use serde::Serialize;

use super::journal::Entry;
use super::query::ListQuery;
use super::row::{OrderKey, SessionRow};
use super::writer::{Done, Job, Writer};
use crate::events::Hub;
use crate::messages::{ChangeKind, ProjectNames, SessionChanged, SetProjectNames, Touched};
use crate::meta::now;

pub struct SessionRegistry {
    hub: Option<Hub>,
    rows: HashMap<String, Arc<SessionRow>>,
    /// The same rows in list order, so a page is read without a lookup
    /// per row.
    order: BTreeMap<OrderKey, Arc<SessionRow>>,
    /// How many rows are archived (the rest are active): the total of an
    /// unfiltered page without a scan.
    archived: usize,
    writer: Writer,
    debounce: Duration,
    pending: Option<SpawnHandle>,
    names: Arc<ProjectNames>,
    search: Option<Recipient<Touched>>,
    /// The last journal entry's number.
    seq: u64,
    /// Journal entries since the last snapshot.
    journaled: usize,
    /// Sessions changed and not written yet.
    dirty: HashSet<String>,
    /// Every row change, for the cluster's shared list (`RowsOut`).
    rows_out: Option<crossbeam_channel::Sender<RowChange>>,
}

/// A row as it is now (None: the session is gone from this registry).
pub type RowChange = (String, Option<Arc<SessionRow>>);

/// A snapshot replaces the journal once it has this many entries, or as
/// many as there are sessions (so compaction costs O(1) per change).
const MIN_COMPACTION: usize = 1000;

impl SessionRegistry {
    /// `rows` by id; `seq`: the last journal entry number startup saw.
    pub fn new(
        rows: HashMap<String, Arc<SessionRow>>,
        writer: Writer,
        debounce: Duration,
        seq: u64,
    ) -> SessionRegistry {
        let mut reg = SessionRegistry {
            hub: None,
            rows: HashMap::new(),
            order: BTreeMap::new(),
            archived: 0,
            writer,
            debounce,
            pending: None,
            names: Arc::default(),
            search: None,
            seq,
            journaled: 0,
            dirty: HashSet::new(),
            rows_out: None,
        };
        // Built in bulk: the list order from one sort (a BTreeMap made
        // from sorted keys is built leaf by leaf); the rows by id as given.
        let mut order: Vec<(OrderKey, Arc<SessionRow>)> = rows
            .values()
            .map(|r| (r.order_key(), Arc::clone(r)))
            .collect();
        order.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        reg.archived = order.iter().filter(|(_, r)| r.archived).count();
        reg.order = order.into_iter().collect();
        reg.rows = rows;
        reg
    }

    /// Tell the search index about every change from now on.
    pub fn with_search(mut self, search: Recipient<Touched>) -> SessionRegistry {
        self.search = Some(search);
        self
    }

    /// Publish changes to `hub` from now on.
    pub fn with_hub(mut self, hub: Hub) -> SessionRegistry {
        self.hub = Some(hub);
        self
    }

    /// Broadcast what changed: `session_created` with the row,
    /// `session_updated` with only the changed fields, `session_deleted`.
    /// Appends that only move `updated_at`/`preview` (a streamed reply) are
    /// not broadcast; a turn starting or ending is.
    fn publish(&self, kind: ChangeKind, old: Option<&SessionRow>, new: Option<&SessionRow>) {
        let Some(hub) = &self.hub else { return };
        match (old, new) {
            (None, Some(row)) => hub.publish(
                "session_created",
                row.to_client_json(self.names.of(&row.project_id)),
                None,
            ),
            (Some(old), None) => {
                let id = serde_json::Value::from(old.id.clone());
                hub.publish(
                    "session_deleted",
                    serde_json::json!({ "session_id": id }),
                    Some(("session_id", id)),
                );
            }
            (Some(old), Some(new)) => {
                let (a, b) = (
                    old.to_client_json(self.names.of(&old.project_id)),
                    new.to_client_json(self.names.of(&new.project_id)),
                );
                let (Some(a), Some(b)) = (a.as_object(), b.as_object()) else {
                    return;
                };
                let mut changed = serde_json::Map::new();
                // (`archived_at` follows `archived`: the frame names the
                // fields the client changed, as the original's does.)
                for (k, v) in b.iter().filter(|(k, _)| *k != "archived_at") {
                    if a.get(k) != Some(v) {
                        changed.insert(k.clone(), v.clone());
                    }
                }
                let content_only = changed.keys().all(|k| k == "updated_at" || k == "preview");
                if changed.is_empty() || (kind == ChangeKind::Appended && content_only) {
                    return;
                }
                changed.insert("id".into(), new.id.clone().into());
                hub.publish("session_updated", serde_json::Value::Object(changed), None);
            }
            (None, None) => {}
        }
    }

    fn put(&mut self, row: SessionRow) -> bool {
        if let Some(old) = self.rows.get(&row.id) {
            if **old == row {
                return false;
            }
        }
        self.remove(&row.id);
        let row = Arc::new(row);
        self.archived += usize::from(row.archived);
        self.order.insert(row.order_key(), Arc::clone(&row));
        self.rows.insert(row.id.clone(), row);
        true
    }

    fn remove(&mut self, id: &str) -> bool {
        match self.rows.remove(id) {
            Some(old) => {
                self.order.remove(&old.order_key());
                self.archived -= usize::from(old.archived);
                true
            }
            None => false,
        }
    }

    /// Rows a query can match by its archive selection alone.
    fn count(&self, q: &ListQuery) -> usize {
        match q.archived {
            Some(true) => self.archived,
            Some(false) => self.rows.len() - self.archived,
            None if q.include_archived => self.rows.len(),
            None => self.rows.len() - self.archived,
        }
    }

    fn snapshot(&mut self, done: Done) -> Job {
        self.dirty.clear();
        self.journaled = 0;
        Job::Snapshot {
            rows: self.rows.values().cloned().collect(),
            taken_at: now(),
            seq: self.seq,
            done,
        }
    }

    /// The journal entries of the sessions changed since the last write.
    fn entries(&mut self) -> Vec<Entry> {
        let at = now();
        let mut out = Vec::with_capacity(self.dirty.len());
        for id in std::mem::take(&mut self.dirty) {
            self.seq += 1;
            let row = self.rows.get(&id).map(|r| SessionRow::clone(r));
            out.push(Entry {
                seq: self.seq,
                at,
                deleted: row.is_none().then_some(id),
                row,
            });
        }
        self.journaled += out.len();
        out
    }

    /// Write what changed now; a pending debounced write is covered.
    /// `durable`: the journal line is fsynced (a creation, a deletion);
    /// else left to the kernel (`journal::append` says why that is safe).
    fn write_now(&mut self, ctx: &mut Context<Self>, done: Done, durable: bool) {
        if let Some(h) = self.pending.take() {
            ctx.cancel_future(h);
        }
        let entries = self.entries();
        if self.journaled >= MIN_COMPACTION.max(self.rows.len()) {
            let job = self.snapshot(done);
            self.writer.submit(job);
        } else if !entries.is_empty() || done.is_some() {
            self.writer.submit(Job::Append {
                entries,
                done,
                durable,
            });
        }
    }

    /// Write every row now (shutdown, `Flush`), emptying the journal.
    fn write_snapshot(&mut self, ctx: &mut Context<Self>, done: Done) {
        if let Some(h) = self.pending.take() {
            ctx.cancel_future(h);
        }
        let job = self.snapshot(done);
        self.writer.submit(job);
    }

    fn write_later(&mut self, ctx: &mut Context<Self>) {
        if self.pending.is_none() {
            self.pending = Some(ctx.run_later(self.debounce, |act, ctx| {
                act.pending = None;
                act.write_now(ctx, None, true);
            }));
        }
    }
}

impl Actor for SessionRegistry {
    type Context = Context<Self>;
}

impl Handler<SessionChanged> for SessionRegistry {
    type Result = ();

    fn handle(&mut self, msg: SessionChanged, ctx: &mut Context<Self>) {
        let id = msg.meta.id.clone();
        let old = self.rows.get(&id).cloned();
        // Appends wait for their turn's commit: the index reads commits.
        if let (Some(search), false) = (&self.search, msg.kind == ChangeKind::Appended) {
            let row = SessionRow::from_meta(&msg.meta, None, msg.first_preview.clone());
            search.do_send(Touched {
                id: id.clone(),
                dir: msg.dir.clone(),
                title: row.search_title(),
                deleted: msg.kind == ChangeKind::Deleted,
            });
        }
        match msg.kind {
            ChangeKind::Deleted => {
                if self.remove(&id) {
                    self.publish(ChangeKind::Deleted, old.as_deref(), None);
                    self.dirty.insert(id);
                    self.write_now(ctx, None, true);
                }
            }
            kind => {
                let row = SessionRow::from_meta(&msg.meta, msg.preview, msg.first_preview);
                self.publish(kind, old.as_deref(), Some(&row));
                let changed = self.put(row);
                if changed {
                    self.dirty.insert(id);
                }
                match kind {
                    _ if !changed => {}
                    // A session discovered by loading it (e.g. a fork) is new
                    // to the list: written at once like a creation.
                    ChangeKind::Loaded if old.is_none() => self.write_now(ctx, None, true),
                    ChangeKind::Appended | ChangeKind::Loaded => self.write_later(ctx),
                    ChangeKind::Updated => self.write_now(ctx, None, false),
                    _ => self.write_now(ctx, None, true),
                }
            }
        }
        if let Some(out) = &self.rows_out {
            let id = msg.meta.id;
            let row = self.rows.get(&id).cloned();
            let _ = out.send((id, row));
        }
    }
}

/// The project names rows are shown with.
#[derive(Message)]
#[rtype(result = "Arc<ProjectNames>")]
pub struct Names;

impl Handler<Names> for SessionRegistry {
    type Result = MessageResult<Names>;

    fn handle(&mut self, _: Names, _: &mut Context<Self>) -> Self::Result {
        MessageResult(self.names.clone())
    }
}

/// Send every row now, and every change from now on, to `0` (a cluster
/// node's shared list).
#[derive(Message)]
#[rtype(result = "()")]
pub struct RowsOut(pub crossbeam_channel::Sender<RowChange>);

impl Handler<RowsOut> for SessionRegistry {
    type Result = ();

    fn handle(&mut self, msg: RowsOut, _: &mut Context<Self>) {
        for (id, row) in &self.rows {
            let _ = msg.0.send((id.clone(), Some(Arc::clone(row))));
        }
        self.rows_out = Some(msg.0);
    }
}

#[derive(Debug, Clone)]
pub struct Page {
    /// Rows matching the filters, before offset/limit.
    pub total: usize,
    /// Shared with the registry: a page copies no row.
    pub sessions: Vec<Arc<SessionRow>>,
    /// Project names for the rows' `project` field.
    pub names: Arc<ProjectNames>,
}

impl Page {
    /// `{"total": …, "sessions": [rows as clients see them]}`, from each
    /// row's kept JSON (`SessionRow::client_json`): the same bytes as
    /// serializing `total` and `client_rows()`, handed out in pieces.
    pub fn json(&self) -> super::page_json::PageJson {
        super::page_json::PageJson::new(self.total, self.kept_rows())
    }

    /// The rows as clients see them, a JSON array, from their kept JSON.
    pub fn rows_json(&self) -> super::page_json::PageJson {
        super::page_json::PageJson::array(self.kept_rows())
    }

    fn kept_rows(&self) -> Vec<Arc<[u8]>> {
        self.sessions
            .iter()
            .map(|r| r.client_json(self.names.of(&r.project_id)))
            .collect()
    }

    /// `json()` in one buffer.
    #[cfg(test)]
    pub fn client_json(&self) -> Vec<u8> {
        self.json().into_bytes()
    }

    /// The rows as clients see them.
    #[cfg(test)]
    pub fn client_rows(&self) -> Vec<super::row::ClientRow<'_>> {
        self.sessions
            .iter()
            .map(|r| r.client(self.names.of(&r.project_id)))
            .collect()
    }
}

/// List rows (snapshots) by `updated_at`, newest first.
#[derive(Message)]
#[rtype(result = "Page")]
pub struct List(pub ListQuery);

impl Handler<List> for SessionRegistry {
    type Result = MessageResult<List>;

    fn handle(&mut self, List(q): List, _: &mut Context<Self>) -> Self::Result {
        let (offset, limit) = (q.offset, q.limit());
        // Without filters beyond the archive selection the total is known,
        // and the scan stops at the end of the page.
        let known = q.archive_only().then(|| self.count(&q));
        let mut total = 0;
        let mut sessions = Vec::new();
        for row in self.order.values() {
            if known.is_some() && sessions.len() >= limit {
                break;
            }
            if q.matches(row) {
                if total >= offset && sessions.len() < limit {
                    sessions.push(Arc::clone(row));
                }
                total += 1;
            }
        }
        MessageResult(Page {
            total: known.unwrap_or(total),
            sessions,
            names: self.names.clone(),
        })
    }
}

impl Handler<SetProjectNames> for SessionRegistry {
    type Result = ();

    fn handle(&mut self, msg: SetProjectNames, _: &mut Context<Self>) {
        self.names = Arc::new(msg.0);
    }
}

/// Which sessions each project holds right now (archived ones included),
/// newest first: the live membership `projects_list` shows.
#[derive(Message)]
#[rtype(result = "HashMap<String, Vec<String>>")]
pub struct Members;

impl Handler<Members> for SessionRegistry {
    type Result = MessageResult<Members>;

    fn handle(&mut self, _: Members, _: &mut Context<Self>) -> Self::Result {
        let mut out: HashMap<String, Vec<String>> = HashMap::new();
        for row in self.order.values() {
            out.entry(row.project_id.clone())
                .or_default()
                .push(row.id.clone());
        }
        MessageResult(out)
    }
}

#[derive(Message)]
#[rtype(result = "Option<SessionRow>")]
pub struct GetRow(pub String);

impl Handler<GetRow> for SessionRegistry {
    type Result = Option<SessionRow>;

    fn handle(&mut self, msg: GetRow, _: &mut Context<Self>) -> Self::Result {
        self.rows.get(&msg.0).map(|r| SessionRow::clone(r))
    }
}

/// Write `index.json` (every row) now and wait until it is durable
/// (graceful shutdown).
#[derive(Message)]
#[rtype(result = "()")]
pub struct Flush;

impl Handler<Flush> for SessionRegistry {
    type Result = ResponseFuture<()>;

    fn handle(&mut self, _: Flush, ctx: &mut Context<Self>) -> Self::Result {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.write_snapshot(ctx, Some(tx));
        Box::pin(async move {
            let _ = rx.await;
        })
    }
}

/// The entry number of the last snapshot when nothing changed since it
/// was written (no journal entry after it, nothing waiting to be
/// written); `None` otherwise. Asked at the end of a graceful stop.
#[derive(Message)]
#[rtype(result = "Option<u64>")]
pub struct Settled;

impl Handler<Settled> for SessionRegistry {
    type Result = Option<u64>;

    fn handle(&mut self, _: Settled, _: &mut Context<Self>) -> Self::Result {
        (self.journaled == 0 && self.dirty.is_empty() && self.pending.is_none()).then_some(self.seq)
    }
}

#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RegistryStats {
    pub sessions: usize,
    pub index_writes: u64,
    /// Sessions whose last turn's commit is still pending.
    pub commits_pending: usize,
    /// Sessions by status (`idle`, `running`, …).
    pub by_status: std::collections::BTreeMap<String, usize>,
}

#[derive(Message)]
#[rtype(result = "RegistryStats")]
pub struct Stats;

impl Handler<Stats> for SessionRegistry {
    type Result = MessageResult<Stats>;

    fn handle(&mut self, _: Stats, _: &mut Context<Self>) -> Self::Result {
        MessageResult(RegistryStats {
            sessions: self.rows.len(),
            index_writes: self.writer.writes(),
            commits_pending: self.rows.values().filter(|r| r.commit_pending).count(),
            by_status: {
                // Every status, zero included, so a gauge falls back to 0.
                let mut counts = [0usize; crate::meta::Status::ALL.len()];
                for r in self.rows.values() {
                    if let Some(i) = crate::meta::Status::ALL.iter().position(|s| *s == r.status) {
                        counts[i] += 1;
                    }
                }
                crate::meta::Status::ALL
                    .iter()
                    .zip(counts)
                    .map(|(s, n)| (s.as_str().to_string(), n))
                    .collect()
            },
        })
    }
}
