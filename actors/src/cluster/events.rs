//! One event stream for the cluster: every frame a node's hub publishes
//! (session created, updated, deleted, project lists, runner events) is
//! sent to the other nodes through PostgreSQL's `NOTIFY`, and each node
//! `LISTEN`s and publishes what the others sent on its own hub, so a
//! WebSocket client on any node sees a change made through any other.
//! A frame relayed this way is marked remote and never relayed again.
//!
//! Notifications are at-most-once: one sent while a node's listening
//! connection is down is not seen there (a reconnecting client lists the
//! sessions anyway). `NOTIFY` payloads are limited to 8,000 bytes: a
//! larger frame stays on its node (logged).

use std::sync::atomic::Ordering;
use std::time::Duration;

use super::{db, Cluster};
use crate::events::Hub;

/// The channel the nodes notify on.
pub const CHANNEL: &str = "openprogram_events";

/// PostgreSQL refuses a larger payload.
const MAX_PAYLOAD: usize = 7_900;

/// Frames sent in one statement, at most.
const BATCH: usize = 64;

/// Separates the sending node's id from the frame in a payload.
const SEP: char = '\u{1f}';

impl Cluster {
    /// Relay this node's frames to the others, and theirs onto `hub`.
    pub fn relay_events(&self, hub: Hub) -> std::io::Result<crossbeam_channel::Sender<String>> {
        let (tx, rx) = crossbeam_channel::unbounded::<String>();
        let sender = self.clone();
        std::thread::Builder::new()
            .name("cluster-notify".into())
            .spawn(move || sender.notify_loop(rx))?;
        let listener = self.clone();
        std::thread::Builder::new()
            .name("cluster-listen".into())
            .spawn(move || listener.listen_loop(hub))?;
        Ok(tx)
    }

    fn notify_loop(&self, rx: crossbeam_channel::Receiver<String>) {
        let mut client: Option<postgres::Client> = None;
        while let Ok(first) = rx.recv() {
            let me = &self.inner.config.node_id;
            let mut batch = vec![first];
            while batch.len() < BATCH {
                match rx.try_recv() {
                    Ok(f) => batch.push(f),
                    Err(_) => break,
                }
            }
            let payloads: Vec<String> = batch
                .into_iter()
                .filter(|f| {
                    let fits = f.len() + me.len() < MAX_PAYLOAD;
                    if !fits {
                        tracing::debug!(bytes = f.len(), "event too large for NOTIFY: not relayed");
                    }
                    fits
                })
                .map(|f| format!("{me}{SEP}{f}"))
                .collect();
            if payloads.is_empty() {
                continue;
            }
            // Two tries: the connection may have been closed since.
            for _ in 0..2 {
                if client.as_ref().is_none_or(|c| c.is_closed()) {
                    client = db::connect(&self.inner.config.postgres_url).ok();
                }
                let Some(c) = client.as_mut() else {
                    break;
                };
                match c.execute(
                    "SELECT pg_notify($1, p) FROM unnest($2::text[]) AS p",
                    &[&CHANNEL, &payloads],
                ) {
                    Ok(_) => break,
                    Err(e) => {
                        tracing::warn!(error = %e, "events not relayed to the other nodes");
                        client = None;
                    }
                }
            }
        }
    }

    fn listen_loop(&self, hub: Hub) {
        let me = self.inner.config.node_id.clone();
        while !self.inner.stop.load(Ordering::Relaxed) {
            let mut client = match db::connect(&self.inner.config.postgres_url) {
                Ok(c) => c,
                Err(e) => {
                    tracing::debug!(error = %e, "event listener not connected");
                    std::thread::sleep(self.retry_pause());
                    continue;
                }
            };
            if let Err(e) = client.batch_execute(&format!("LISTEN {CHANNEL}")) {
                tracing::warn!(error = %e, "LISTEN failed");
                continue;
            }
            loop {
                if self.inner.stop.load(Ordering::Relaxed) {
                    return;
                }
                let mut got = Vec::new();
                let mut failed = false;
                {
                    let mut notes = client.notifications();
                    let mut iter = notes.timeout_iter(Duration::from_secs(1));
                    loop {
                        match postgres::fallible_iterator::FallibleIterator::next(&mut iter) {
                            Ok(Some(n)) => got.push(n.payload().to_string()),
                            Ok(None) => break,
                            Err(e) => {
                                tracing::warn!(error = %e, "event listener lost its connection");
                                failed = true;
                                break;
                            }
                        }
                    }
                }
                for payload in got {
                    if let Some((from, frame)) = payload.split_once(SEP) {
                        if from != me {
                            hub.publish_remote(frame);
                        }
                    }
                }
                if failed || client.is_closed() {
                    break;
                }
            }
        }
    }
}
