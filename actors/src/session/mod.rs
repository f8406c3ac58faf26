//! One session: its repository layout, the blocking core and its actor.

pub mod actor;
mod branching;
mod commit_message;
pub mod core;
pub mod error;
pub mod layout;
pub mod summary;

pub use actor::{ChangeKind, SessionActor, SessionChanged};
pub use branching::{BranchInfo, CheckoutTo, History, HistoryRow, Position, Shown, Step, SwitchTo};
pub use core::{
    AppendOutcome, CreateSpec, EndTurn, NewNode, NodePatch, Outcome, Posted, Queued, SessionCore,
    TurnOutcome, ROOT_CALLER,
};
pub use error::{ErrorKind, SessionError, RUN_ACTIVE};
