//! Queries: the user's text parsed by tantivy's query grammar (words,
//! `"phrases"`, `prefix*`, `AND` / `OR` / `NOT`, `+` / `-`, parentheses),
//! each literal analyzed like the indexed text, so a Chinese word becomes a
//! phrase of bigrams and `pars*` a prefix query. Then the filters, BM25
//! ranking, and snippets cut from the messages themselves.

use std::ops::Bound;

use tantivy::query::{
    AllQuery, BooleanQuery, EmptyQuery, Occur, PhrasePrefixQuery, PhraseQuery, Query, RangeQuery,
    TermQuery,
};
use tantivy::query_grammar::{self, Delimiter, UserInputAst, UserInputLeaf};
use tantivy::schema::IndexRecordOption;
use tantivy::tokenizer::TokenStream;
use tantivy::Term;

use super::index::Fields;
use super::tokenizer;
use super::SearchError;

/// Parse `q` into a query on the text field.
pub fn parse(q: &str, f: &Fields) -> Result<Box<dyn Query>, SearchError> {
    if q.trim().is_empty() {
        return Err(SearchError::BadQuery("the query is empty".into()));
    }
    let (ast, errors) = query_grammar::parse_query_lenient(q);
    if let Some(e) = errors.first() {
        return Err(SearchError::BadQuery(format!(
            "{} (at character {})",
            e.message, e.pos
        )));
    }
    convert(&ast, f)
}

fn convert(ast: &UserInputAst, f: &Fields) -> Result<Box<dyn Query>, SearchError> {
    Ok(match ast {
        UserInputAst::Clause(clauses) => {
            // Words without an operator must all match (as people expect
            // of a search box); OR between them relaxes that.
            let any_should = clauses
                .iter()
                .any(|(occur, _)| *occur == Some(query_grammar::Occur::Should));
            let mut parts: Vec<(Occur, Box<dyn Query>)> = Vec::new();
            for (occur, sub) in clauses {
                let occur = match occur {
                    Some(query_grammar::Occur::MustNot) => Occur::MustNot,
                    Some(query_grammar::Occur::Should) => Occur::Should,
                    Some(query_grammar::Occur::Must) => Occur::Must,
                    None if any_should => Occur::Should,
                    None => Occur::Must,
                };
                parts.push((occur, convert(sub, f)?));
            }
            if parts.iter().all(|(o, _)| *o == Occur::MustNot) {
                // "NOT x" alone: everything but x.
                parts.push((Occur::Must, Box::new(AllQuery)));
            }
            Box::new(BooleanQuery::new(parts))
        }
        UserInputAst::Boost(inner, boost) => Box::new(tantivy::query::BoostQuery::new(
            convert(inner, f)?,
            *boost as f32,
        )),
        UserInputAst::Leaf(leaf) => {
            match leaf.as_ref() {
                UserInputLeaf::Literal(lit) => {
                    if lit.field_name.is_some() {
                        return Err(SearchError::BadQuery(
                        "field names are not supported; use the filters (role, project_id, archived, since, until)".into(),
                    ));
                    }
                    let (mut phrase, mut prefix) = (lit.phrase.clone(), lit.prefix);
                    if lit.delimiter == Delimiter::None {
                        if let Some(stem) = phrase.strip_suffix('*') {
                            phrase = stem.to_string();
                            prefix = true;
                        }
                    }
                    literal(&phrase, prefix, lit.slop, f)
                }
                UserInputLeaf::All => Box::new(AllQuery),
                _ => return Err(SearchError::BadQuery(
                    "ranges, sets and field queries are not supported in the text; use the filters"
                        .into(),
                )),
            }
        }
    })
}

/// One word or phrase, analyzed as the index was.
fn literal(text: &str, prefix: bool, slop: u32, f: &Fields) -> Box<dyn Query> {
    let mut analyzer = tokenizer::analyzer();
    let mut stream = analyzer.token_stream(text);
    let mut terms: Vec<(usize, Term)> = Vec::new();
    while stream.advance() {
        let t = stream.token();
        terms.push((t.position, Term::from_field_text(f.text, &t.text)));
    }
    // Positions relative to the first term.
    if let Some(first) = terms.first().map(|(p, _)| *p) {
        for (p, _) in terms.iter_mut() {
            *p -= first;
        }
    }
    match (terms.len(), prefix) {
        (0, _) => Box::new(EmptyQuery),
        (_, true) => Box::new(PhrasePrefixQuery::new_with_offset(terms)),
        (1, false) => Box::new(TermQuery::new(
            terms.remove(0).1,
            IndexRecordOption::WithFreqs,
        )),
        (_, false) => Box::new(PhraseQuery::new_with_offset_and_slop(terms, slop)),
    }
}

/// The text query with the filters: of `role`, within `since..until` (the
/// sessions allowed by the project and archived filters are kept by the
/// collector, `only::OnlySessions`).
pub fn filtered(
    text: Box<dyn Query>,
    f: &Fields,
    role: Option<&str>,
    since: Option<f64>,
    until: Option<f64>,
) -> Box<dyn Query> {
    // Only messages and titles have text: the tips documents never match.
    let mut parts: Vec<(Occur, Box<dyn Query>)> = vec![(Occur::Must, text)];
    if let Some(role) = role {
        parts.push((Occur::Must, super::index::role_is(f, role)));
    }
    if since.is_some() || until.is_some() {
        // Titles have no time: a range leaves them out.
        let lower = since.map_or(Bound::Unbounded, |s| {
            Bound::Included(Term::from_field_f64(f.created_at, s))
        });
        let upper = until.map_or(Bound::Unbounded, |u| {
            Bound::Included(Term::from_field_f64(f.created_at, u))
        });
        parts.push((Occur::Must, Box::new(RangeQuery::new(lower, upper))));
    }
    Box::new(BooleanQuery::new(parts))
}
