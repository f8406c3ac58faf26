//! Each HTTP connection's byte stream, as the HTTP layer writes it.
//!
//! actix-http answers a few requests itself, before any handler or
//! middleware exists: bytes that do not parse as HTTP/1.1 (`400`), a
//! request head over its buffer (`431`), a head that did not arrive in
//! time (`408`). It writes those with an empty body and closes the
//! connection, and offers no hook to change them. Every other refusal of
//! this service has a JSON body with a `code`; so the stream the HTTP
//! layer writes to recognises those heads, exactly as actix-http makes
//! them, at the end of what it writes, and adds the body.
//!
//! A head of that form is recognised only at the end of a write and only
//! with nothing but `content-length: 0`, `connection: close` and `date`
//! in it: this service's own answers always carry `x-request-id` and a
//! content type, and none of its bodies can end that way (JSON escapes CR
//! and LF; bundles end with a checksum; the web UI's files are fixed).

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// A stream whose HTTP layer's own refusals get a JSON body.
pub struct Answered<S> {
    inner: S,
    /// Bytes accepted from the HTTP layer, not written yet.
    pending: Vec<u8>,
    written: usize,
}

impl<S> Answered<S> {
    pub fn new(inner: S) -> Self {
        Answered {
            inner,
            pending: Vec::new(),
            written: 0,
        }
    }
}

/// The refusals actix-http writes itself: status line, code, sentence.
const REFUSALS: [(&str, &str, &str); 3] = [
    (
        "HTTP/1.1 400 Bad Request",
        "bad_request",
        "the request does not parse as HTTP/1.1 (its request line or a header is malformed); the connection is closed",
    ),
    (
        "HTTP/1.1 431 Request Header Fields Too Large",
        "headers_too_large",
        "the request's head is larger than the server reads (128 KiB); the connection is closed",
    ),
    (
        "HTTP/1.1 408 Request Timeout",
        "request_timeout",
        "the request's head did not arrive in time (server.request_timeout); the connection is closed",
    ),
];

/// The longest refusal head searched for, in bytes.
const MAX_HEAD: usize = 256;

/// Where, in `buf`, a refusal's head that ends `buf` starts, and its
/// code and sentence.
fn refusal_at_end(buf: &[u8]) -> Option<(usize, &'static str, &'static str)> {
    if !buf.ends_with(b"\r\n\r\n") {
        return None;
    }
    // Such a head is under 200 bytes: only the end of `buf` is searched.
    let from = buf.len().saturating_sub(MAX_HEAD);
    for (line, code, sentence) in REFUSALS {
        let Some(start) = find_last(&buf[from..], line.as_bytes()).map(|at| from + at) else {
            continue;
        };
        let Ok(head) = std::str::from_utf8(&buf[start..]) else {
            continue;
        };
        let Some(fields) = head
            .strip_prefix(line)
            .and_then(|h| h.strip_prefix("\r\n"))
            .and_then(|h| h.strip_suffix("\r\n\r\n"))
        else {
            continue;
        };
        let mut length = false;
        let only_theirs = fields.split("\r\n").all(|f| match f {
            "content-length: 0" => {
                length = true;
                true
            }
            "connection: close" => true,
            _ => f.strip_prefix("date: ").is_some_and(|d| d.len() == 29),
        });
        if only_theirs && length {
            return Some((start, code, sentence));
        }
    }
    None
}

fn find_last(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).rposition(|w| w == needle)
}

/// The head at `buf[start..]` with a JSON body: `{error, code}`.
fn with_body(buf: &[u8], start: usize, code: &str, sentence: &str) -> Vec<u8> {
    let body = serde_json::json!({ "error": sentence, "code": code }).to_string();
    let head = String::from_utf8_lossy(&buf[start..]);
    let head = head.trim_end_matches("\r\n").replace(
        "content-length: 0",
        &format!(
            "content-length: {}\r\ncontent-type: application/json",
            body.len()
        ),
    );
    let mut out = buf[..start].to_vec();
    out.extend_from_slice(head.as_bytes());
    out.extend_from_slice(b"\r\n\r\n");
    out.extend_from_slice(body.as_bytes());
    out
}

