//! A real HTTP server speaking the OpenAI chat-completions protocol, for
//! tests: scripted replies, recorded requests, configurable delay and
//! status, and a count of the most requests it saw in flight at once.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};

type Reply = dyn Fn(usize, &Value) -> (u16, String) + Send + Sync;

pub struct FakeLlm {
    pub base_url: String,
    requests: Arc<Mutex<Vec<(String, Value)>>>,
    peak: Arc<AtomicUsize>,
}

struct Shared {
    delay: Duration,
    reply: Box<Reply>,
    requests: Arc<Mutex<Vec<(String, Value)>>>,
    in_flight: AtomicUsize,
    peak: Arc<AtomicUsize>,
}

impl FakeLlm {
    /// `reply(n, request_body)` gives (status, message content) for the n-th
    /// request (0-based).
    pub fn start(
        delay: Duration,
        reply: impl Fn(usize, &Value) -> (u16, String) + Send + Sync + 'static,
    ) -> FakeLlm {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind fake LLM");
        let addr = listener.local_addr().expect("addr");
        let requests = Arc::new(Mutex::new(Vec::new()));
        let peak = Arc::new(AtomicUsize::new(0));
        let shared = Arc::new(Shared {
            delay,
            reply: Box::new(reply),
            requests: requests.clone(),
            in_flight: AtomicUsize::new(0),
            peak: peak.clone(),
        });
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let shared = shared.clone();
                std::thread::spawn(move || handle(stream, &shared));
            }
        });
        FakeLlm {
            base_url: format!("http://{addr}/v1"),
            requests,
            peak,
        }
    }

    /// Always answer `content` with 200.
    pub fn replying(delay: Duration, content: &'static str) -> FakeLlm {
        FakeLlm::start(delay, move |_, _| (200, content.to_string()))
    }

    pub fn requests(&self) -> Vec<(String, Value)> {
        self.requests.lock().unwrap().clone()
    }

    pub fn count(&self) -> usize {
        self.requests.lock().unwrap().len()
    }

    pub fn peak_in_flight(&self) -> usize {
        self.peak.load(Ordering::SeqCst)
    }
}

fn handle(stream: TcpStream, shared: &Shared) {
    let mut reader = BufReader::new(stream.try_clone().expect("clone stream"));
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).is_err() {
        return;
    }
    let path = request_line
        .split_whitespace()
        .nth(1)
        .unwrap_or("")
        .to_string();
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
            break;
        }
        if let Some((k, v)) = line.split_once(':') {
            if k.eq_ignore_ascii_case("content-length") {
                length = v.trim().parse().unwrap_or(0);
            }
        }
    }
    let mut body = vec![0u8; length];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let n = {
        let mut r = shared.requests.lock().unwrap();
        r.push((path, body.clone()));
        r.len() - 1
    };
    let now = shared.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
    shared.peak.fetch_max(now, Ordering::SeqCst);
    std::thread::sleep(shared.delay);
    shared.in_flight.fetch_sub(1, Ordering::SeqCst);
    let (status, content) = (shared.reply)(n, &body);
    if status == 200 && body["stream"] == true {
        // Server-sent chunks, a word each, as OpenAI streams.
        let mut stream = stream;
        let _ = write!(
            stream,
            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
        );
        for word in content.split_inclusive(' ') {
            let chunk = json!({"id": "chatcmpl-test", "object": "chat.completion.chunk",
                "choices": [{"index": 0, "delta": {"content": word}, "finish_reason": null}]});
            let _ = write!(stream, "data: {chunk}\n\n");
            let _ = stream.flush();
            std::thread::sleep(Duration::from_millis(30));
        }
        let _ = write!(stream, "data: [DONE]\n\n");
        return;
    }
    let payload = if status == 200 {
        json!({"id": "chatcmpl-test", "object": "chat.completion",
               "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}]})
    } else {
        json!({"error": {"message": content}})
    };
    let text = payload.to_string();
    let mut stream = stream;
    let _ = write!(
        stream,
        "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
        text.len()
    );
}
