//! The session manager: routes a session id to its live actor, starting it
//! on demand and keeping at most `cap` of them (LRU). Eviction is lossless:
//! everything a session acknowledged is on disk, and an evicted actor stops
//! once its last in-flight request is answered. A per-session lease makes a
//! new actor for the same session wait until the old one has let go, so one
//! repository never has two writers.
//!
//! The manager owns the in-memory `locations.json` map; its file is written
//! by the `LocationsWriter` thread, so no handler here blocks the arbiter
//! that dispatches every session. A handler that changes a location answers
//! only once the file holding the change is durable.

use std::collections::HashMap;
use std::num::NonZeroUsize;
use std::path::PathBuf;
use std::sync::Arc;

use actix::prelude::*;
use lru::LruCache;
use tokio::sync::Mutex;

use crate::ids;
use crate::locations::{Locations, LocationsWriter};
use crate::messages::{ApplyTitle, SessionChanged};
use crate::project::ProjectRegistry;
use crate::session::actor::Naming;
use crate::session::{SessionActor, SessionError};
use crate::store::Store;

pub struct SessionManager {
    store: Store,
    locations: Locations,
    writer: LocationsWriter,
    projects: Option<Addr<ProjectRegistry>>,
    naming: Option<Naming>,
    cap: usize,
    live: LruCache<String, Addr<SessionActor>>,
    leases: HashMap<String, Arc<Mutex<()>>>,
    events: Option<Recipient<SessionChanged>>,
    keeper: Option<crate::pack_keeper::PackKeeper>,
    /// Session folders whose files lack writes the log holds (the server
    /// started on a full disk): never opened (`SessionError::AwaitingReplay`).
    pending: Arc<std::collections::HashSet<PathBuf>>,
}

impl SessionManager {
    pub fn new(
        store: Store,
        locations: Locations,
        writer: LocationsWriter,
        cap: usize,
        events: Option<Recipient<SessionChanged>>,
        projects: Option<Addr<ProjectRegistry>>,
    ) -> Self {
        SessionManager {
            store,
            locations,
            writer,
            projects,
            naming: None,
            cap,
            live: LruCache::new(NonZeroUsize::new(cap).unwrap_or(NonZeroUsize::MIN)),
            leases: HashMap::new(),
            events,
            keeper: None,
            pending: Arc::default(),
        }
    }

    /// Session folders not to open: their files lack writes the log holds.
    pub fn with_pending(mut self, pending: std::collections::HashSet<PathBuf>) -> Self {
        self.pending = Arc::new(pending);
        self
    }

    /// Sessions merge their packs with `keeper` (none: never merged while
    /// the server runs; `openprogram gc` still does).
    pub fn with_pack_keeper(mut self, keeper: crate::pack_keeper::PackKeeper) -> Self {
        self.keeper = Some(keeper);
        self
    }
}

impl Actor for SessionManager {
    type Context = Context<Self>;
}

/// The actor of a session (started if needed). The session itself may not
/// exist yet: the actor answers `NotFound` until something creates it.
#[derive(Message)]
#[rtype(result = "Result<Addr<SessionActor>, SessionError>")]
pub struct Resolve {
    pub id: String,
}

impl Handler<Resolve> for SessionManager {
    type Result = Result<Addr<SessionActor>, SessionError>;

    fn handle(&mut self, msg: Resolve, _: &mut Self::Context) -> Self::Result {
        self.resolve(msg.id)
    }
}

/// A message for the actor of session `.0`, delivered by the manager
/// (`Resolve` and the send in one): the caller waits for one answer from
/// the arbiter every session actor runs on, not two. `.2`: the caller's
/// request stage, told when the session's actor has to be started (its
/// load waits for the session's previous actor to end).
pub struct Via<M>(pub String, pub M, pub Option<crate::stage::Stage>);

/// Why a message sent `Via` the manager got no answer from its session.
#[derive(Debug)]
pub enum ViaError {
    /// The session's actor could not be started.
    Resolve(SessionError),
    /// The actor stopped before it took the message (evicted, or the
    /// session deleted): asking again starts a new one.
    Closed,
    Timeout,
}

impl<M> Message for Via<M>
where
    M: Message + Send + 'static,
    M::Result: Send,
{
    type Result = Result<M::Result, ViaError>;
}

