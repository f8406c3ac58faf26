//! The session registry: `<state>/sessions/index.json` and the list every
//! client reads.

pub mod actor;
pub mod journal;
pub mod list_file;
pub mod page_json;
pub mod query;
mod reset;
pub mod row;
pub mod startup;
pub mod writer;

#[cfg(test)]
mod tests;

pub use actor::{Page, RegistryStats, SessionRegistry};
pub use page_json::PageJson;
pub use query::ListQuery;
pub use row::SessionRow;
pub use startup::Policy;
