//! Integration tests: a real `openprogram` server on loopback, driven over
//! HTTP, with its repositories checked by the `git` CLI.

// tests: a failed step is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod bad_input;
mod branches;
mod changes;
mod cluster;
mod cluster_harness;
mod conversation;
mod crash;
mod crash_model;
mod fake_llm;
mod full_disk;
mod git_servers;
mod helpers;
mod hostile;
mod import;
mod mcp;
mod migration;
mod openapi;
mod operations;
mod original_client;
mod original_store;
mod outside;
#[path = "../shared/ports.rs"]
mod ports;
mod projects;
mod protocol;
mod provenance;
mod purge;
mod recordings;
mod registry;
mod replication;
mod runners;
mod search;
mod secrets;
mod security;
mod session_store;
mod soak;
mod titles;
mod undo;
mod wal;
mod whole_turn;
mod ws;
