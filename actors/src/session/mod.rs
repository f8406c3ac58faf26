//! One session: its repository layout, the blocking core (split by concern
//! into `impl SessionCore` blocks) and its actor.

pub mod actor;
pub mod announce;
mod append;
mod branching;
mod commit_message;
mod contents;
mod contexts;
pub mod continuation;
pub mod core;
pub mod error;
mod graph;
pub mod layout;
pub mod legacy;
mod load;
pub mod messages;
mod naming;
pub mod node_index;
pub mod outside;
pub mod provenance;
pub mod purge;
mod queue;
mod rebind;
mod redaction;
pub mod summary;
mod transfer;
mod turn;
pub mod upkeep;
pub mod whole;
mod wire;
mod writes;

pub use actor::SessionActor;
pub use branching::{BranchInfo, CheckoutTo, History, HistoryRow, Position, Shown, Step, SwitchTo};
pub use contexts::ContextRecord;
pub use continuation::{ContinueTurn, Continued};
pub use core::SessionCore;
pub use error::{SessionError, RUN_ACTIVE};
pub use naming::{TitlePlan, RETITLE_AT};
pub use queue::Queued;
pub use wire::{
    AppendOutcome, CreateSpec, EndTurn, NewNode, NodePatch, Outcome, Posted, TurnOutcome,
    MAX_TURN_FILES, ROOT_CALLER,
};

#[cfg(test)]
mod purge_tests;
#[cfg(test)]
mod tests;
