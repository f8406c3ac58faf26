//! openprogram-actors: the entity-memory engine. Domain types, git storage
//! and the actix actors that own them; usable without HTTP.

pub mod cluster;
pub mod engine;
pub mod error;
pub mod error_kind;
pub mod events;
pub mod feed;
pub mod fsio;
pub mod git;
pub mod ids;
pub mod importers;
pub mod limit;
pub mod locations;
pub mod maintenance;
pub mod manager;
pub mod messages;
pub mod meta;
pub mod node;
pub mod pack_keeper;
pub mod paths;
pub mod project;
pub mod redact;
pub mod registry;
pub mod replication;
pub mod search;
pub mod session;
pub mod stage;
pub mod store;
pub mod titler;
pub mod wal;

pub use engine::Engine;
pub use error::{EngineError, ErrorKind};
