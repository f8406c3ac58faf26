//! Operator's maintenance of a state directory, outside a server: `fsck`
//! (check, and repair what startup would) and `gc` (repack). Each works on
//! a stopped server's state directory; the CLI refuses to change one that
//! a server holds.

pub mod fsck;
pub mod gc;

use std::path::{Path, PathBuf};

use crate::locations::Locations;

/// Every session directory of `<state>/sessions` and `locations.json`.
pub fn sessions_of(state_dir: &Path) -> std::io::Result<Vec<(String, PathBuf)>> {
    let sessions_dir = state_dir.join("sessions");
    let locations = Locations::load(&sessions_dir);
    crate::registry::startup::session_dirs(&sessions_dir, &locations)
}
