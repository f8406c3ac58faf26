//! The index on disk (`<state>/search/`): its schema, and opening it — a
//! missing, unreadable or older-schema index is rebuilt (it is a cache of
//! the session repositories).

use std::ops::Bound;
use std::path::{Path, PathBuf};

use tantivy::query::{Query, RangeQuery};
use tantivy::schema::{
    Field, IndexRecordOption, NumericOptions, Schema, TextFieldIndexing, TextOptions, FAST, STORED,
};
use tantivy::store::{Compressor, ZstdCompressor};
use tantivy::{DocId, Index, IndexSettings, SegmentReader, TantivyDocument, Term};

use super::tokenizer;

/// Bumped when the schema or the analyzer changes: the index is rebuilt.
/// 2: no stored commit or node id (read from the repository), no commit
/// markers (one tips document per session), no norms on keyword fields.
/// 3: no `key` field, `session` and `role` columns only (a message carries
/// no indexed term but its text's), a session's title and tips documents
/// under one `owner` term, sessions indexed in id order, no `tool` column (a
/// hit's tool is read with its text), every column on every document, tips
/// as bytes.
pub const SCHEMA_VERSION: u32 = 3;
const VERSION_FILE: &str = "schema_version";

/// The `role` of a title document.
pub const ROLE_TITLE: &str = "title";
/// The `role` of a session's tips document: the branch tips whose whole
/// history is indexed.
pub const ROLE_TIPS: &str = "tips";

#[derive(Clone, Copy)]
pub struct Fields {
    /// Every document's session (a column).
    pub session: Field,
    /// The session of a title or tips document, as an indexed term (a
    /// 64-bit FNV hash of its id): deleted to replace both. Messages have
    /// none.
    pub owner: Field,
    pub branch: Field,
    pub turn: Field,
    pub seq: Field,
    /// A node's role, or `title` / `tips` (a column: filtered by range
    /// queries over it, never looked up as a term).
    pub role: Field,
    pub created_at: Field,
    /// The searchable text, not stored (snippets of messages are cut from
    /// the session's own copy).
    pub text: Field,
    /// A title's text (titles are short; messages are not stored).
    pub title: Field,
    /// A tips document's commit ids, 20 bytes each.
    pub tips: Field,
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
        session: b.add_text_field("session", column()),
        // Indexed, no norms (never scored).
        owner: b.add_u64_field("owner", NumericOptions::default().set_indexed()),
        branch: b.add_text_field("branch", column()),
        turn: b.add_u64_field("turn", FAST),
        seq: b.add_u64_field("seq", FAST),
        role: b.add_text_field("role", column()),
        created_at: b.add_f64_field("created_at", FAST),
        text: b.add_text_field("text", text),
        title: b.add_text_field("title", STORED),
        tips: b.add_bytes_field("tips", STORED),
    };
    (b.build(), fields)
}

/// The documents whose text column `field` holds `value`: a range over the
/// column (no indexed term; a term's postings would cost bits a message).
fn column_is(field: Field, value: &str) -> Box<dyn Query> {
    let term = Term::from_field_text(field, value);
    Box::new(RangeQuery::new(
        Bound::Included(term.clone()),
        Bound::Included(term),
    ))
}

/// The documents of one role.
pub fn role_is(f: &Fields, role: &str) -> Box<dyn Query> {
    column_is(f.role, role)
}

/// Every document of a session (a scan of the `session` column: done
/// when a session is deleted).
pub fn session_all(f: &Fields, session: &str) -> Box<dyn Query> {
    column_is(f.session, session)
}

/// The `owner` hash of a session.
pub fn owner_of(session: &str) -> u64 {
    use std::hash::Hasher;
    let mut h = fnv::FnvHasher::default();
    h.write(session.as_bytes());
    h.finish()
}

/// The term of an owner hash: a session's title and tips documents.
pub fn owner_term(f: &Fields, owner: u64) -> Term {
    Term::from_field_u64(f.owner, owner)
}

/// A new title or tips document, its fields but the content. It has the
/// columns a message has (turn and seq 0, branch `main`, the commonest
/// value): a column some documents lack costs tantivy an index of which
/// have it, about a bit a document. It has no time (a time of 0 would
/// widen the column's range to 31 bits a message), so time filters leave
/// titles out.
pub fn session_doc_base(f: &Fields, session: &str, role: &str) -> TantivyDocument {
    let mut d = TantivyDocument::default();
    d.add_text(f.session, session);
    d.add_u64(f.owner, owner_of(session));
    d.add_text(f.role, role);
    d.add_text(f.branch, "main");
    d.add_u64(f.turn, 0);
    d.add_u64(f.seq, 0);
    d
}

/// A document's text column (`session`, `branch`, `role`).
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
                // zstd at level 19: a message stores nothing, but the store
                // keeps a 4-byte offset for every document. Level 19 finds
                // their repeating pattern (1.0 byte a message; 2.4 at level
                // 3, 4 with lz4). Blocks are small (titles and tips), so the
                // slow level costs little.
                docstore_compression: Compressor::Zstd(ZstdCompressor {
                    compression_level: Some(19),
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
