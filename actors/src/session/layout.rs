//! Where a session's files live inside its repository.
//!
//! History files keep the spec's names (`NNNNNN-<r>-<id>.json`) but sit in
//! two levels of folders made from the sequence number's own digits:
//! seq 012345 is `history/01/23/012345-u-<id>.json`. Every tree then holds at
//! most 100 entries, so a commit rewrites a few small trees instead of one
//! tree listing every file of the session, and `find history -type f | sort`
//! still reads chronologically.

use std::path::{Path, PathBuf};

use crate::node::Role;

pub const META: &str = "meta.json";
pub const HISTORY: &str = "history";
pub const CONTEXT_COMMITS: &str = "context/commits";
pub const WORKDIR: &str = "workdir";
pub const GITIGNORE: &str = ".gitignore";
/// Ignored inside a session repo: the agent's scratch folder and temp files.
pub const GITIGNORE_BODY: &str = "/workdir/\n/queue/\n.tmp-*\n";
/// User messages waiting for the running turn to end (not history yet).
pub const QUEUE: &str = "queue";

/// Largest sequence number the six-digit names can hold.
pub const MAX_SEQ: u64 = 999_999;

/// Path of a node file, relative to the session directory.
pub fn node_rel_path(seq: u64, role: Role, id: &str) -> PathBuf {
    // Shards by the first two pairs of the six digits: 012345 → 01/23/.
    Path::new(HISTORY)
        .join(format!("{:02}", seq / 10_000 % 100))
        .join(format!("{:02}", seq / 100 % 100))
        .join(format!("{seq:06}-{}-{id}.json", role.letter()))
}

/// Parse a history file name into (seq, role, id).
pub fn parse_node_file_name(name: &str) -> Option<(u64, Role, String)> {
    let stem = name.strip_suffix(".json")?;
    let (seq, rest) = stem.split_once('-')?;
    let (letter, id) = rest.split_once('-')?;
    if seq.len() != 6 || letter.chars().count() != 1 || id.is_empty() {
        return None;
    }
    let seq = seq.parse().ok()?;
    let role = Role::from_letter(letter.chars().next()?)?;
    Some((seq, role, id.to_string()))
}

/// Relative path of a stored context snapshot.
pub fn context_rel_path(context_id: &str) -> PathBuf {
    Path::new(CONTEXT_COMMITS).join(format!("{context_id}.json"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_paths_sort_chronologically_and_round_trip() {
        let a = node_rel_path(99, Role::User, "x");
        let b = node_rel_path(100, Role::Assistant, "y");
        let c = node_rel_path(12345, Role::Tool, "z");
        assert_eq!(a, Path::new("history/00/00/000099-u-x.json"));
        assert_eq!(c, Path::new("history/01/23/012345-t-z.json"));
        assert!(a < b && b < c);
        let name = c.file_name().unwrap().to_str().unwrap();
        assert_eq!(
            parse_node_file_name(name),
            Some((12345, Role::Tool, "z".into()))
        );
        assert_eq!(
            parse_node_file_name("000001-a-with-dashes.json"),
            Some((1, Role::Assistant, "with-dashes".into()))
        );
        assert_eq!(parse_node_file_name("garbage.json"), None);
    }
}
