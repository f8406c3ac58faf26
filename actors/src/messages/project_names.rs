//! `SetProjectNames`: the project registry tells the session registry the
//! projects' names (at start and after each change of projects), so each
//! listed row shows its project's name without asking.

use actix::prelude::*;

/// Project names by id, as the project registry last announced them.
#[derive(Debug, Clone, Default)]
pub struct ProjectNames {
    pub names: std::collections::HashMap<String, String>,
    /// The default project's name (the home folder's name).
    pub default_name: String,
}

impl ProjectNames {
    /// The name a row shows for `project_id`: the project's, else the
    /// default project's.
    pub fn of(&self, project_id: &str) -> &str {
        self.names
            .get(project_id)
            .map(String::as_str)
            .unwrap_or(&self.default_name)
    }
}

/// The project registry's names changed (sent at start and after each
/// change of projects). Rows already listed show the new names from now on.
#[derive(Message)]
#[rtype(result = "()")]
pub struct SetProjectNames(pub ProjectNames);
