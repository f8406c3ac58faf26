//! The index on disk (`<state>/search/`): its schema, and opening it — a
//! missing, unreadable or older-schema index is rebuilt (it is a cache of
//! the session repositories).

use std::path::{Path, PathBuf};

use tantivy::schema::{
    Field, IndexRecordOption, Schema, TextFieldIndexing, TextOptions, FAST, INDEXED, STORED, STRING,
};
use tantivy::Index;

use super::tokenizer;

/// Bumped when the schema or the analyzer changes: the index is rebuilt.
pub const SCHEMA_VERSION: u32 = 1;
const VERSION_FILE: &str = "schema_version";

/// Document kinds.
pub const KIND_NODE: &str = "node";
pub const KIND_TITLE: &str = "title";
/// A marker: this commit of this session is indexed.
pub const KIND_COMMIT: &str = "commit";

#[derive(Clone, Copy)]
pub struct Fields {
    pub kind: Field,
    pub session: Field,
    /// `commit/<sid>/<oid>` or `title/<sid>`: what a document replaces.
    pub key: Field,
    pub node_id: Field,
    pub branch: Field,
    pub turn: Field,
    pub seq: Field,
    pub commit: Field,
    pub role: Field,
    pub tool: Field,
    pub created_at: Field,
    /// The searchable text, not stored (snippets of messages are cut from
    /// the session's own copy).
    pub text: Field,
    /// A title's text (titles are short; messages are not stored).
    pub title: Field,
}

pub fn schema() -> (Schema, Fields) {
    let mut b = Schema::builder();
    let text = TextOptions::default().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer(tokenizer::NAME)
            .set_index_option(IndexRecordOption::WithFreqsAndPositions),
    );
    let fields = Fields {
        kind: b.add_text_field("kind", STRING),
        session: b.add_text_field("session", STRING | STORED),
        key: b.add_text_field("key", STRING),
        node_id: b.add_text_field("node_id", STORED),
        branch: b.add_text_field("branch", STORED),
        turn: b.add_u64_field("turn", STORED),
        seq: b.add_u64_field("seq", STORED),
        commit: b.add_text_field("commit", STORED),
        role: b.add_text_field("role", STRING | STORED),
        tool: b.add_text_field("tool", STORED),
        created_at: b.add_f64_field("created_at", INDEXED | STORED | FAST),
        text: b.add_text_field("text", text),
        title: b.add_text_field("title", STORED),
    };
    (b.build(), fields)
}

/// The index folder of a state directory.
pub fn dir_of(state_dir: &Path) -> PathBuf {
    state_dir.join("search")
}

/// Open the index, or make a new one (`rebuilt` says so: everything must
/// be indexed again).
pub fn open(dir: &Path) -> tantivy::Result<(Index, Fields, bool)> {
    let (schema, fields) = schema();
    let version_ok = std::fs::read_to_string(dir.join(VERSION_FILE))
        .ok()
        .and_then(|v| v.trim().parse::<u32>().ok())
        == Some(SCHEMA_VERSION);
    // Opened only if every segment it lists can be read.
    let existing = version_ok
        .then(|| Index::open_in_dir(dir).ok())
        .flatten()
        .filter(|i| i.schema() == schema)
        .filter(|i| {
            i.reader()
                .map(|r| {
                    r.searcher()
                        .segment_readers()
                        .iter()
                        .all(|s| s.num_docs() <= s.max_doc())
                })
                .is_ok()
        });
    let (index, rebuilt) = match existing {
        Some(i) => (i, false),
        None => {
            if dir.exists() {
                tracing::warn!(dir = %dir.display(), "search index missing, damaged or of an older schema; rebuilding it");
                // Ours alone (a cache): cleared and made again.
                std::fs::remove_dir_all(dir)?;
            }
            crate::fsio::create_private_dir_all(dir)?;
            let index = Index::create_in_dir(dir, schema)?;
            crate::fsio::atomic_write(
                &dir.join(VERSION_FILE),
                SCHEMA_VERSION.to_string().as_bytes(),
            )?;
            (index, true)
        }
    };
    index
        .tokenizers()
        .register(tokenizer::NAME, tokenizer::analyzer());
    Ok((index, fields, rebuilt))
}
