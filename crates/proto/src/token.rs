//! The bearer token that every call carries: a secret shared by the coordinator and its
//! agents, given in a file (`--token-file`) or on a line of stdin. The file is read as
//! every path a user gives ([`ioscope_readfile`]): a regular file (a FIFO is refused, never
//! waited on) of at most [`MAX_TOKEN_FILE_BYTES`].

use std::fmt;
use std::path::{Path, PathBuf};

/// Fewer characters than this cannot be a token worth the name.
const MIN_TOKEN_CHARS: usize = 16;

/// The largest token file read: a token is one line (64 hex digits when generated).
pub const MAX_TOKEN_FILE_BYTES: u64 = 4 << 10;

/// A bearer token. Its `Debug` never shows the secret.
#[derive(Clone)]
pub struct Token(String);

#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    #[error("token file {}: {source}", .path.display())]
    Read { path: PathBuf, source: ioscope_readfile::FileError },
    #[error("{origin}: {why} (expected one line of at least {MIN_TOKEN_CHARS} visible ASCII characters, e.g. 64 hex digits)")]
    Invalid { origin: String, why: String },
}

impl Token {
    /// A new token: 32 random bytes from the operating system as 64 hex digits.
    ///
    /// # Panics
    /// When the operating system has no source of randomness (see [`Token::try_generate`]):
    /// a token from anything weaker could be guessed.
    pub fn generate() -> Token {
        match Token::try_generate() {
            Ok(token) => token,
            Err(e) => panic!("no random bytes from the operating system for a token: {e}"),
        }
    }

    /// [`Token::generate`], with the operating system's failure as an error.
    pub fn try_generate() -> Result<Token, getrandom::Error> {
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes)?;
        Ok(Token(bytes.iter().map(|b| format!("{b:02x}")).collect()))
    }

    /// Reads a token file: its one line, without one trailing newline.
    pub fn from_file(path: &Path) -> Result<Token, TokenError> {
        let bytes = ioscope_readfile::read(path, MAX_TOKEN_FILE_BYTES)
            .map_err(|source| TokenError::Read { path: path.to_path_buf(), source })?;
        let origin = || format!("token file {}", path.display());
        // Not text: refused as a character that cannot be in a token, without echoing it.
        let text = String::from_utf8(bytes).map_err(|e| TokenError::Invalid {
            origin: origin(),
            why: format!("is not text (UTF-8) at byte {}", e.utf8_error().valid_up_to()),
        })?;
        check(&text, origin)
    }

    /// A token read from a line (stdin, for one), without one trailing newline.
    pub fn from_line(s: &str) -> Result<Token, TokenError> {
        check(s, || "the token line".to_string())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether `presented` is this token, in time that does not depend on where they differ.
    pub(crate) fn matches(&self, presented: &[u8]) -> bool {
        subtle::ConstantTimeEq::ct_eq(self.0.as_bytes(), presented).into()
    }
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Token(<{} characters, not shown>)", self.0.len())
    }
}

fn check(text: &str, origin: impl Fn() -> String) -> Result<Token, TokenError> {
    let line = text.strip_suffix('\n').map(|l| l.strip_suffix('\r').unwrap_or(l)).unwrap_or(text);
    let invalid = |why: String| TokenError::Invalid { origin: origin(), why };
    if line.is_empty() {
        return Err(invalid("is empty".into()));
    }
    // It travels in an HTTP header: visible ASCII only (no spaces, no second line).
    if let Some((at, c)) = line.char_indices().find(|(_, c)| !c.is_ascii_graphic()) {
        return Err(invalid(format!("has the character {c:?} at byte {at}")));
    }
    if line.len() < MIN_TOKEN_CHARS {
        return Err(invalid(format!("has only {} characters", line.len())));
    }
    Ok(Token(line.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_generated_token_is_64_hex_digits_and_never_the_same_twice() {
        let (a, b) = (Token::generate(), Token::generate());
        assert_eq!(a.as_str().len(), 64);
        assert!(a.as_str().chars().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a.as_str(), b.as_str());
    }

    #[test]
    fn debug_never_shows_the_secret() {
        let token = Token::from_line("s3cret-s3cret-s3cret").unwrap();
        let shown = format!("{token:?}");
        assert!(!shown.contains("s3cret"), "{shown}");
    }

    #[test]
    fn a_token_file_loses_one_trailing_newline_and_short_or_empty_ones_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("token");
        std::fs::write(&path, "0123456789abcdef0123\n").unwrap();
        assert_eq!(Token::from_file(&path).unwrap().as_str(), "0123456789abcdef0123");
        std::fs::write(&path, "0123456789abcdef0123\r\n").unwrap();
        assert_eq!(Token::from_file(&path).unwrap().as_str(), "0123456789abcdef0123");

        for (text, why) in [
            ("", "is empty"),
            ("\n", "is empty"),
            ("short\n", "only 5 characters"),
            ("0123456789abcdef\n\n", "'\\n'"),
            ("0123456789 abcdef", "' '"),
        ] {
            std::fs::write(&path, text).unwrap();
            let err = Token::from_file(&path).unwrap_err().to_string();
            assert!(err.contains(&path.display().to_string()) && err.contains(why), "{text:?}: {err}");
        }
        let missing = dir.path().join("missing");
        let err = Token::from_file(&missing).unwrap_err().to_string();
        assert!(err.starts_with("token file ") && err.contains("missing"), "{err}");
    }

    #[test]
    fn a_token_file_that_is_a_fifo_or_too_large_is_refused_at_once_not_waited_on_or_read_whole() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("token.fifo");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        // Read on a thread: were the FIFO opened for reading, it would wait for a writer
        // forever; the answer must come at once (10 s is a bound on the wait, not a timing).
        let (tx, rx) = std::sync::mpsc::channel();
        let path = fifo.clone();
        std::thread::spawn(move || tx.send(Token::from_file(&path).map_err(|e| e.to_string())));
        let err = rx.recv_timeout(std::time::Duration::from_secs(10)).expect("a FIFO token file is not waited on");
        let err = err.unwrap_err();
        assert!(err.starts_with(&format!("token file {}: not a regular file (a FIFO)", fifo.display())), "{err}");

        let big = dir.path().join("token.big");
        std::fs::write(&big, vec![b'a'; 1 << 20]).unwrap();
        let err = Token::from_file(&big).unwrap_err().to_string();
        assert!(err.contains("token.big") && err.ends_with("the file is larger than 4 KiB"), "{err}");
        let err = Token::from_file(dir.path()).unwrap_err().to_string();
        assert!(err.contains("not a regular file (a directory)"), "{err}");
        std::fs::write(&big, b"0123456789abcdef\xff\n").unwrap();
        let err = Token::from_file(&big).unwrap_err().to_string();
        assert!(err.contains("is not text (UTF-8) at byte 16"), "{err}");
    }

    #[test]
    fn a_token_line_gets_the_same_checks() {
        assert_eq!(Token::from_line("0123456789abcdef\n").unwrap().as_str(), "0123456789abcdef");
        let err = Token::from_line("abc\n").unwrap_err().to_string();
        assert!(err.starts_with("the token line: has only 3 characters"), "{err}");
    }
}
