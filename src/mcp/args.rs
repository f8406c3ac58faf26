//! The MCP tools' arguments: the JSON schemas clients see are derived
//! from these structs, and a call that does not fit them is refused by the
//! SDK before a tool runs.

use rmcp::schemars;
use serde::Deserialize;

/// Numbers as some clients send them: `2` or `"2"` (the MCP Inspector's
/// command line sends every argument as a string). A string that is not a
/// number is refused as a wrong type is.
mod lenient {
    use serde::de::{Deserializer, Error};
    use serde::Deserialize;

    #[derive(Deserialize)]
    #[serde(untagged)]
    enum NumberOrText<T> {
        Number(T),
        Text(String),
    }

    pub fn number<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
    where
        D: Deserializer<'de>,
        T: Deserialize<'de> + std::str::FromStr,
    {
        match Option::<NumberOrText<T>>::deserialize(d)? {
            None => Ok(None),
            Some(NumberOrText::Number(n)) => Ok(Some(n)),
            Some(NumberOrText::Text(t)) => t
                .trim()
                .parse()
                .map(Some)
                .map_err(|_| D::Error::custom(format!("'{t}' is not a number"))),
        }
    }
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct SearchArgs {
    /// Words to look for in every message of every session.
    pub query: String,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct FetchArgs {
    /// An id `search` answered with: `<session id>/<turn>`.
    pub id: String,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct SessionsSearchArgs {
    /// Words (all must match), "a phrase", prefix*, OR, NOT.
    pub query: String,
    /// Only this project's sessions (`default` for those bound to none).
    pub project_id: Option<String>,
    /// Only this branch's messages.
    pub branch: Option<String>,
    /// `user`, `assistant`, `tool` or `title`.
    pub role: Option<String>,
    /// Messages written at or after this time (seconds since the epoch).
    #[serde(default, deserialize_with = "lenient::number")]
    pub since: Option<f64>,
    /// Messages written before this time (seconds since the epoch).
    #[serde(default, deserialize_with = "lenient::number")]
    pub until: Option<f64>,
    /// true: archived sessions only; false: active ones only.
    pub archived: Option<bool>,
    /// Hits per page (1-200, default 10).
    #[serde(default, deserialize_with = "lenient::number")]
    pub limit: Option<u32>,
    /// The `next_cursor` of the previous page.
    pub cursor: Option<String>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct SessionsListArgs {
    pub project_id: Option<String>,
    /// The tool a session came from (`claude-code`, `codex`, …) or `api`.
    pub source: Option<String>,
    /// true: archived sessions only; false (default): active ones only.
    pub archived: Option<bool>,
    /// Only pinned (true) or unpinned (false) sessions.
    pub pinned: Option<bool>,
    /// Rows per page (1-200, default 20); newest activity first.
    #[serde(default, deserialize_with = "lenient::number")]
    pub limit: Option<u32>,
    /// The `next_cursor` of the previous page.
    pub cursor: Option<String>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct SessionGetArgs {
    pub session_id: String,
    /// The branch (default: the one the session shows).
    pub branch: Option<String>,
    /// First turn (default 1).
    #[serde(default, deserialize_with = "lenient::number")]
    pub from_turn: Option<u64>,
    /// Last turn (default: the last; at most 50 turns an answer, the rest
    /// from `next_from_turn`).
    #[serde(default, deserialize_with = "lenient::number")]
    pub to_turn: Option<u64>,
    /// `messages` (default) or `markdown`.
    pub format: Option<String>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct TurnGetArgs {
    pub session_id: String,
    /// The turn's number on `branch`.
    #[serde(default, deserialize_with = "lenient::number")]
    pub turn: Option<u64>,
    /// Or its commit (at least 7 characters), on any branch.
    pub commit: Option<String>,
    /// The branch of `turn` (default: the one the session shows).
    pub branch: Option<String>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct ProjectCommitsArgs {
    pub project_id: String,
    /// Commits, newest first (1-200, default 20).
    #[serde(default, deserialize_with = "lenient::number")]
    pub limit: Option<u32>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct RecentActivityArgs {
    /// Sessions active at or after this time (seconds since the epoch).
    pub since: f64,
    /// Sessions at most (1-200, default 50).
    #[serde(default, deserialize_with = "lenient::number")]
    pub limit: Option<u32>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct PointerArg {
    pub project_id: Option<String>,
    pub session_id: String,
    #[serde(default)]
    pub node_ids: Vec<String>,
    /// The turn commit the nodes were read at; none: as they are now.
    pub commit: Option<String>,
    pub event_time: Option<f64>,
    pub ingestion_time: Option<f64>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct ProvenanceArgs {
    /// Provenance pointers (project, session, node ids, commit, times).
    pub pointers: Vec<PointerArg>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct NoteArgs {
    pub session_id: String,
    /// The note, kept as a runtime node of the session (in its next commit).
    pub text: String,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct ForkArgs {
    pub session_id: String,
    /// The turn commit to fork at (default: the last turn).
    pub commit: Option<String>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct UpdateArgs {
    pub session_id: String,
    /// A new title (locks it, as a rename does).
    pub title: Option<String>,
    pub pinned: Option<bool>,
    pub archived: Option<bool>,
}
