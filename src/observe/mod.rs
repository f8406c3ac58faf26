//! What an operator sees of a running server: Prometheus metrics and one
//! log line per request.

pub mod allocator;
pub mod metrics;
pub mod requests;
