//! Projects: the user's working directories under git, the registry that
//! lists them, and one actor per project that serializes its git work.

pub mod actor;
pub mod agent_turn;
pub mod agent_turns;
pub mod error;
pub mod files;
pub mod folder;
pub mod model;
pub mod registry;
pub mod turn;
pub mod undo;

pub use actor::ProjectActor;
pub use error::{ProjectError, Refusal};
pub use model::{Project, DEFAULT_PROJECT, OPENPROGRAM_DIR};
pub use registry::{ProjectRegistry, ProjectView};
