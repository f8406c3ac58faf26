//! The change feed as the engine serves it: a page of events after a
//! cursor, waiting a while for the next one when there is none yet
//! (long-poll). See `crate::feed`.

use std::time::Duration;

use serde::Serialize;

use super::Engine;
use crate::error::EngineError;
use crate::feed::{Cursor, Feed, FeedError};

/// At most this many events in one page.
pub const MAX_CHANGES: usize = 1000;
/// The longest a reader may wait for the next event.
pub const MAX_WAIT: Duration = Duration::from_secs(60);
/// The longest a reader waits for the events answered before it to
/// become visible (their files are written within milliseconds).
const SETTLE: Duration = Duration::from_secs(2);

/// One event and the cursor that continues after it.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ChangeItem {
    /// Its place in the feed (1, 2, …; never reused).
    pub seq: u64,
    /// Read from here to continue after this event.
    pub cursor: String,
    /// `kind` (`commit`, `project_commit`, `session_deleted`,
    /// `session_archived`, `session_unarchived`), `session_id`,
    /// `project_id`, `branch`, `turn`, `commit`, `session_commit`,
    /// `node_ids`, `time`.
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub event: serde_json::Value,
}

/// A page of the feed.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ChangesPage {
    pub events: Vec<ChangeItem>,
    /// Where to continue (the same cursor again when nothing came).
    pub next_cursor: String,
    /// More events are there already: read again at once.
    pub more: bool,
}

impl Engine {
    fn feed(&self) -> Result<Feed, EngineError> {
        self.store().feed().ok_or(EngineError::ReadOnly)
    }

    /// Events after `cursor` (from the oldest without one; `latest`: only
    /// what comes from now on), at most `limit`; when there is none yet,
    /// wait up to `wait` for the next.
    pub async fn changes(
        &self,
        cursor: Option<&str>,
        limit: usize,
        wait: Duration,
    ) -> Result<ChangesPage, EngineError> {
        let feed = self.feed()?;
        // What was answered before this request is read by it.
        feed.settle(SETTLE).await;
        let limit = limit.clamp(1, MAX_CHANGES);
        let cursor = match cursor.filter(|c| !c.is_empty()) {
            None => None,
            Some("latest") => {
                let f = feed.clone();
                Some(blocking(move || f.end()).await?)
            }
            Some(text) => Some(Cursor::parse(text)?),
        };
        let mut changes = feed.subscribe();
        let deadline = tokio::time::Instant::now() + wait.min(MAX_WAIT);
        loop {
            changes.borrow_and_update();
            let f = feed.clone();
            let page = blocking(move || f.read(cursor.as_ref(), limit)).await?;
            let waited_out = tokio::time::Instant::now() >= deadline;
            if !page.events.is_empty() || waited_out {
                let more = page.events.len() == limit && page.next.seq <= page.visible;
                return Ok(ChangesPage {
                    events: page
                        .events
                        .into_iter()
                        .map(|i| ChangeItem {
                            seq: i.seq,
                            cursor: i.cursor.encode(),
                            event: i.event,
                        })
                        .collect(),
                    next_cursor: page.next.encode(),
                    more,
                });
            }
            // Nothing yet: wait for the feed to move (or the deadline).
            if tokio::time::timeout_at(deadline, changes.changed())
                .await
                .is_ok_and(|r| r.is_err())
            {
                return Err(EngineError::Unavailable);
            }
        }
    }
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, FeedError> + Send + 'static,
) -> Result<T, EngineError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|_| EngineError::Unavailable)?
        .map_err(EngineError::from)
}
