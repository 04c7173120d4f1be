//! The few values ioscope reads from S3's XML replies (an error's code, a multipart
//! upload's id, a listing's keys), found by tag in a bounded body. Replies come from the
//! network: nothing here can panic on what they hold.

/// The text of every `<tag>…</tag>` in `xml`, in order, with XML's five escapes undone.
pub fn all<'a>(xml: &'a str, tag: &'a str) -> impl Iterator<Item = String> + 'a {
    let (open, close) = (format!("<{tag}>"), format!("</{tag}>"));
    let mut rest = xml;
    std::iter::from_fn(move || {
        let start = rest.find(&open)? + open.len();
        let len = rest.get(start..)?.find(&close)?;
        let text = rest.get(start..start + len)?;
        rest = rest.get(start + len + close.len()..).unwrap_or("");
        Some(unescape(text))
    })
}

/// The text of the first `<tag>…</tag>`.
pub fn first(xml: &str, tag: &str) -> Option<String> {
    all(xml, tag).next()
}

fn unescape(s: &str) -> String {
    if !s.contains('&') {
        return s.to_string();
    }
    s.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", "\"").replace("&apos;", "'").replace("&amp;", "&")
}

/// `s` with XML's special characters escaped (keys in a request body).
pub fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_are_found_and_unescaped_and_broken_input_gives_nothing() {
        let x = "<Error><Code>NoSuchKey</Code><Key>a&amp;b</Key></Error>";
        assert_eq!(first(x, "Code").as_deref(), Some("NoSuchKey"));
        assert_eq!(first(x, "Key").as_deref(), Some("a&b"));
        let l = "<Contents><Key>p/1</Key><Size>5</Size></Contents><Contents><Key>p/2</Key><Size>7</Size></Contents>";
        assert_eq!(all(l, "Key").collect::<Vec<_>>(), ["p/1", "p/2"]);
        assert_eq!(first("<Code>unclosed", "Code"), None);
        assert_eq!(first("", "Code"), None);
        assert_eq!(first("<Code>é</Code>", "Code").as_deref(), Some("é"));
        assert_eq!(escape("a&<b>"), "a&amp;&lt;b&gt;");
    }

    #[test]
    fn any_mix_of_tags_and_text_is_read_without_a_panic() {
        let pieces = ["<Code>", "</Code>", "<Key>", "</Key>", "&amp;", "&", "é", "<", ">", "x", ""];
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..20_000 {
            let mut text = String::new();
            for _ in 0..(state % 12) {
                state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                text.push_str(pieces[(state >> 33) as usize % pieces.len()]);
            }
            let codes: Vec<String> = all(&text, "Code").collect();
            assert!(codes.iter().all(|c| !c.contains("</Code>")), "{text:?}");
            let _ = first(&text, "Key");
        }
    }
}
