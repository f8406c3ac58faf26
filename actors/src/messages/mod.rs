//! The notifications one actor sends another, apart from both: plain data
//! with an actix `Message` impl, so an actor that sends one never imports
//! the actor that handles it (and the modules never import each other in a
//! circle). The requests an actor answers (a project's `CommitTurn`, the
//! registry's `List`) stay with that actor as its interface.

mod project_names;
mod search;
mod session_changed;
mod titles;

pub use project_names::{ProjectNames, SetProjectNames};
pub use search::Touched;
pub use session_changed::{ChangeKind, SessionChanged};
pub use titles::{ApplyTitle, TitleJob};
