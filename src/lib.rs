//! The openprogram service: HTTP wiring, CLI and configuration around the
//! engine of `openprogram-actors`.

pub mod cli;
pub mod client;
pub mod cluster;
pub mod commands;
pub mod config;
pub mod connection;
pub mod error;
pub mod mcp;
pub mod observe;
pub mod openapi;
pub mod routes;
pub mod runner;
pub mod schemas;
pub mod security;
pub mod startup;
pub mod state;
pub mod telemetry;
pub mod web;
pub mod ws;
