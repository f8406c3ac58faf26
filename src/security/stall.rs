//! Slow or lying clients are cut off within `server.request_timeout`:
//! - `BodyDeadline`: a request body that stalls (a `Content-Length` larger
//!   than what is sent) fails with a timeout instead of holding the
//!   connection;
//! - `FrameGuard`: on a WebSocket, a frame may not stall half sent, and one
//!   whose header announces more than the frame limit must arrive whole
//!   within the timeout (the codec would otherwise wait for all 2^62 bytes
//!   a header may announce). The header is read as the bytes arrive, before
//!   the codec buffers anything.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use actix_web::error::PayloadError;
use actix_web::web::Bytes;
use futures_util::Stream;
use tokio::time::{sleep, Instant, Sleep};

type Inner = actix_web::dev::Payload;

fn timed_out(what: &str) -> PayloadError {
    PayloadError::Io(std::io::Error::new(
        std::io::ErrorKind::TimedOut,
        format!("{what} stalled; the connection is closed"),
    ))
}

/// A request body whose next chunk must come within `timeout`; a JSON
/// body must also be an object (serde would read a struct from `[]`).
pub struct BodyDeadline {
    inner: Inner,
    timeout: Duration,
    timer: Pin<Box<Sleep>>,
    /// Still to check that the first non-blank byte opens an object.
    want_object: bool,
}

impl BodyDeadline {
    pub fn new(inner: Inner, timeout: Duration, json: bool) -> BodyDeadline {
        BodyDeadline {
            inner,
            timeout,
            timer: Box::pin(sleep(timeout)),
            want_object: json,
        }
    }

    /// `Err` when `chunk` shows the body is not a JSON object.
    fn check_object(&mut self, chunk: &[u8]) -> Result<(), PayloadError> {
        if !self.want_object {
            return Ok(());
        }
        match chunk.iter().find(|b| !b.is_ascii_whitespace()) {
            Some(b'{') => {
                self.want_object = false;
                Ok(())
            }
            Some(_) => {
                self.want_object = false;
                Err(PayloadError::Io(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    "the body must be a JSON object",
                )))
            }
            None => Ok(()),
        }
    }
}

impl Stream for BodyDeadline {
    type Item = Result<Bytes, PayloadError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        match Pin::new(&mut self.inner).poll_next(cx) {
            Poll::Ready(item) => {
                let next = Instant::now() + self.timeout;
                self.timer.as_mut().reset(next);
                if let Some(Ok(chunk)) = &item {
                    if let Err(e) = self.check_object(chunk) {
                        return Poll::Ready(Some(Err(e)));
                    }
                }
                Poll::Ready(item)
            }
            Poll::Pending => match self.timer.as_mut().poll(cx) {
                Poll::Ready(()) => Poll::Ready(Some(Err(timed_out("the request body")))),
                Poll::Pending => Poll::Pending,
            },
        }
    }
}

/// Where the guard is in the client's frame stream.
#[derive(Debug, Default)]
struct Framing {
    /// Bytes of the current frame header seen so far.
    header: Vec<u8>,
    /// Payload bytes of the current frame still to come.
    remaining: u64,
}

impl Framing {
    /// Follow `chunk`; the announced lengths of the headers completed in it.
    fn feed(&mut self, mut chunk: &[u8], announced: &mut Vec<u64>) {
        while !chunk.is_empty() {
            if self.remaining > 0 {
                let take = usize::try_from(self.remaining)
                    .unwrap_or(usize::MAX)
                    .min(chunk.len());
                self.remaining -= take as u64;
                chunk = chunk.get(take..).unwrap_or_default();
                continue;
            }
            let Some((&b, rest)) = chunk.split_first() else {
                break;
            };
            self.header.push(b);
            chunk = rest;
            if let Some(len) = header_complete(&self.header) {
                announced.push(len);
                self.remaining = len;
                self.header.clear();
            }
        }
    }

    fn mid_frame(&self) -> bool {
        self.remaining > 0 || !self.header.is_empty()
    }
}

