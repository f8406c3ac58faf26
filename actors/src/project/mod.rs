//! Projects: the user's working directories under git, the registry that
//! lists them, and one actor per project that serializes its git work.

pub mod actor;
pub mod error;
pub mod files;
pub mod model;
pub mod registry;
pub mod turn;

pub use actor::ProjectActor;
pub use error::ProjectError;
pub use model::{Project, DEFAULT_PROJECT, OPENPROGRAM_DIR};
pub use registry::{ProjectRegistry, ProjectView};
