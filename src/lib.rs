//! The openprogram service: HTTP wiring, CLI and configuration around the
//! engine of `openprogram-actors`.

pub mod cli;
pub mod cluster;
pub mod cluster_search;
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
pub mod telemetry;
pub mod web;
pub mod ws;