/// The payload length once `h` holds a whole client frame header (2 to 14
/// bytes: length, extended length, mask key).
fn header_complete(h: &[u8]) -> Option<u64> {
    let second = *h.get(1)?;
    let masked = second & 0x80 != 0;
    let (len, ext) = match second & 0x7f {
        126 => (None, 2),
        127 => (None, 8),
        n => (Some(u64::from(n)), 0),
    };
    let need = 2 + ext + if masked { 4 } else { 0 };
    if h.len() < need {
        return None;
    }
    Some(match len {
        Some(n) => n,
        None => h
            .get(2..2 + ext)?
            .iter()
            .fold(0u64, |acc, b| (acc << 8) | u64::from(*b)),
    })
}

/// The WebSocket's incoming bytes, checked frame by frame.
pub struct FrameGuard {
    inner: Inner,
    limit: u64,
    timeout: Duration,
    framing: Framing,
    /// Set while a frame is half sent (reset on progress), or, for an
    /// oversized frame, once for the whole frame.
    deadline: Option<Pin<Box<Sleep>>>,
    oversized: bool,
    failed: bool,
}

impl FrameGuard {
    pub fn new(inner: Inner, limit: usize, timeout: Duration) -> FrameGuard {
        FrameGuard {
            inner,
            limit: limit as u64,
            timeout,
            framing: Framing::default(),
            deadline: None,
            oversized: false,
            failed: false,
        }
    }

    fn after_chunk(&mut self, chunk: &[u8]) {
        let mut announced = Vec::new();
        self.framing.feed(chunk, &mut announced);
        if announced.iter().any(|&len| len > self.limit) {
            // The whole frame must come within the timeout.
            self.oversized = true;
            self.deadline = Some(Box::pin(sleep(self.timeout)));
        } else if !self.framing.mid_frame() {
            self.oversized = false;
            self.deadline = None;
        } else if !self.oversized {
            // Progress on an ordinary frame: the idle clock starts again.
            self.deadline = Some(Box::pin(sleep(self.timeout)));
        }
        if self.oversized && !self.framing.mid_frame() {
            self.oversized = false;
            self.deadline = None;
        }
    }
}

impl Stream for FrameGuard {
    type Item = Result<Bytes, PayloadError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if self.failed {
            return Poll::Ready(None);
        }
        match Pin::new(&mut self.inner).poll_next(cx) {
            Poll::Ready(Some(Ok(chunk))) => {
                self.after_chunk(&chunk);
                Poll::Ready(Some(Ok(chunk)))
            }
            Poll::Ready(other) => Poll::Ready(other),
            Poll::Pending => {
                let fired = self
                    .deadline
                    .as_mut()
                    .is_some_and(|d| d.as_mut().poll(cx).is_ready());
                if fired {
                    self.failed = true;
                    Poll::Ready(Some(Err(timed_out("a WebSocket frame"))))
                } else {
                    Poll::Pending
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_are_followed_across_chunks() {
        let mut f = Framing::default();
        let mut seen = Vec::new();
        // A masked text frame of 3 bytes, split mid-header.
        f.feed(&[0x81, 0x83, 1], &mut seen);
        assert!(seen.is_empty() && f.mid_frame());
        f.feed(&[2, 3, 4, b'a', b'b'], &mut seen);
        assert_eq!(seen, [3]);
        f.feed(b"c", &mut seen);
        assert!(!f.mid_frame());
        // A 64-bit length announcing 2^62 bytes.
        let mut huge = vec![0x82, 0xff];
        huge.extend_from_slice(&(1u64 << 62).to_be_bytes());
        huge.extend_from_slice(&[0, 0, 0, 0]);
        f.feed(&huge, &mut seen);
        assert_eq!(seen, [3, 1 << 62]);
        assert!(f.mid_frame());
        // A 16-bit length.
        let mut g = Framing::default();
        let mut s2 = Vec::new();
        g.feed(&[0x81, 0xfe, 0x01, 0x00, 9, 9, 9, 9], &mut s2);
        assert_eq!(s2, [256]);
    }
}
