//! The index on disk (`<state>/search/`): its schema, and opening it — a
//! missing, unreadable or older-schema index is rebuilt (it is a cache of
//! the session repositories).

use std::path::{Path, PathBuf};

use tantivy::schema::{
    Field, IndexRecordOption, Schema, TextFieldIndexing, TextOptions, FAST, STORED,
};
use tantivy::store::{Compressor, ZstdCompressor};
use tantivy::{DocId, Index, IndexSettings, SegmentReader};

use super::tokenizer;

/// Bumped when the schema or the analyzer changes: the index is rebuilt.
/// 2: no stored commit or node id (read from the repository), no commit
/// markers (one tips document per session), no norms on keyword fields.
pub const SCHEMA_VERSION: u32 = 2;
const VERSION_FILE: &str = "schema_version";

/// The `role` of a title document.
pub const ROLE_TITLE: &str = "title";
/// The `role` of a session's tips document: the branch tips whose whole
/// history is indexed.
pub const ROLE_TIPS: &str = "tips";

#[derive(Clone, Copy)]
pub struct Fields {
    pub session: Field,
    /// `title/<sid>` or `tips/<sid>`: what a document replaces.
    pub key: Field,
    pub branch: Field,
    pub turn: Field,
    pub seq: Field,
    /// A node's role, or `title` / `tips`.
    pub role: Field,
    pub tool: Field,
    pub created_at: Field,
    /// The searchable text, not stored (snippets of messages are cut from
    /// the session's own copy).
    pub text: Field,
    /// A title's text (titles are short; messages are not stored).
    pub title: Field,
    /// A tips document's commit ids, space-separated.
    pub tips: Field,
}

/// A keyword: one untokenized term, no norms (never scored).
fn keyword() -> TextOptions {
    TextOptions::default().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer("raw")
            .set_fieldnorms(false)
            .set_index_option(IndexRecordOption::Basic),
    )
}

/// A message's attributes are columns (fast fields), not stored
/// documents: a column of a few distinct values costs a few bits a
/// message, a stored document some twenty bytes.
fn column() -> TextOptions {
    TextOptions::default().set_fast(None)
}

pub fn schema() -> (Schema, Fields) {
    let mut b = Schema::builder();
    let text = TextOptions::default().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer(tokenizer::NAME)
            .set_index_option(IndexRecordOption::WithFreqsAndPositions),
    );
    let fields = Fields {
        session: b.add_text_field("session", keyword().set_fast(None)),
        key: b.add_text_field("key", keyword()),
        branch: b.add_text_field("branch", column()),
        turn: b.add_u64_field("turn", FAST),
        seq: b.add_u64_field("seq", FAST),
        role: b.add_text_field("role", keyword().set_fast(None)),
        tool: b.add_text_field("tool", column()),
        created_at: b.add_f64_field("created_at", FAST),
        text: b.add_text_field("text", text),
        title: b.add_text_field("title", STORED),
        tips: b.add_text_field("tips", STORED),
    };
    (b.build(), fields)
}

/// A document's text column (`session`, `branch`, `role`, `tool`).
pub fn text_at(segment: &SegmentReader, field: Field, doc: DocId) -> Option<String> {
    let name = segment.schema().get_field_name(field);
    let col = segment.fast_fields().str(name).ok()??;
    let ord = col.ords().first(doc)?;
    let mut out = String::new();
    col.ord_to_str(ord, &mut out).ok()?.then_some(out)
}

/// A document's number column (`turn`, `seq`).
pub fn u64_at(segment: &SegmentReader, field: Field, doc: DocId) -> Option<u64> {
    let name = segment.schema().get_field_name(field);
    segment.fast_fields().u64(name).ok()?.first(doc)
}

/// A document's time.
pub fn f64_at(segment: &SegmentReader, field: Field, doc: DocId) -> Option<f64> {
    let name = segment.schema().get_field_name(field);
    segment.fast_fields().f64(name).ok()?.first(doc)
}

/// Doc-store blocks (only titles and tips are stored): larger than
/// tantivy's 16 KiB default, so they compress together.
const DOCSTORE_BLOCK: usize = 128 * 1024;

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
            let settings = IndexSettings {
                docstore_blocksize: DOCSTORE_BLOCK,
                // zstd: its entropy coding shrinks the store's per-document
                // offsets (every message has one) to about a byte; lz4
                // leaves them at four.
                docstore_compression: Compressor::Zstd(ZstdCompressor {
                    compression_level: Some(3),
                }),
                ..IndexSettings::default()
            };
            let index = Index::builder()
                .schema(schema)
                .settings(settings)
                .create_in_dir(dir)?;
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
