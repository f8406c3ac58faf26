//! A runner for the browser tests: a real WebSocket client that registers
//! and claims every run it is offered (the agent runtime of a test), until
//! dropped.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use tungstenite::stream::MaybeTlsStream;
use tungstenite::Message;

pub struct Runner {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Runner {
    /// Register with the server at `url` and claim every run offered.
    pub fn claiming(url: &str) -> Runner {
        let ws = format!("{}/ws", url.replace("http://", "ws://"));
        let (mut sock, _) = tungstenite::connect(ws).expect("runner connects");
        if let MaybeTlsStream::Plain(t) = sock.get_ref() {
            t.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
        }
        let register =
            json!({"action": "register_runner", "name": "test-runner", "sessions": "all"});
        sock.send(Message::text(register.to_string())).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            while !flag.load(Ordering::SeqCst) {
                match sock.read() {
                    Ok(Message::Text(t)) => {
                        let v: Value = serde_json::from_str(t.as_str()).unwrap_or_default();
                        if v["type"] == "run_requested" {
                            let claim = json!({"action": "claim_run", "session_id": v["data"]["session_id"], "msg_id": v["data"]["msg_id"]});
                            let _ = sock.send(Message::text(claim.to_string()));
                        }
                    }
                    Ok(_) => {}
                    Err(tungstenite::Error::Io(e))
                        if matches!(
                            e.kind(),
                            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                        ) =>
                    {
                        let _ = sock.flush();
                    }
                    Err(_) => return,
                }
            }
            let _ = sock.close(None);
        });
        Runner {
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Runner {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
