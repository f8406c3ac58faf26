//! A collector that passes on only the documents of some sessions, read
//! from the `session` column. Messages carry no session term (its postings
//! would cost about a byte a message), so the project and archived filters
//! are applied here, on the documents the text query matched.

use std::collections::HashSet;

use tantivy::collector::{Collector, SegmentCollector};
use tantivy::columnar::Column;
use tantivy::{DocId, Score, SegmentOrdinal, SegmentReader};

/// Up to this many allowed sessions are looked up one by one; more, and the
/// dictionary is read through once.
const LOOKUPS: usize = 64;

pub struct OnlySessions<'a, C> {
    /// `None`: every session.
    pub allowed: Option<&'a HashSet<String>>,
    pub field: &'a str,
    pub inner: C,
}

pub struct OnlySessionsChild<C> {
    /// The allowed sessions' ordinals in this segment's column, and the
    /// column (`None`: no filter).
    filter: Option<(HashSet<u64>, Column<u64>)>,
    inner: C,
}

impl<C: Collector> Collector for OnlySessions<'_, C> {
    type Fruit = C::Fruit;
    type Child = OnlySessionsChild<C::Child>;

    fn for_segment(
        &self,
        segment_local_id: SegmentOrdinal,
        segment: &SegmentReader,
    ) -> tantivy::Result<Self::Child> {
        let inner = self.inner.for_segment(segment_local_id, segment)?;
        let Some(allowed) = self.allowed else {
            return Ok(OnlySessionsChild {
                filter: None,
                inner,
            });
        };
        let (ords, column) = match segment.fast_fields().str(self.field)? {
            Some(col) => {
                let mut ords = HashSet::with_capacity(allowed.len().min(col.num_terms()));
                if allowed.len() <= LOOKUPS {
                    for id in allowed {
                        if let Some(o) = col.dictionary().term_ord(id.as_bytes())? {
                            ords.insert(o);
                        }
                    }
                } else {
                    // Many sessions (e.g. every active one): one pass over
                    // the dictionary beats a lookup (a block decoded) each.
                    let mut terms = col.dictionary().stream()?;
                    while terms.advance() {
                        let allowed_here =
                            std::str::from_utf8(terms.key()).is_ok_and(|id| allowed.contains(id));
                        if allowed_here {
                            ords.insert(terms.term_ord());
                        }
                    }
                }
                (ords, col.ords().clone())
            }
            // No document of this segment has a session: none passes.
            None => (
                HashSet::new(),
                Column::build_empty_column(segment.max_doc()),
            ),
        };
        Ok(OnlySessionsChild {
            filter: Some((ords, column)),
            inner,
        })
    }

    fn requires_scoring(&self) -> bool {
        self.inner.requires_scoring()
    }

    fn merge_fruits(
        &self,
        fruits: Vec<<Self::Child as SegmentCollector>::Fruit>,
    ) -> tantivy::Result<Self::Fruit> {
        self.inner.merge_fruits(fruits)
    }
}

impl<C: SegmentCollector> SegmentCollector for OnlySessionsChild<C> {
    type Fruit = C::Fruit;

    fn collect(&mut self, doc: DocId, score: Score) {
        let pass = match &self.filter {
            None => true,
            Some((ords, column)) => column.first(doc).is_some_and(|o| ords.contains(&o)),
        };
        if pass {
            self.inner.collect(doc, score);
        }
    }

    fn harvest(self) -> Self::Fruit {
        self.inner.harvest()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tantivy::collector::Count;
    use tantivy::query::AllQuery;
    use tantivy::schema::{Schema, TextOptions};
    use tantivy::{doc, Index};

    #[test]
    fn keeps_only_the_allowed_sessions_whether_few_or_many() {
        let mut b = Schema::builder();
        let session = b.add_text_field("session", TextOptions::default().set_fast(None));
        let index = Index::create_in_ram(b.build());
        let mut w: tantivy::IndexWriter = index.writer(15_000_000).unwrap();
        for i in 0..100 {
            for _ in 0..3 {
                w.add_document(doc!(session => format!("s{i:03}"))).unwrap();
            }
        }
        w.commit().unwrap();
        let searcher = index.reader().unwrap().searcher();
        let count = |allowed: Option<&HashSet<String>>| {
            searcher
                .search(
                    &AllQuery,
                    &OnlySessions {
                        allowed,
                        field: "session",
                        inner: Count,
                    },
                )
                .unwrap()
        };
        assert_eq!(count(None), 300);
        // Few: looked up one by one (an unknown id matches nothing).
        let few: HashSet<String> = ["s001", "s050", "nope"].map(String::from).into();
        assert_eq!(count(Some(&few)), 6);
        // Many: one pass over the dictionary.
        let many: HashSet<String> = (0..70).map(|i| format!("s{:03}", i * 2)).collect();
        assert!(many.len() > LOOKUPS);
        assert_eq!(count(Some(&many)), 50 * 3);
        assert_eq!(count(Some(&HashSet::new())), 0);
    }
}
