//! The text analyzer of the search index: words of letters and digits for
//! alphabetic scripts, overlapping character bigrams for CJK runs (Chinese,
//! Japanese kana, Korean hangul have no spaces between words), then
//! lower-casing and accent folding (tantivy's own filters).
//!
//! Why not a crate: tantivy's `NgramTokenizer` n-grams every script (Latin
//! words too: a larger index, and prefix and phrase queries on words stop
//! meaning what they say), and dictionary segmenters (jieba, lindera) add
//! tens of MB of dictionaries for one language each. Bigrams are what
//! Lucene's CJKAnalyzer does.

use tantivy::tokenizer::{
    AsciiFoldingFilter, LowerCaser, TextAnalyzer, Token, TokenStream, Tokenizer,
};

/// The analyzer's registered name.
pub const NAME: &str = "op_mixed";

pub fn analyzer() -> TextAnalyzer {
    TextAnalyzer::builder(MixedTokenizer::default())
        .filter(LowerCaser)
        .filter(AsciiFoldingFilter)
        .build()
}

/// Han, kana, hangul and their punctuation-free neighbours.
fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF      // hiragana, katakana
        | 0x3400..=0x4DBF    // CJK extension A
        | 0x4E00..=0x9FFF    // CJK unified ideographs
        | 0xF900..=0xFAFF    // compatibility ideographs
        | 0xAC00..=0xD7AF    // hangul syllables
        | 0x1100..=0x11FF    // hangul jamo
        | 0x20000..=0x2FFFF  // extensions B–F
    )
}

#[derive(Clone, Default)]
pub struct MixedTokenizer {
    token: Token,
}

pub struct MixedStream<'a> {
    /// (byte offset, char) of the text.
    chars: Vec<(usize, char)>,
    text_len: usize,
    at: usize,
    /// Inside a CJK run: the next bigram starts at `at`.
    token: &'a mut Token,
}

impl Tokenizer for MixedTokenizer {
    type TokenStream<'a> = MixedStream<'a>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> MixedStream<'a> {
        self.token.reset();
        MixedStream {
            chars: text.char_indices().collect(),
            text_len: text.len(),
            at: 0,
            token: &mut self.token,
        }
    }
}

impl MixedStream<'_> {
    fn offset(&self, i: usize) -> usize {
        self.chars.get(i).map_or(self.text_len, |(o, _)| *o)
    }

    fn emit(&mut self, from: usize, to: usize) {
        self.token.text.clear();
        for (_, c) in &self.chars[from..to] {
            self.token.text.push(*c);
        }
        self.token.offset_from = self.offset(from);
        self.token.offset_to = self.offset(to);
        self.token.position = self.token.position.wrapping_add(1);
    }
}

impl TokenStream for MixedStream<'_> {
    fn advance(&mut self) -> bool {
        while self.at < self.chars.len() {
            let c = self.chars[self.at].1;
            if is_cjk(c) {
                let start = self.at;
                self.at += 1;
                let next_is_cjk = self.chars.get(self.at).is_some_and(|(_, n)| is_cjk(*n));
                let prev_is_cjk = start > 0 && is_cjk(self.chars[start - 1].1);
                if next_is_cjk {
                    self.emit(start, start + 2);
                    return true;
                }
                // A lone ideograph is a word of its own; the last one of a
                // run is already in the previous bigram.
                if !prev_is_cjk {
                    self.emit(start, start + 1);
                    return true;
                }
                continue;
            }
            if c.is_alphanumeric() {
                let start = self.at;
                while self
                    .chars
                    .get(self.at)
                    .is_some_and(|(_, n)| n.is_alphanumeric() && !is_cjk(*n))
                {
                    self.at += 1;
                }
                self.emit(start, self.at);
                return true;
            }
            self.at += 1;
        }
        false
    }

    fn token(&self) -> &Token {
        self.token
    }

    fn token_mut(&mut self) -> &mut Token {
        self.token
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(text: &str) -> Vec<String> {
        let mut a = analyzer();
        let mut s = a.token_stream(text);
        let mut out = Vec::new();
        while s.advance() {
            out.push(s.token().text.clone());
        }
        out
    }

    #[test]
    fn words_fold_and_cjk_runs_become_bigrams() {
        assert_eq!(
            tokens("Crème Brûlée, PARSER-v2!"),
            ["creme", "brulee", "parser", "v2"]
        );
        assert_eq!(
            tokens("我们讨论了解析器"),
            ["我们", "们讨", "讨论", "论了", "了解", "解析", "析器"]
        );
        assert_eq!(tokens("用 Rust 写"), ["用", "rust", "写"]);
        assert_eq!(tokens("東京タワー"), ["東京", "京タ", "タワ", "ワー"]);
        assert_eq!(tokens("한국어 검색"), ["한국", "국어", "검색"]);
        assert!(tokens("").is_empty());
    }
}
