//! Maintenance. Operator's, outside a server: `fsck` (check, and repair
//! what startup would) and `gc` (repack), each on a stopped server's state
//! directory (the CLI refuses to change one that a server holds). A
//! server's own: `packs`, the background merging of session packs.

pub mod fsck;
pub mod gc;
pub mod packs;

use std::path::{Path, PathBuf};

use crate::locations::Locations;

/// Every session directory of `<state>/sessions` and `locations.json`.
pub fn sessions_of(state_dir: &Path) -> std::io::Result<Vec<(String, PathBuf)>> {
    let sessions_dir = state_dir.join("sessions");
    let locations = Locations::load(&sessions_dir);
    crate::registry::startup::session_dirs(&sessions_dir, &locations)
}
