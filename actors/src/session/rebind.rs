//! Rebinding a session without turns to another project: its repository
//! moves into that project's folder.

use std::fs;
use std::path::Path;

use super::core::SessionCore;
use super::error::SessionError;
use crate::fsio;
use crate::git;

impl SessionCore {
    /// Bind a session that has no turn yet to another project, moving its
    /// repository to `dir`. Naming the project it already has always
    /// succeeds; after the first turn any other project is refused.
    pub fn rebind(
        &mut self,
        project_id: &str,
        dir: &Path,
        home: Option<crate::meta::ProjectHome>,
    ) -> Result<bool, SessionError> {
        if self.meta.project_id == project_id {
            return Ok(false);
        }
        if self.meta.last_turn.is_some() || self.meta.open_turn.is_some() {
            return Err(SessionError::Frozen);
        }
        if dir != self.dir {
            if dir.exists() {
                return Err(SessionError::AlreadyExists);
            }
            let parent = dir
                .parent()
                .ok_or_else(|| SessionError::Invalid("no parent".into()))?;
            fsio::create_dir_durable(parent)?;
            // What the log still holds for the old folder is made durable
            // first (the log's replay would look for it there), and a
            // barrier ends it.
            if self.store.is_logged() {
                fsio::sync_filesystem(&self.dir)?;
            }
            fs::rename(&self.dir, dir)?;
            fsio::fsync_dir(parent)?;
            if let Some(old_parent) = self.dir.parent() {
                fsio::fsync_dir(old_parent)?;
            }
            self.store.commit(vec![crate::wal::Change::Barrier {
                root: self.dir.clone(),
            }])?;
            self.dir = dir.to_path_buf();
            self.repo = git::open_repo(&self.dir)?;
            self.index = git::GitIndex::load(&self.repo)?;
        }
        self.meta.project_id = project_id.to_string();
        self.meta.project_home = home;
        self.write_meta()?;
        Ok(true)
    }
}
