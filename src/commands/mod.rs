//! CLI commands that talk to a running server.

pub mod client;
pub mod migrate;
pub mod projects;
pub mod sessions;
