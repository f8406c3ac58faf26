//! Title text: the phase-1 title cut from the first user message, and the
//! clean-up of what an LLM answers.

/// Phase 1: attachment markers removed, first line, at most 50 characters
/// (plus "…" when cut).
pub fn title_from_text(text: &str) -> String {
    let cleaned = strip_attachments(text);
    let line = cleaned
        .lines()
        .filter(|l| !l.trim_start().starts_with("```"))
        .map(strip_markdown)
        .find(|l| !l.is_empty())
        .unwrap_or_default();
    let line = line.as_str();
    if line.chars().count() > 50 {
        format!("{}…", line.chars().take(50).collect::<String>())
    } else {
        line.to_string()
    }
}

/// Remove `[attachment:…]`, `<attachment-preview…>…</attachment-preview>`
/// and `<file …>…</file>` markers.
pub fn strip_attachments(text: &str) -> String {
    let mut s = remove_blocks(text, "<attachment-preview", "</attachment-preview>");
    s = remove_blocks(&s, "<file", "</file>");
    remove_blocks(&s, "[attachment:", "]")
}

fn remove_blocks(text: &str, open: &str, close: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some((before, after_open)) = rest.split_once(open) {
        out.push_str(before);
        match after_open.split_once(close) {
            Some((_, after)) => rest = after,
            None => {
                rest = "";
                break;
            }
        }
    }
    out.push_str(rest);
    out
}

/// `t` without a leading `prefix`, compared ASCII-case-insensitively and
/// character by character (never a byte slice that could split one).
fn strip_prefix_ignore_case<'a>(t: &'a str, prefix: &str) -> Option<&'a str> {
    let mut chars = t.char_indices();
    for want in prefix.chars() {
        let (_, got) = chars.next()?;
        if !got.eq_ignore_ascii_case(&want) {
            return None;
        }
    }
    Some(chars.as_str())
}

/// Phase 2 post-processing: drop `<think>…</think>`, take the first
/// non-empty line, strip quotes and a `Title:` prefix, cut to 80
/// characters. `None` when nothing is left (a failure).
pub fn clean_llm_title(raw: &str) -> Option<String> {
    let no_think = remove_blocks(raw, "<think>", "</think>");
    let line = no_think.lines().map(str::trim).find(|l| !l.is_empty())?;
    let mut t = line.trim();
    for _ in 0..2 {
        t = t
            .trim_matches(|c| matches!(c, '"' | '\'' | '“' | '”' | '‘' | '’' | '`' | '*'))
            .trim();
        if let Some(rest) = strip_prefix_ignore_case(t, "title:") {
            t = rest.trim();
        }
    }
    let t = strip_markdown(t);
    let t: String = t.chars().take(80).collect();
    let t = t.trim().to_string();
    (!t.is_empty()).then_some(t)
}