impl<M> Handler<Via<M>> for SessionManager
where
    M: Message + Send + 'static,
    M::Result: Send,
    SessionActor: Handler<M>,
{
    type Result = ResponseFuture<Result<M::Result, ViaError>>;

    fn handle(&mut self, Via(id, msg, stage): Via<M>, _: &mut Self::Context) -> Self::Result {
        let started = !self.live.get(&id).is_some_and(|a| a.connected());
        if let (true, Some(stage)) = (started, &stage) {
            stage.set("the session's actor: loading it (after its previous actor ended)");
        }
        let addr = match self.resolve(id) {
            Ok(addr) => addr,
            Err(e) => return Box::pin(std::future::ready(Err(ViaError::Resolve(e)))),
        };
        Box::pin(async move {
            addr.send(msg).await.map_err(|e| match e {
                MailboxError::Closed => ViaError::Closed,
                MailboxError::Timeout => ViaError::Timeout,
            })
        })
    }
}

impl SessionManager {
    /// The live actor of session `id`, started if needed.
    fn resolve(&mut self, id: String) -> Result<Addr<SessionActor>, SessionError> {
        ids::validate("session id", &id)?;
        if let Some(addr) = self.live.get(&id) {
            if addr.connected() {
                return Ok(addr.clone());
            }
        }
        let lease = self.leases.entry(id.clone()).or_default().clone();
        let dir = match self.locations.get(&id) {
            Some(d) => d.to_path_buf(),
            None => self.store.default_session_dir(&id),
        };
        if self.pending.contains(&dir) {
            return Err(SessionError::AwaitingReplay);
        }
        if self.store.awaits_replay(&dir) {
            // Acknowledged writes the full disk refused: written again in
            // the background; the session is served once they are in place.
            self.store.retry_unapplied();
            return Err(SessionError::WritesWaiting);
        }
        let addr = SessionActor::new(
            self.store.clone(),
            dir,
            lease,
            self.events.clone(),
            self.projects.clone(),
            self.naming.clone(),
        )
        .with_pack_keeper(self.keeper.clone())
        .start();
        // An evicted actor is told (its pending maintenance withdrawn),
        // then dropped here: it stops once its own messages are done.
        if let Some((_, evicted)) = self.live.push(id, addr.clone()) {
            evicted.do_send(crate::session::upkeep::LetGo);
        }
        if self.leases.len() > 4 * self.cap {
            self.leases.retain(|_, lease| Arc::strong_count(lease) > 1);
        }
        Ok(addr)
    }
}

/// Drop the live actor and the recorded location of a deleted session.
#[derive(Message)]
#[rtype(result = "std::io::Result<()>")]
pub struct Forget {
    pub id: String,
}

impl Handler<Forget> for SessionManager {
    type Result = ResponseFuture<std::io::Result<()>>;

    fn handle(&mut self, msg: Forget, _: &mut Self::Context) -> Self::Result {
        self.live.pop(&msg.id);
        if self.locations.remove(&msg.id) {
            Box::pin(self.writer.save(&self.locations))
        } else {
            Box::pin(async { Ok(()) })
        }
    }
}

/// Number of live session actors (for health and tests).
#[derive(Message)]
#[rtype(result = "usize")]
pub struct LiveCount;

impl Handler<LiveCount> for SessionManager {
    type Result = usize;

    fn handle(&mut self, _: LiveCount, _: &mut Self::Context) -> usize {
        self.live.len()
    }
}

/// The ids of the sessions that live outside the sessions folder (in a
/// project folder): an id there is taken though `<sessions>/<id>` is free.
#[derive(Message)]
#[rtype(result = "std::collections::HashSet<String>")]
pub struct Elsewhere;

impl Handler<Elsewhere> for SessionManager {
    type Result = MessageResult<Elsewhere>;

    fn handle(&mut self, _: Elsewhere, _: &mut Self::Context) -> Self::Result {
        MessageResult(self.locations.iter().map(|(id, _)| id.clone()).collect())
    }
}

/// Where a session's folder is (recorded, or the default place).
#[derive(Message)]
#[rtype(result = "std::io::Result<PathBuf>")]
pub struct Locate(pub String);

impl Handler<Locate> for SessionManager {
    type Result = std::io::Result<PathBuf>;

    fn handle(&mut self, msg: Locate, _: &mut Self::Context) -> Self::Result {
        Ok(self.dir_of(&msg.0))
    }
}

impl SessionManager {
    fn dir_of(&self, id: &str) -> PathBuf {
        match self.locations.get(id) {
            Some(d) => d.to_path_buf(),
            None => self.store.default_session_dir(id),
        }
    }
}

