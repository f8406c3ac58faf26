//! Maintenance. Operator's, outside a server: `fsck` (check, and repair
//! what startup would) and `gc` (repack), each on a stopped server's state
//! directory (the CLI refuses to change one that a server holds). The
//! server's own background merging of session packs is `pack_keeper`.

pub mod fsck;
pub mod gc;
pub mod secrets;
