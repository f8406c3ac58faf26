//! The titler actor: names sessions with an LLM from its mailbox. Jobs come
//! from session actors (fire and forget, so a slow or failing LLM never
//! delays a turn). A fixed pool of worker threads makes the blocking HTTP
//! calls, so a thousand sessions finishing at once never open a thousand
//! connections; results go back to the session's actor, which applies the
//! race rules atomically.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use actix::prelude::*;
use crossbeam_channel::{Receiver, Sender};

use super::llm::{LlmClient, LlmConfig, LlmError};
use crate::messages::{ApplyTitle, TitleJob};

struct Work {
    job: TitleJob,
    reply: Option<tokio::sync::oneshot::Sender<Result<String, LlmError>>>,
}

pub struct Titler {
    tx: Option<Sender<Work>>,
    counts: Arc<Counts>,
}

/// The titler's load, read without a message (for metrics).
#[derive(Debug, Default)]
pub struct Counts {
    queued: std::sync::atomic::AtomicUsize,
    in_flight: std::sync::atomic::AtomicUsize,
}

#[derive(Debug, Clone, Copy, Default, serde::Serialize)]
pub struct TitlerStats {
    pub queued: usize,
    pub in_flight: usize,
}

impl Counts {
    pub fn stats(&self) -> TitlerStats {
        use std::sync::atomic::Ordering::Relaxed;
        TitlerStats {
            queued: self.queued.load(Relaxed),
            in_flight: self.in_flight.load(Relaxed),
        }
    }
}

/// What a worker calls for one title: (conversation, model) → title.
type Ask = Arc<dyn Fn(&str, Option<&str>) -> Result<String, LlmError> + Send + Sync>;

impl Titler {
    /// Start `concurrency` workers. `deliver` receives each automatic title.
    pub fn new(config: LlmConfig, concurrency: usize, deliver: Recipient<ApplyTitle>) -> Titler {
        if !config.enabled() {
            tracing::info!("no LLM configured: sessions get first-message titles only");
            return Titler {
                tx: None,
                counts: Arc::default(),
            };
        }
        let client = LlmClient::new(config);
        let ask: Ask = Arc::new(move |input, model| client.title(input, model));
        Titler::with_asker(concurrency, deliver, ask)
    }

    fn with_asker(concurrency: usize, deliver: Recipient<ApplyTitle>, ask: Ask) -> Titler {
        let (tx, rx) = crossbeam_channel::bounded::<Work>(10_000);
        let counts = Arc::new(Counts::default());
        for i in 0..concurrency.max(1) {
            let (rx, ask, deliver) = (rx.clone(), ask.clone(), deliver.clone());
            let counts = counts.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("titler-{i}"))
                .spawn(move || worker(&rx, &ask, &deliver, &counts));
            if let Err(e) = spawned {
                tracing::error!(error = %e, "could not start a titler worker");
            }
        }
        Titler {
            tx: Some(tx),
            counts,
        }
    }

    /// The queue and in-flight counts, shared with the workers.
    pub fn counts(&self) -> Arc<Counts> {
        self.counts.clone()
    }

    /// Queue `work`; false when the queue is full.
    fn enqueue(&self, tx: &Sender<Work>, work: Work) -> bool {
        let sent = tx.try_send(work).is_ok();
        if sent {
            self.counts
                .queued
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        sent
    }
}

/// One job, with a panic (a bug on some odd reply) turned into an error:
/// the worker lives on, so the pool keeps its size.
fn ask_safely(ask: &Ask, job: &TitleJob) -> Result<String, LlmError> {
    std::panic::catch_unwind(AssertUnwindSafe(|| ask(&job.input, job.model.as_deref())))
        .unwrap_or_else(|_| {
            tracing::error!(session = %job.session_id, "title worker panicked on a job; it goes on");
            Err(LlmError::Request("the title worker failed on this reply".into()))
        })
}

fn worker(rx: &Receiver<Work>, ask: &Ask, deliver: &Recipient<ApplyTitle>, counts: &Counts) {
    use std::sync::atomic::Ordering::Relaxed;
    while let Ok(Work { job, reply }) = rx.recv() {
        counts.queued.fetch_sub(1, Relaxed);
        counts.in_flight.fetch_add(1, Relaxed);
        let result = ask_safely(ask, &job);
        counts.in_flight.fetch_sub(1, Relaxed);
        if result.is_err() {
            metrics::counter!("openprogram_titler_failures_total").increment(1);
        }
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
            if !self.enqueue(tx, Work { job, reply: None }) {
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

impl TitleError {
    pub fn kind(&self) -> crate::error_kind::ErrorKind {
        use crate::error_kind::ErrorKind;
        match self {
            TitleError::NotConfigured | TitleError::Busy => ErrorKind::Unavailable,
            TitleError::Llm(_) => ErrorKind::Upstream,
        }
    }

    pub fn code(&self) -> &'static str {
        match self {
            TitleError::NotConfigured => "llm_not_configured",
            TitleError::Busy => "unavailable",
            TitleError::Llm(_) => "llm_failed",
        }
    }
}

impl Handler<GenerateNow> for Titler {
    type Result = ResponseFuture<Result<String, TitleError>>;

    fn handle(&mut self, msg: GenerateNow, _: &mut Context<Self>) -> Self::Result {
        let Some(tx) = &self.tx else {
            return Box::pin(async { Err(TitleError::NotConfigured) });
        };
        let (reply, rx) = tokio::sync::oneshot::channel();
        let work = Work {
            job: msg.0,
            reply: Some(reply),
        };
        if !self.enqueue(tx, work) {
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

#[cfg(test)]
mod tests {
    use super::*;

    struct Sink;
    impl Actor for Sink {
        type Context = Context<Self>;
    }
    impl Handler<ApplyTitle> for Sink {
        type Result = ();
        fn handle(&mut self, _: ApplyTitle, _: &mut Context<Self>) {}
    }

    fn job(input: &str) -> TitleJob {
        TitleJob {
            session_id: "s".into(),
            pass: 0,
            input: input.into(),
            model: None,
            expected_title: None,
        }
    }

    #[actix_rt::test]
    async fn a_panicking_job_leaves_the_pool_whole() {
        let ask: Ask = Arc::new(|input, _| {
            if input == "boom" {
                panic!("a bug on an odd reply");
            }
            Ok(format!("title of {input}"))
        });
        // One worker: if a panic killed it, nothing after it would answer.
        let titler = Titler::with_asker(1, Sink.start().recipient(), ask).start();
        for round in 0..5 {
            let failed = titler.send(GenerateNow(job("boom"))).await.unwrap();
            assert!(matches!(failed, Err(TitleError::Llm(_))), "round {round}");
            let ok = titler.send(GenerateNow(job("x"))).await.unwrap();
            assert_eq!(ok.unwrap(), "title of x");
        }
    }
}