/// Before a session is created inside a project: record where it will
/// live. A session that already exists (live, recorded or on disk) keeps
/// its place; the answer is where the session lives.
#[derive(Message)]
#[rtype(result = "std::io::Result<PathBuf>")]
pub struct Place {
    pub id: String,
    pub dir: PathBuf,
}

impl Handler<Place> for SessionManager {
    type Result = ResponseActFuture<Self, std::io::Result<PathBuf>>;

    fn handle(&mut self, msg: Place, _: &mut Self::Context) -> Self::Result {
        let current = self.dir_of(&msg.id);
        if self.live.get(&msg.id).is_some() || self.locations.get(&msg.id).is_some() {
            return Box::pin(fut::ready(Ok(current)));
        }
        // Whether it already exists in the state directory: a stat, so on
        // the blocking pool, then back in the actor to record the place.
        let probe = current.clone();
        let exists = async move {
            tokio::task::spawn_blocking(move || probe.exists())
                .await
                .unwrap_or(false)
        };
        Box::pin(exists.into_actor(self).then(move |exists, act, _| {
            let recorded = act.locations.get(&msg.id).map(PathBuf::from);
            let saved: std::pin::Pin<Box<dyn std::future::Future<Output = _>>> =
                match (exists, recorded) {
                    (true, _) => Box::pin(async move { Ok(current) }),
                    // Placed by a concurrent request meanwhile.
                    (false, Some(dir)) => Box::pin(async move { Ok(dir) }),
                    (false, None) => {
                        act.locations.insert(msg.id, msg.dir.clone());
                        let saved = act.writer.save(&act.locations);
                        Box::pin(async move { saved.await.map(|()| msg.dir) })
                    }
                };
            saved.into_actor(act)
        }))
    }
}

/// A session's repository moved (rebind): record its new place (`None`:
/// back in the state directory).
#[derive(Message)]
#[rtype(result = "std::io::Result<()>")]
pub struct Moved {
    pub id: String,
    pub dir: Option<PathBuf>,
}

impl Handler<Moved> for SessionManager {
    type Result = ResponseFuture<std::io::Result<()>>;

    fn handle(&mut self, msg: Moved, _: &mut Self::Context) -> Self::Result {
        match msg.dir {
            Some(d) => self.locations.insert(msg.id, d),
            None => {
                self.locations.remove(&msg.id);
            }
        }
        Box::pin(self.writer.save(&self.locations))
    }
}

/// A project folder moved: every recorded session under `old` now lives
/// under `new`. Their live actors are dropped so the next request loads
/// them from the new place. Returns the ids that moved.
#[derive(Message)]
#[rtype(result = "std::io::Result<Vec<String>>")]
pub struct Relocated {
    pub old: PathBuf,
    pub new: PathBuf,
}

impl Handler<Relocated> for SessionManager {
    type Result = ResponseFuture<std::io::Result<Vec<String>>>;

    fn handle(&mut self, msg: Relocated, _: &mut Self::Context) -> Self::Result {
        let moved: Vec<(String, PathBuf)> = self
            .locations
            .iter()
            .filter_map(|(id, dir)| {
                dir.strip_prefix(&msg.old)
                    .ok()
                    .map(|rest| (id.clone(), msg.new.join(rest)))
            })
            .collect();
        let mut ids = Vec::new();
        for (id, dir) in moved {
            self.live.pop(&id);
            self.locations.insert(id.clone(), dir);
            ids.push(id);
        }
        let saved = self.writer.save(&self.locations);
        Box::pin(async move {
            saved.await?;
            Ok(ids)
        })
    }
}

/// Send naming jobs of the sessions started from now on to this titler.
#[derive(Message)]
#[rtype(result = "()")]
pub struct SetNaming(pub Naming);

impl Handler<SetNaming> for SessionManager {
    type Result = ();

    fn handle(&mut self, msg: SetNaming, _: &mut Self::Context) {
        self.naming = Some(msg.0);
    }
}

/// A generated title travels to the session's actor (started if evicted).
impl Handler<ApplyTitle> for SessionManager {
    type Result = ();

    fn handle(&mut self, msg: ApplyTitle, ctx: &mut Self::Context) {
        let resolve = Resolve {
            id: msg.session_id.clone(),
        };
        if let Ok(addr) = <Self as Handler<Resolve>>::handle(self, resolve, ctx) {
            addr.do_send(msg);
        }
    }
}

#[cfg(test)]
#[path = "manager_tests.rs"]
mod tests;
