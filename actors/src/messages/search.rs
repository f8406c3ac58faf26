//! `Touched`: the session registry tells the search actor which session to
//! index again (or forget).

use std::path::PathBuf;

use actix::prelude::*;

/// A session changed (committed a turn, got a title, was imported, forked,
/// migrated, loaded) or was deleted.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Touched {
    pub id: String,
    pub dir: PathBuf,
    pub title: String,
    pub deleted: bool,
}
