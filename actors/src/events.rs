//! The event hub: changes made through any surface (REST, WebSocket, CLI,
//! titler, channel bridges) are published here as server frames
//! (`{"type": ..., "data": ...}`) for every connected client. Publishing
//! never blocks a writer: each subscriber has its own bounded ring; one that
//! falls behind learns it lagged (and is resynced or dropped) while the
//! others go on.

use std::sync::Arc;

use serde_json::Value;
use tokio::sync::broadcast;

/// Frames kept for a subscriber that has not read them yet.
pub const CAPACITY: usize = 1024;

#[derive(Debug, Clone)]
pub struct Event {
    /// The serialized frame.
    pub frame: Arc<str>,
    /// Published on another node of a cluster and relayed here (never
    /// relayed again).
    pub remote: bool,
}

#[derive(Clone)]
pub struct Hub {
    tx: broadcast::Sender<Event>,
}

impl Default for Hub {
    fn default() -> Self {
        Hub::new()
    }
}

impl Hub {
    pub fn new() -> Hub {
        let (tx, _) = broadcast::channel(CAPACITY);
        Hub { tx }
    }

    /// Publish `{"type": kind, "data": data}` (plus any top-level extras).
    pub fn publish(&self, kind: &str, data: Value, extra: Option<(&str, Value)>) {
        if self.tx.receiver_count() == 0 {
            return;
        }
        let mut frame = serde_json::json!({ "type": kind, "data": data });
        if let (Some((k, v)), Some(obj)) = (extra, frame.as_object_mut()) {
            obj.insert(k.to_string(), v);
        }
        self.send(frame.to_string());
    }

    /// Publish `{"type": kind, "data": data}`, serialized straight from
    /// `data` (no frame is built when nobody listens).
    pub fn publish_data<T: serde::Serialize>(&self, kind: &str, data: &T) {
        #[derive(serde::Serialize)]
        struct Frame<'a, T> {
            #[serde(rename = "type")]
            kind: &'a str,
            data: &'a T,
        }
        if self.tx.receiver_count() == 0 {
            return;
        }
        match serde_json::to_string(&Frame { kind, data }) {
            Ok(frame) => self.send(frame),
            Err(e) => tracing::warn!(kind, error = %e, "an event could not be serialized"),
        }
    }

    /// Whether any client listens (a frame costly to make is made only
    /// then).
    pub fn listening(&self) -> bool {
        self.tx.receiver_count() > 0
    }

    /// Publish a frame serialized by the caller.
    pub fn publish_frame(&self, frame: String) {
        if self.listening() {
            self.send(frame);
        }
    }

    /// Hand a frame made here to every subscriber (none is not an error).
    fn send(&self, frame: String) {
        let _ = self.tx.send(Event {
            frame: frame.into(),
            remote: false,
        });
    }

    /// A frame another node of the cluster published.
    pub fn publish_remote(&self, frame: &str) {
        let _ = self.tx.send(Event {
            frame: frame.into(),
            remote: true,
        });
    }

    pub fn subscribe(&self) -> broadcast::Receiver<Event> {
        self.tx.subscribe()
    }
}
