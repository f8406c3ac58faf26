//! Title text: the phase-1 title cut from the first user message, and the
//! clean-up of what an LLM answers.

/// Phase 1: attachment markers removed, first line, at most 50 characters
/// (plus "…" when cut).
pub fn title_from_text(text: &str) -> String {
    let cleaned = strip_attachments(text);
    let line = cleaned
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
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
    while let Some(start) = rest.find(open) {
        out.push_str(&rest[..start]);
        match rest[start..].find(close) {
            Some(end) => rest = &rest[start + end + close.len()..],
            None => {
                rest = "";
                break;
            }
        }
    }
    out.push_str(rest);
    out
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
        if t.len() >= 6 && t[..6].eq_ignore_ascii_case("title:") {
            t = t[6..].trim();
        }
    }
    let t: String = t.chars().take(80).collect();
    let t = t.trim().to_string();
    (!t.is_empty()).then_some(t)
}

#[cfg(test)]
mod tests {
    use super::*;

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
