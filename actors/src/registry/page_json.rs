//! A list page as clients see it, `{"total": …, "sessions": [rows]}` (or
//! the bare array of rows, as the WebSocket's `sessions_list` has it),
//! built from each row's kept JSON (`SessionRow::client_json`) and handed
//! out in pieces of a bounded size: a page of every one of 10,000 rows is
//! about 5 MB, and one buffer of it per request (then a copy in the HTTP
//! layer's write buffer) was most of a server's memory right after such
//! listings.

use std::sync::Arc;

/// The bytes of a page: its head, its rows, its tail, read in order.
pub struct PageJson {
    head: Vec<u8>,
    rows: Vec<Arc<[u8]>>,
    tail: &'static [u8],
    /// The next row to hand out; `rows.len()` once the tail is due.
    next: usize,
    done: bool,
    len: usize,
}

impl PageJson {
    /// `{"total": total, "sessions": [rows]}`.
    pub fn new(total: usize, rows: Vec<Arc<[u8]>>) -> PageJson {
        let head = format!("{{\"total\":{total},\"sessions\":[").into_bytes();
        PageJson::framed(head, rows, b"]}")
    }

    /// `[rows]`.
    pub fn array(rows: Vec<Arc<[u8]>>) -> PageJson {
        PageJson::framed(b"[".to_vec(), rows, b"]")
    }

    fn framed(head: Vec<u8>, rows: Vec<Arc<[u8]>>, tail: &'static [u8]) -> PageJson {
        let commas = rows.len().saturating_sub(1);
        let len = head.len() + rows.iter().map(|r| r.len()).sum::<usize>() + commas + tail.len();
        PageJson {
            head,
            rows,
            tail,
            next: 0,
            done: false,
            len,
        }
    }

    /// The length of the whole page.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The next piece: whole rows until at least `size` bytes (a row is
    /// never split), `None` after the tail.
    pub fn next_piece(&mut self, size: usize) -> Option<Vec<u8>> {
        if self.done {
            return None;
        }
        let mut out = Vec::with_capacity(size.min(self.len));
        self.fill(&mut out, size);
        Some(out)
    }

    /// The rest of the page appended to `out` (a frame around it).
    pub fn write_rest(mut self, out: &mut Vec<u8>) {
        out.reserve(self.len);
        self.fill(out, usize::MAX);
    }

    /// The whole page in one buffer.
    pub fn into_bytes(self) -> Vec<u8> {
        let mut out = Vec::new();
        self.write_rest(&mut out);
        out
    }

    /// Append to `out` what is left of the head, then rows until `size`
    /// bytes were appended, then the tail once every row is out.
    fn fill(&mut self, out: &mut Vec<u8>, size: usize) {
        if self.done {
            return;
        }
        let start = out.len();
        out.extend_from_slice(&std::mem::take(&mut self.head));
        while self.next < self.rows.len() && out.len() - start < size {
            if self.next > 0 {
                out.push(b',');
            }
            out.extend_from_slice(&self.rows[self.next]);
            self.next += 1;
        }
        if self.next == self.rows.len() {
            out.extend_from_slice(self.tail);
            self.done = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(n: usize) -> Vec<Arc<[u8]>> {
        (0..n)
            .map(|i| Arc::from(format!("{{\"id\":\"s{i}\"}}").into_bytes()))
            .collect()
    }

    /// Pieces of any size put together are the page in one buffer, and
    /// `len` is its length.
    #[test]
    fn the_pieces_make_the_page() {
        for n in [0, 1, 2, 7, 100] {
            let whole = PageJson::new(n + 3, rows(n)).into_bytes();
            let parsed: serde_json::Value = serde_json::from_slice(&whole).unwrap();
            assert_eq!(parsed["total"], n + 3);
            assert_eq!(parsed["sessions"].as_array().unwrap().len(), n);
            for size in [1, 10, 64, 1 << 16] {
                let mut page = PageJson::new(n + 3, rows(n));
                assert_eq!(page.len(), whole.len());
                let mut joined = Vec::new();
                while let Some(piece) = page.next_piece(size) {
                    assert!(!piece.is_empty());
                    joined.extend(piece);
                }
                assert_eq!(joined, whole, "{n} rows in pieces of {size}");
                assert!(page.next_piece(size).is_none());
            }
            let array = PageJson::array(rows(n)).into_bytes();
            assert_eq!(
                serde_json::from_slice::<serde_json::Value>(&array).unwrap(),
                parsed["sessions"]
            );
        }
    }
}
