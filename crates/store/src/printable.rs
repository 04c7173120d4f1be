//! Text from a peer or a file on its way to a terminal: control characters (escapes,
//! newlines, carriage returns) and bidirectional overrides are shown escaped (`\u{1b}`,
//! `\n`), so that an agent's host name or a stored error kind cannot rewrite or recolour
//! what the user sees. Everything else is kept as it is.

use std::borrow::Cow;

/// `s` with every character that could act on a terminal escaped.
pub fn printable(s: &str) -> Cow<'_, str> {
    if !s.chars().any(crate::check::unprintable) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if crate::check::unprintable(c) => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::printable;

    #[test]
    fn a_peer_string_never_reaches_a_terminal_with_its_escapes() {
        assert_eq!(printable("fake\n\x1b[31mred"), "fake\\n\\u{1b}[31mred");
        assert_eq!(printable("a\r\u{202e}b\u{9b}"), "a\\r\\u{202e}b\\u{9b}");
        assert_eq!(printable("plain host-1 ümlaut"), "plain host-1 ümlaut");
    }
}
