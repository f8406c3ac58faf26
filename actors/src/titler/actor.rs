//! The titler actor: names sessions with an LLM from its mailbox. Jobs come
//! from session actors (fire and forget, so a slow or failing LLM never
//! delays a turn). A fixed pool of worker threads makes the blocking HTTP
//! calls, so a thousand sessions finishing at once never open a thousand
//! connections; results go back to the session's actor, which applies the
//! race rules atomically.

use actix::prelude::*;
use crossbeam_channel::{Receiver, Sender};

use super::llm::{LlmClient, LlmConfig, LlmError};

/// What to name, and how the result may be written.
#[derive(Debug, Clone, Message)]
#[rtype(result = "()")]
pub struct TitleJob {
    pub session_id: String,
    /// 1 for the first LLM pass, k for the k-th threshold.
    pub pass: u32,
    /// The conversation excerpt given to the LLM.
    pub input: String,
    /// The session's own model, preferred over the configured one.
    pub model: Option<String>,
    /// On the first pass: write only if the title is still this (phase 1).
    pub expected_title: Option<String>,
}

/// A title to write, sent to the session (through the manager).
#[derive(Debug, Clone, Message)]
#[rtype(result = "()")]
pub struct ApplyTitle {
    pub session_id: String,
    pub title: String,
    pub pass: u32,
    pub expected_title: Option<String>,
    /// An explicit "regenerate": ignores the automatic-naming race rules
    /// (but never sets the user lock).
    pub force: bool,
}

struct Work {
    job: TitleJob,
    reply: Option<tokio::sync::oneshot::Sender<Result<String, LlmError>>>,
}

pub struct Titler {
    tx: Option<Sender<Work>>,
}

impl Titler {
    /// Start `concurrency` workers. `deliver` receives each automatic title.
    pub fn new(config: LlmConfig, concurrency: usize, deliver: Recipient<ApplyTitle>) -> Titler {
        if !config.enabled() {
            tracing::info!("no LLM configured: sessions get first-message titles only");
            return Titler { tx: None };
        }
        let (tx, rx) = crossbeam_channel::bounded::<Work>(10_000);
        for i in 0..concurrency.max(1) {
            let rx = rx.clone();
            let client = LlmClient::new(config.clone());
            let deliver = deliver.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("titler-{i}"))
                .spawn(move || worker(rx, client, deliver));
            if let Err(e) = spawned {
                tracing::error!(error = %e, "could not start a titler worker");
            }
        }
        Titler { tx: Some(tx) }
    }
}

fn worker(rx: Receiver<Work>, client: LlmClient, deliver: Recipient<ApplyTitle>) {
    while let Ok(Work { job, reply }) = rx.recv() {
        let result = client.title(&job.input, job.model.as_deref());
        match reply {
            // An explicit request: the caller applies and reports it.
            Some(reply) => {
                let _ = reply.send(result);
            }
            None => match result {
                Ok(title) => deliver.do_send(ApplyTitle {
                    session_id: job.session_id,
                    title,
                    pass: job.pass,
                    expected_title: job.expected_title,
                    force: false,
                }),
                Err(e) => {
                    tracing::warn!(session = %job.session_id, pass = job.pass, error = %e, "title generation failed; keeping the current title")
                }
            },
        }
    }
}

impl Actor for Titler {
    type Context = Context<Self>;
}

impl Handler<TitleJob> for Titler {
    type Result = ();

    fn handle(&mut self, job: TitleJob, _: &mut Context<Self>) {
        if let Some(tx) = &self.tx {
            if tx.try_send(Work { job, reply: None }).is_err() {
                tracing::warn!("titler queue full; skipping a title");
            }
        }
    }
}

/// Ask now and wait for the answer (the "regenerate" action).
#[derive(Debug, Message)]
#[rtype(result = "Result<String, TitleError>")]
pub struct GenerateNow(pub TitleJob);

#[derive(Debug, thiserror::Error)]
pub enum TitleError {
    #[error("no LLM is configured")]
    NotConfigured,
    #[error(transparent)]
    Llm(#[from] LlmError),
    #[error("the titler is busy, retry")]
    Busy,
}

impl Handler<GenerateNow> for Titler {
    type Result = ResponseFuture<Result<String, TitleError>>;

    fn handle(&mut self, msg: GenerateNow, _: &mut Context<Self>) -> Self::Result {
        let Some(tx) = &self.tx else {
            return Box::pin(async { Err(TitleError::NotConfigured) });
        };
        let (reply, rx) = tokio::sync::oneshot::channel();
        if tx
            .try_send(Work {
                job: msg.0,
                reply: Some(reply),
            })
            .is_err()
        {
            return Box::pin(async { Err(TitleError::Busy) });
        }
        Box::pin(async move {
            match rx.await {
                Ok(r) => r.map_err(TitleError::from),
                Err(_) => Err(TitleError::Busy),
            }
        })
    }
}