/// One line of Markdown as plain text, for a title: heading, quote and
/// list markers go, links and images keep their text, emphasis, strike
/// and code marks go (`_word_` loses its marks; an underscore inside a
/// name stays).
pub fn strip_markdown(line: &str) -> String {
    let mut t = line.trim();
    loop {
        let before = t;
        t = t.trim_start_matches('#').trim_start();
        for marker in ["> ", "- ", "* ", "+ "] {
            if let Some(rest) = t.strip_prefix(marker) {
                t = rest.trim_start();
            }
        }
        let after_digits = t.trim_start_matches(|c: char| c.is_ascii_digit());
        if after_digits.len() < t.len() {
            if let Some(rest) = after_digits.strip_prefix(". ") {
                t = rest.trim_start();
            }
        }
        if t == before {
            break;
        }
    }
    // [text](url) and ![alt](url): the text.
    let mut out = String::with_capacity(t.len());
    let mut rest = t;
    while let Some((before, after_open)) = rest.split_once('[') {
        let Some((text, after_text)) = after_open.split_once("](") else {
            break;
        };
        let Some((_url, after)) = after_text.split_once(')') else {
            break;
        };
        if text.contains('[') {
            // The link starts at a later bracket: this one is text.
            out.push_str(before);
            out.push('[');
            rest = after_open;
            continue;
        }
        out.push_str(before.strip_suffix('!').unwrap_or(before));
        out.push_str(text);
        rest = after;
    }
    out.push_str(rest);
    let out = out
        .replace("**", "")
        .replace("__", "")
        .replace("~~", "")
        .replace(['`', '*'], "");
    // `_emphasis_` around a word goes; an underscore inside a name stays.
    out.split_whitespace()
        .map(|w| {
            let end = w.trim_end_matches(|c: char| ".,;:!?)".contains(c));
            match end.strip_prefix('_').and_then(|x| x.strip_suffix('_')) {
                Some(inner) if !inner.is_empty() && !inner.contains('_') => {
                    format!("{inner}{}", w.get(end.len()..).unwrap_or(""))
                }
                _ => w.to_string(),
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn non_ascii_replies_of_every_length_never_panic() {
        // Every prefix of replies mixing 1- to 4-byte characters, with and
        // without a "Title:" prefix, quotes and <think> blocks.
        let samples = [
            "Rust中文标题",
            "标题：关于会话的摘要",
            "Título: Café con leche",
            "\"🦀 Крабы и ржавчина\"",
            "<think>思考…</think>Ärger mit Ümlauten",
            "TITLE:日本語のタイトル",
            "Ti",
            "é",
        ];
        for s in samples {
            let chars: Vec<char> = s.chars().collect();
            for n in 0..=chars.len() {
                let prefix: String = chars.iter().take(n).collect();
                let _ = clean_llm_title(&prefix);
                let _ = title_from_text(&prefix);
                let _ = strip_attachments(&prefix);
            }
        }
        assert_eq!(
            clean_llm_title("Rust中文标题").as_deref(),
            Some("Rust中文标题")
        );
        assert_eq!(
            clean_llm_title("Title: 日本語のタイトル").as_deref(),
            Some("日本語のタイトル")
        );
        assert_eq!(clean_llm_title("TITLE:é").as_deref(), Some("é"));
        assert_eq!(clean_llm_title("Titlé: x").as_deref(), Some("Titlé: x"));
        let long: String = "标".repeat(100);
        assert_eq!(clean_llm_title(&long).map(|t| t.chars().count()), Some(80));
    }

    #[test]
    fn titles_are_plain_text_not_markdown() {
        assert_eq!(title_from_text("## **Fix** the `parser`"), "Fix the parser");
        assert_eq!(
            title_from_text("```rust\nfn main() {}\n```"),
            "fn main() {}"
        );
        assert_eq!(
            title_from_text("- see [the docs](https://x.y/z) and ![a cat](c.png)"),
            "see the docs and a cat"
        );
        assert_eq!(title_from_text("> 1. ~~old~~ new_name"), "old new_name");
        assert_eq!(
            clean_llm_title("**Title:** _Parser_ *bug*").as_deref(),
            Some("Parser bug")
        );
        // Unbalanced brackets and every prefix: no panic, text kept.
        let s: Vec<char> = "[a](b [c] d](e ![f é]".chars().collect();
        for n in 0..=s.len() {
            let prefix: String = s.iter().take(n).collect();
            let _ = strip_markdown(&prefix);
        }
        assert_eq!(strip_markdown("a [b c"), "a [b c");
        assert_eq!(
            strip_markdown("Some **bold** and _soft_ words, _too_. snake_case _x_y_"),
            "Some bold and soft words, too. snake_case _x_y_"
        );
    }

    #[test]
    fn phase_one_titles() {
        assert_eq!(title_from_text("  \nFix the bug\nmore"), "Fix the bug");
        let long = "a".repeat(60);
        assert_eq!(title_from_text(&long), format!("{}…", "a".repeat(50)));
        assert_eq!(
            title_from_text("[attachment:x.png] Look at this"),
            "Look at this"
        );
        assert_eq!(
            title_from_text(
                "<attachment-preview name=\"a\">BIG\nDATA</attachment-preview>What is it?"
            ),
            "What is it?"
        );
        assert_eq!(
            title_from_text("<file path=\"a.rs\">fn x(){}</file>\nReview it"),
            "Review it"
        );
    }

    #[test]
    fn llm_titles_are_cleaned() {
        assert_eq!(clean_llm_title("Title: \"Foo\""), Some("Foo".into()));
        assert_eq!(
            clean_llm_title("<think>hmm\nlong</think>\n\n  'Parser Bug Fix'  \nextra"),
            Some("Parser Bug Fix".into())
        );
        assert_eq!(
            clean_llm_title("\"Title: Weekend plans\""),
            Some("Weekend plans".into())
        );
        assert_eq!(
            clean_llm_title(&"x".repeat(100)).unwrap().chars().count(),
            80
        );
        assert_eq!(clean_llm_title("<think>only thoughts</think>"), None);
        assert_eq!(clean_llm_title("\"\""), None);
    }
}
