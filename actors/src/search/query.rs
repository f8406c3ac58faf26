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

/// The deepest nesting a query may have: parentheses inside each other,
/// plus operators (`NOT`, `+`, `-`) applied to each other. tantivy's
/// grammar parses them by recursion, so an unbounded depth overflows the
/// stack of the thread that parses (1,000 `(` aborted the process).
pub const MAX_DEPTH: usize = 32;
/// The longest query accepted, in bytes.
pub const MAX_LEN: usize = 4096;

/// Refuse a query tantivy's grammar would recurse into too deeply.
fn check_depth(q: &str) -> Result<(), SearchError> {
    if q.len() > MAX_LEN {
        return Err(SearchError::BadQuery(format!(
            "the query is longer than {MAX_LEN} bytes"
        )));
    }
    let (mut depth, mut deepest, mut unary, mut quoted) = (0usize, 0usize, 0usize, false);
    let mut word = String::new();
    // What each open parenthesis added to the depth.
    let mut opened: Vec<usize> = Vec::new();
    // A word ends at a blank or a parenthesis; `NOT` and leading `+`/`-`
    // nest what follows them.
    let end_word = |word: &mut String, depth: usize, unary: &mut usize| -> usize {
        let ops = word.chars().take_while(|c| *c == '+' || *c == '-').count();
        let level = depth + *unary + ops;
        if word == "NOT" || ops == word.chars().count() {
            *unary += if word == "NOT" { 1 } else { ops };
        } else {
            *unary = 0;
        }
        word.clear();
        level
    };
    for c in q.chars() {
        if quoted {
            quoted = c != '"';
            continue;
        }
        match c {
            '"' => {
                deepest = deepest.max(end_word(&mut word, depth, &mut unary));
                quoted = true;
                unary = 0;
            }
            '(' => {
                deepest = deepest.max(end_word(&mut word, depth, &mut unary));
                opened.push(1 + unary);
                depth += 1 + unary;
                unary = 0;
            }
            ')' => {
                deepest = deepest.max(end_word(&mut word, depth, &mut unary));
                depth = depth.saturating_sub(opened.pop().unwrap_or(0));
            }
            c if c.is_whitespace() => {
                deepest = deepest.max(end_word(&mut word, depth, &mut unary));
            }
            c => word.push(c),
        }
        deepest = deepest.max(depth + unary);
    }
    deepest = deepest.max(end_word(&mut word, depth, &mut unary));
    if deepest > MAX_DEPTH {
        return Err(SearchError::BadQuery(format!(
            "the query nests deeper than {MAX_DEPTH} levels (parentheses and NOT, +, - operators)"
        )));
    }
    Ok(())
}

/// Parse `q` into a query on the text field.
pub fn parse(q: &str, f: &Fields) -> Result<Box<dyn Query>, SearchError> {
    if q.trim().is_empty() {
        return Err(SearchError::BadQuery("the query is empty".into()));
    }
    check_depth(q)?;
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

#[cfg(test)]
mod tests {
    use super::*;

    fn fields() -> Fields {
        super::super::index::schema().1
    }

    /// Queries of every shape up to the limit parse on a thread with a
    /// small stack (a quarter of a tokio blocking thread's); deeper ones
    /// are refused before tantivy's grammar sees them.
    #[test]
    fn deep_queries_are_refused_and_none_overflows_a_small_stack() {
        let run = std::thread::Builder::new()
            .stack_size(512 * 1024)
            .spawn(|| {
                let f = fields();
                let shapes: Vec<Box<dyn Fn(usize) -> String>> = vec![
                    Box::new(|n| format!("{}a{}", "(".repeat(n), ")".repeat(n))),
                    Box::new(|n| format!("{}a", "NOT ".repeat(n))),
                    Box::new(|n| format!("{}a", "-".repeat(n))),
                    Box::new(|n| format!("{}a", "+".repeat(n))),
                    Box::new(|n| format!("{}a", "- ".repeat(n))),
                    Box::new(|n| format!("{}a{}", "NOT (".repeat(n), ")".repeat(n))),
                    Box::new(|n| format!("{}a{}", "-(".repeat(n), ")".repeat(n))),
                    Box::new(|n| format!("{}a", "(".repeat(n))),
                    Box::new(|n| format!("{}a{}", "(b OR ".repeat(n), ")".repeat(n))),
                ];
                for (i, shape) in shapes.iter().enumerate() {
                    // "NOT (" and "-(" nest two levels at a time.
                    let per = if i == 5 || i == 6 { 2 } else { 1 };
                    for n in [1, MAX_DEPTH / 2 / per, MAX_DEPTH / per - 1] {
                        let q = shape(n);
                        if let Err(SearchError::BadQuery(e)) = parse(&q, &f) {
                            assert!(!e.contains("nests deeper"), "shape {i} at {n}: {e}");
                        }
                    }
                    for n in [MAX_DEPTH + 1, 1000, 5000] {
                        let q = shape(n);
                        match parse(&q, &f) {
                            Err(SearchError::BadQuery(_)) => {}
                            Err(e) => panic!("shape {i} at {n}: {e}"),
                            Ok(_) => panic!("shape {i} at {n} accepted"),
                        }
                    }
                }
                // Long flat queries are not deep.
                let flat = "NOT (a) b ".repeat(200);
                assert!(parse(&flat, &f).is_ok());
                let words = "word ".repeat(800);
                assert!(parse(&words, &f).is_ok());
            })
            .unwrap();
        run.join().unwrap();
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(400))]
        /// Any text of the grammar's characters, repeated up to thousands
        /// of levels, parses or is refused: never a panic, never a stack
        /// overflow on a small stack.
        #[test]
        fn no_query_brings_the_parser_down(
            unit in "[()\"NOT ANDOR+*a-z~^:-]{1,12}",
            times in 1usize..3000,
            tail in "[()\"a-z ]{0,20}",
        ) {
            let q = format!("{}{tail}", unit.repeat(times));
            let outcome = std::thread::Builder::new()
                .stack_size(512 * 1024)
                .spawn(move || parse(&q, &fields()).map(|_| ()).map_err(|e| e.to_string()))
                .unwrap()
                .join();
            proptest::prop_assert!(outcome.is_ok(), "the parser panicked");
        }
    }
}
