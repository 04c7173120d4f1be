//! Each key's default as the key table declares it ([`keys::KeyDefault`]), typed for the
//! rules: the one place a default is written is its entry in [`keys::KEYS`].

use super::*;
use crate::keys::KeyDefault;

/// The declared default of `key`, named as the walker names it (`threads`, `dataset.files`).
fn declared(key: &str) -> KeyDefault {
    table_key(key).map_or(KeyDefault::None, |k| k.default)
}

/// The declared number (a count, bytes or seconds) of `key`. (The key table's tests check
/// that every default is of its key's type; 0 would only follow a bug there.)
pub(super) fn number(key: &str) -> u64 {
    let n = declared(key).number();
    debug_assert!(n.is_some(), "`{key}` declares no number as its default");
    n.unwrap_or(0)
}

/// The declared default of a duration key, in whole seconds.
pub(super) fn secs(key: &str) -> Duration {
    Duration::from_secs(number(key))
}

/// The declared default of a switch.
pub(super) fn boolean(key: &str) -> bool {
    let d = declared(key);
    debug_assert!(matches!(d, KeyDefault::Bool(_)), "`{key}` declares no boolean as its default");
    d == KeyDefault::Bool(true)
}

/// The declared default of a key with fixed names, among `choices`.
pub(super) fn choice<T: Copy>(key: &str, choices: &[(&str, T)]) -> T {
    let word = declared(key).word();
    let found = choices.iter().find(|(name, _)| Some(*name) == word);
    debug_assert!(found.is_some(), "`{key}` declares no name of its choices as its default");
    found.or(choices.first()).map(|(_, v)| *v).expect("a key with choices has at least one")
}

/// The declared default of a block-size key: one size.
pub(super) fn block_size(key: &str) -> Vec<BsEntry> {
    vec![BsEntry { bs: BlockSize { bytes: number(key), weight: 1 }, loc: Loc::Default }]
}

/// The declared default of `max_errors`.
pub(super) fn max_errors() -> MaxErrors {
    let parsed = declared("max_errors").word().and_then(|w| MaxErrors::parse(w).ok());
    debug_assert!(parsed.is_some(), "`max_errors` declares no limit as its default");
    parsed.unwrap_or_default()
}
