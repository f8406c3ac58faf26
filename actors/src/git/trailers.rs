use git2::Repository;

/// The trailers a turn commit carries, mapping it back to the DAG.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Trailers {
    pub session: Option<String>,
    pub turn: u64,
    pub head_node: Option<String>,
    pub last_seq: u64,
    /// The branch the commit was made on.
    pub branch: Option<String>,
    /// Agent commits: the sequence number the turn started at (unique per
    /// turn across branches, unlike the turn number).
    pub first_seq: Option<u64>,
    /// Turn commits: the agent's commit in the bound project for the turn.
    pub project_commit: Option<String>,
}

pub const TURN: &str = "Openprogram-Turn";
pub const HEAD_NODE: &str = "Openprogram-Head-Node";
pub const LAST_SEQ: &str = "Openprogram-Last-Seq";
pub const SESSION: &str = "Openprogram-Session";
pub const PROJECT_COMMIT: &str = "Openprogram-Project-Commit";
pub const BRANCH: &str = "Openprogram-Branch";
pub const FIRST_SEQ: &str = "Openprogram-First-Seq";

impl Trailers {
    pub fn parse(message: &str) -> Trailers {
        let mut t = Trailers::default();
        if let Ok(list) = git2::message_trailers_strs(message) {
            for (key, value) in list.iter() {
                match key {
                    TURN => t.turn = value.trim().parse().unwrap_or(0),
                    HEAD_NODE => t.head_node = Some(value.trim().to_string()),
                    LAST_SEQ => t.last_seq = value.trim().parse().unwrap_or(0),
                    SESSION => t.session = Some(value.trim().to_string()),
                    BRANCH => t.branch = Some(value.trim().to_string()),
                    FIRST_SEQ => t.first_seq = value.trim().parse().ok(),
                    PROJECT_COMMIT => t.project_commit = Some(value.trim().to_string()),
                    _ => {}
                }
            }
        }
        t
    }
}

/// Trailers of the HEAD commit; all zero for a repository without commits.
pub fn head_trailers(repo: &Repository) -> Result<Trailers, git2::Error> {
    Ok(super::head_commit(repo)?
        .map(|c| Trailers::parse(c.message().unwrap_or("")))
        .unwrap_or_default())
}
