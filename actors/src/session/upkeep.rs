//! A session's pack maintenance, off its write path: every commit adds a
//! pack; the actor waits until the session is idle (no write for `IDLE`,
//! or at once when packs pile up on a session that is never idle), has the
//! server's pack keeper plan a merge (geometric, or all packs into one once
//! the newer ones have grown enough beside the largest), write the merged pack
//! and move the merged packs aside on its own thread; the actor then opens
//! a fresh repository handle between two of its writes (the only step that
//! holds the session) and hands the old one back to the keeper, which
//! closes it and removes the merged files.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;

use super::actor::SessionActor;
use super::core::SessionCore;
use super::error::SessionError;
use crate::git;
use crate::pack_keeper::{PackKeeper, Ticket};

/// No write for this long: the session is idle.
const IDLE: Duration = Duration::from_secs(1);
/// A session with this many packs is maintained even while busy.
pub const FORCE_PACKS: usize = 4 * git::repack::MAX_PACKS;
/// A busy session's merge takes at most this many objects (a few hundred
/// turns' worth), so its pack write stays short beside the turns' own;
/// the bigger merges wait for an idle moment.
pub const BUSY_MERGE_CAP: usize = 4096;
/// A session quiet this long gets a fresh repository handle (as short as
/// the idle merge's wait: a pending timer keeps an actor the manager let
/// go alive, and with it the session's lease): libgit2
/// keeps every pack a handle has read mapped (and its `.idx` whole) until
/// the handle goes, so a session that stops being written to would hold
/// its packs' maps for as long as it stays in the cache. Measured under
/// the mixed load: 21 MiB of mapped pack files in a server settled after
/// it, none in a fresh one holding the same sessions.
const RELEASE: Duration = Duration::from_secs(1);

#[derive(Default)]
pub(super) struct Upkeep {
    keeper: Option<PackKeeper>,
    /// Writes so far (idle = unchanged since the check was planned).
    writes: u64,
    scheduled: bool,
    running: bool,
    /// A release of the repository handle is planned (`RELEASE`).
    release_planned: bool,
    /// `writes` right after the last release (its own step counts one).
    released_at: u64,
    /// Held while the keeper writes a merged pack (a deletion waits).
    pub(super) lock: Arc<tokio::sync::Mutex<()>>,
    /// The merge asked for and the wait for it, while it runs.
    pending: Option<(Ticket, SpawnHandle)>,
    /// The planned idle check and handle release (`IDLE`, `RELEASE`): a
    /// pending timer keeps an actor alive, and with it the session's lease.
    timers: [Option<SpawnHandle>; 2],
    /// The manager let this actor go: nothing more is planned.
    let_go: bool,
}

/// The manager let this actor go (it left the cache): a merge still
/// waiting for the keeper is withdrawn, so the actor ends (and releases
/// the session's lease) as soon as its own messages are done, instead of
/// after the other sessions' merges queued before it.
#[derive(Message)]
#[rtype(result = "()")]
pub struct LetGo;

impl Handler<LetGo> for SessionActor {
    type Result = ();

    fn handle(&mut self, _: LetGo, ctx: &mut Self::Context) {
        // Its timers would keep it (and the session's lease, which the
        // session's next actor waits for to load) alive for up to a
        // second after its last message; the next actor plans its own.
        for timer in self.upkeep.timers.iter_mut().filter_map(Option::take) {
            ctx.cancel_future(timer);
        }
        self.upkeep.scheduled = false;
        self.upkeep.release_planned = false;
        self.upkeep.let_go = true;
        if let Some((ticket, handle)) = self.upkeep.pending.take() {
            if ticket.withdraw() {
                ctx.cancel_future(handle);
                self.upkeep.running = false;
            } else {
                // Begun: its answer comes within one merge.
                self.upkeep.pending = Some((ticket, handle));
            }
        }
    }
}

impl Upkeep {
    pub(super) fn new(keeper: Option<PackKeeper>) -> Upkeep {
        Upkeep {
            keeper,
            ..Upkeep::default()
        }
    }
}

impl SessionCore {
    /// Packs in the repository.
    pub fn pack_count(&self) -> usize {
        self.packs
    }

    /// The repository's `.git`.
    pub fn git_dir(&self) -> PathBuf {
        self.repo.path().to_path_buf()
    }

    /// After a merge (the keeper moved the merged packs aside): a fresh
    /// repository handle, as a step between two writes; the old one, which
    /// maps the merged packs, is returned for the keeper to close
    /// (`PackKeeper::retire`).
    pub fn drop_merged(&mut self, victims: &[PathBuf]) -> Result<git2::Repository, SessionError> {
        let fresh = git::open_repo(&self.dir)?;
        // The live packs, the merged one among them (it may bear the name
        // of a victim: the same objects make the same pack).
        self.packs = git::repack::pack_count(fresh.path());
        tracing::debug!(retired = victims.len(), packs = self.packs, "packs merged");
        Ok(std::mem::replace(&mut self.repo, fresh))
    }
}

impl SessionActor {
    /// Merge this session's packs with `keeper` when they pile up.
    pub fn with_pack_keeper(mut self, keeper: Option<PackKeeper>) -> Self {
        self.upkeep = Upkeep::new(keeper);
        self
    }

