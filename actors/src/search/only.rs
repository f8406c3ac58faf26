//! A collector that passes on only the documents of some sessions, read
//! from the `session` column. Messages carry no session term (its postings
//! would cost about a byte a message), so the project and archived filters
//! are applied here, on the documents the text query matched.

use std::collections::HashSet;

use tantivy::collector::{Collector, SegmentCollector};
use tantivy::columnar::Column;
use tantivy::{DocId, Score, SegmentOrdinal, SegmentReader};

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
                for id in allowed {
                    if let Some(o) = col.dictionary().term_ord(id.as_bytes())? {
                        ords.insert(o);
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
