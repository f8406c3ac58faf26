//! What a request is waiting on, for the slow-request log.
//!
//! The HTTP layer runs each request inside `tracked` with a `Stage` it
//! keeps; the engine names each step as a call moves on (`enter`) and
//! hands the same `Stage` to the session manager, which names the wait
//! for a session's actor to load. A request still waiting past the slow
//! threshold is logged with the stage it is in.

use std::future::Future;
use std::sync::{Arc, Mutex};

tokio::task_local! {
    static CURRENT: Stage;
}

/// A request's current stage (cheap to clone: the request's task and its
/// watcher share it).
#[derive(Clone, Debug)]
pub struct Stage(Arc<Mutex<&'static str>>);

impl Default for Stage {
    fn default() -> Self {
        Stage(Arc::new(Mutex::new("its handler")))
    }
}

impl Stage {
    /// The step the request is in now.
    pub fn now(&self) -> &'static str {
        match self.0.lock() {
            Ok(s) => *s,
            Err(poisoned) => *poisoned.into_inner(),
        }
    }

    /// The request moves on to `name`.
    pub fn set(&self, name: &'static str) {
        match self.0.lock() {
            Ok(mut s) => *s = name,
            Err(poisoned) => *poisoned.into_inner() = name,
        }
    }
}

/// Run `f` with `stage` as the stage its task reports.
pub async fn tracked<F: Future>(stage: Stage, f: F) -> F::Output {
    CURRENT.scope(stage, f).await
}

/// Name the step the current request is in (nothing outside a tracked
/// task).
pub fn enter(name: &'static str) {
    let _ = CURRENT.try_with(|s| s.set(name));
}

/// The current request's stage, to hand to another task.
pub fn current() -> Option<Stage> {
    CURRENT.try_with(Stage::clone).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_tracked_task_reports_the_step_it_is_in() {
        let stage = Stage::default();
        enter("outside: nothing to report");
        let seen = tracked(stage.clone(), async {
            enter("the session's actor");
            current().map(|s| s.now())
        })
        .await;
        assert_eq!(seen, Some("the session's actor"));
        assert_eq!(stage.now(), "the session's actor");
        assert!(current().is_none());
    }
}
