//! Ports for the servers the tests start (shared by the test binaries).

use std::net::TcpListener;

/// A port nobody listens on now, for a server a test starts on it.
///
/// Taken below the kernel's ephemeral range (`ip_local_port_range`), from
/// a counter: a port picked by binding port 0 is an ephemeral one, and
/// until the server binds it, any of the tests' many outgoing connections
/// may take it as its own local port (the server then fails to start).
/// The counter keeps this process's picks apart; its start, from the
/// process id, other processes'.
pub fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let low = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|r| r.split_whitespace().next()?.parse::<u32>().ok())
        .unwrap_or(32768);
    let span = low.saturating_sub(1024).clamp(1, 12_000);
    let base = low - span;
    let start = std::process::id().wrapping_mul(97);
    for _ in 0..span {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let port = (base + (start + n) % span) as u16;
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no free port below the ephemeral range");
}