impl<S: AsyncWrite + Unpin> Answered<S> {
    /// Write what was accepted and not written yet.
    fn drain(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while self.written < self.pending.len() {
            match Pin::new(&mut self.inner).poll_write(cx, &self.pending[self.written..]) {
                Poll::Ready(Ok(0)) => return Poll::Ready(Err(io::ErrorKind::WriteZero.into())),
                Poll::Ready(Ok(n)) => self.written += n,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
        }
        self.pending.clear();
        self.written = 0;
        Poll::Ready(Ok(()))
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Answered<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        match this.drain(cx) {
            Poll::Ready(Ok(())) => {}
            Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
            Poll::Pending => return Poll::Pending,
        }
        let Some((start, code, sentence)) = refusal_at_end(buf) else {
            return Pin::new(&mut this.inner).poll_write(cx, buf);
        };
        this.pending = with_body(buf, start, code, sentence);
        // All of `buf` is taken; what the socket does not take now is
        // written by the next write, flush or shutdown.
        match this.drain(cx) {
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            _ => Poll::Ready(Ok(buf.len())),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        match this.drain(cx) {
            Poll::Ready(Ok(())) => Pin::new(&mut this.inner).poll_flush(cx),
            other => other,
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        match this.drain(cx) {
            Poll::Ready(Ok(())) => Pin::new(&mut this.inner).poll_shutdown(cx),
            other => other,
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Answered<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_read(cx, buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A socket that takes at most `chunk` bytes a write.
    struct Socket {
        got: Vec<u8>,
        chunk: usize,
    }

    impl AsyncWrite for Socket {
        fn poll_write(
            self: Pin<&mut Self>,
            _: &mut Context<'_>,
            buf: &[u8],
        ) -> Poll<io::Result<usize>> {
            let this = self.get_mut();
            let n = buf.len().min(this.chunk);
            this.got.extend_from_slice(&buf[..n]);
            Poll::Ready(Ok(n))
        }
        fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
        fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
    }

    fn through(writes: &[&[u8]], chunk: usize) -> Vec<u8> {
        let mut s = Answered::new(Socket {
            got: Vec::new(),
            chunk,
        });
        let waker = futures_util::task::noop_waker();
        let mut cx = Context::from_waker(&waker);
        for w in writes {
            let mut left: &[u8] = w;
            while !left.is_empty() {
                match Pin::new(&mut s).poll_write(&mut cx, left) {
                    Poll::Ready(Ok(n)) => left = &left[n..],
                    other => panic!("{other:?}"),
                }
            }
        }
        assert!(Pin::new(&mut s).poll_shutdown(&mut cx).is_ready());
        s.inner.got
    }

    const DATE: &str = "date: Tue, 08 Dec 2026 01:08:43 GMT";

    #[test]
    fn the_layers_own_refusals_get_a_json_body() {
        for (line, code, _) in REFUSALS {
            for close in ["connection: close\r\n", ""] {
                let head = format!("{line}\r\ncontent-length: 0\r\n{close}{DATE}\r\n\r\n");
                // Whole, or behind an earlier answer, through a socket
                // that takes a few bytes at a time.
                for before in ["", "HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}"] {
                    let all = format!("{before}{head}");
                    let out = through(&[all.as_bytes()], 7);
                    let text = String::from_utf8(out).unwrap();
                    let rest = text.strip_prefix(before).unwrap();
                    let (head_out, body) = rest.split_once("\r\n\r\n").unwrap();
                    let v: serde_json::Value = serde_json::from_str(body).unwrap();
                    assert_eq!(v["code"], code);
                    assert!(head_out.contains(&format!("content-length: {}", body.len())));
                    assert!(head_out.contains("content-type: application/json"));
                    assert!(head_out.starts_with(line) && head_out.contains(DATE));
                }
            }
        }
    }

    #[test]
    fn everything_else_passes_untouched() {
        let cases: [&[u8]; 5] = [
            // An answer of this service: a request id and a body.
            b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\nx-request-id: 1\r\n\r\n",
            b"HTTP/1.1 400 Bad Request\r\ncontent-length: 31\r\ncontent-type: application/json\r\n\r\n{\"error\":\"x\",\"code\":\"invalid\"}",
            // Not at the end of what is written.
            b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\ndate: Tue, 08 Dec 2026 01:08:43 GMT\r\n\r\nmore",
            b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\ndate: Tue, 08 Dec 2026 01:08:43 GMT\r\n\r\n",
            b"\x00\x01 binary \r\n\r\n",
        ];
        for case in cases {
            assert_eq!(through(&[case], 3), case);
            assert_eq!(through(&[case], 1 << 20), case);
        }
    }
}