    /// After each write: plan maintenance when it is due.
    pub(super) fn after_write(&mut self, ctx: &mut Context<Self>) {
        self.upkeep.writes += 1;
        self.plan_upkeep(ctx);
        self.plan_release(ctx);
    }

    /// Once quiet for `RELEASE` (no write, no merge running), swap the
    /// repository handle for a fresh one between two messages; the old
    /// one (and the pack files it maps) is closed by the keeper.
    fn plan_release(&mut self, ctx: &mut Context<Self>) {
        let quiet = self.upkeep.writes == self.upkeep.released_at;
        if self.upkeep.keeper.is_none()
            || self.upkeep.release_planned
            || quiet
            || self.upkeep.let_go
        {
            return;
        }
        self.upkeep.release_planned = true;
        let writes = self.upkeep.writes;
        let timer = ctx.run_later(RELEASE, move |act, ctx| {
            act.upkeep.release_planned = false;
            act.upkeep.timers[1] = None;
            let gone = !ctx.connected() || act.slot.live().is_err();
            if gone || act.upkeep.writes == act.upkeep.released_at {
                // Let go by the manager, deleted, or nothing done since the
                // last release.
                return;
            }
            if act.upkeep.writes != writes {
                // Written to since: later. (A merge on its way swaps the
                // handle again when it lands; the keeper uses its own.)
                act.plan_release(ctx);
                return;
            }
            let swap = act
                .on_core(|core| core.drop_merged(&[]))
                .map(|res, act, _| {
                    act.upkeep.released_at = act.upkeep.writes;
                    match res {
                        Ok(old) => {
                            if let (Some(keeper), Ok(core)) = (&act.upkeep.keeper, act.slot.live())
                            {
                                keeper.retire(core.git_dir(), old);
                            }
                        }
                        Err(e) => tracing::debug!(error = %e, "the repository handle was kept"),
                    }
                });
            ctx.wait(swap);
        });
        self.upkeep.timers[1] = Some(timer);
    }

    fn plan_upkeep(&mut self, ctx: &mut Context<Self>) {
        let Ok(core) = self.slot.live() else {
            return;
        };
        let packs = core.pack_count();
        let u = &mut self.upkeep;
        // Two packs may already be worth merging once idle (the keeper's
        // plan decides: `git::repack::CONSOLIDATE`); a busy merge needs more.
        if u.keeper.is_none() || packs < 2 || u.scheduled || u.running || u.let_go {
            return;
        }
        let forced = packs >= FORCE_PACKS;
        let writes = u.writes;
        u.scheduled = true;
        let wait = if forced { Duration::ZERO } else { IDLE };
        let timer = ctx.run_later(wait, move |act, ctx| {
            act.upkeep.scheduled = false;
            act.upkeep.timers[0] = None;
            if !ctx.connected() {
                // Let go by the manager: the next actor maintains it.
                return;
            }
            let idle = act.upkeep.writes == writes;
            // Packs piled up meanwhile: a busy merge even if quiet now (an
            // idle merge waits behind the other idle sessions' merges, at
            // the lowest priority, and the session's packs go on growing).
            let piled = act
                .slot
                .live()
                .is_ok_and(|core| core.pack_count() >= FORCE_PACKS);
            if !forced && !piled && !idle {
                // Written to since: wait for a quiet moment again.
                act.plan_upkeep(ctx);
            } else {
                act.run_upkeep(ctx, (piled || !idle).then_some(BUSY_MERGE_CAP));
            }
        });
        self.upkeep.timers[0] = Some(timer);
    }

    fn run_upkeep(&mut self, ctx: &mut Context<Self>, cap: Option<usize>) {
        let (Some(keeper), Ok(core)) = (self.upkeep.keeper.clone(), self.slot.live()) else {
            return;
        };
        // A deletion holds the lock: nothing to maintain then.
        let Ok(guard) = self.upkeep.lock.clone().try_lock_owned() else {
            return;
        };
        let git_dir = core.git_dir();
        self.upkeep.running = true;
        let ticket = Ticket::default();
        let asked = ticket.clone();
        let build = async move { keeper.merge(git_dir, cap, guard, asked).await };
        let handle = ctx.spawn(build.into_actor(self).map(|built, act, ctx| {
            act.upkeep.pending = None;
            match built {
                Ok(Some(victims)) => {
                    let swap = act
                        .on_core(move |core| core.drop_merged(&victims))
                        .map(|res, act, ctx| {
                            act.upkeep.running = false;
                            match res {
                                // Closed, and the merged files removed, there.
                                Ok(old) => {
                                    if let (Some(keeper), Ok(core)) =
                                        (&act.upkeep.keeper, act.slot.live())
                                    {
                                        keeper.retire(core.git_dir(), old);
                                    }
                                }
                                // The old handle stays; the next merge's
                                // step replaces it.
                                Err(e) => {
                                    tracing::debug!(error = %e, "no fresh repository handle after a merge")
                                }
                            }
                            act.plan_upkeep(ctx);
                        });
                    // Between two writes: no message is taken meanwhile.
                    ctx.wait(swap);
                }
                Ok(None) => act.upkeep.running = false,
                Err(e) => {
                    act.upkeep.running = false;
                    tracing::warn!(dir = %act.dir.display(), error = %e, "pack maintenance failed; tried again after the next writes");
                }
            }
        }));
        self.upkeep.pending = Some((ticket, handle));
    }
}
