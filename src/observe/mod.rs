//! What an operator sees of a running server: Prometheus metrics and one
//! log line per request.

pub mod metrics;
pub mod requests;
