//! The `?NAME=VALUE&...` options of a target URL, read the same way for every engine:
//! each a NAME=VALUE pair, each name at most once, numbers refused (never clamped) out of
//! range. Errors are the message alone; each target wraps it in its own error type, which
//! adds the form it expects.

use crate::nfs::clip;

/// The options in the order given. Empty pieces (`a=1&&b=2`, a trailing `&`) are skipped.
pub fn options(query: &str) -> Result<Vec<(&str, &str)>, String> {
    let mut out: Vec<(&str, &str)> = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').ok_or_else(|| format!("{:?}: expected NAME=VALUE", clip(pair)))?;
        if out.iter().any(|(seen, _)| *seen == k) {
            return Err(format!("{:?} is given twice", clip(k)));
        }
        out.push((k, v));
    }
    Ok(out)
}

/// The whole number of option `name` from `min` to `max`.
pub fn number(name: &str, v: &str, min: u64, max: u64) -> Result<u64, String> {
    v.parse::<u64>()
        .ok()
        .filter(|n| (min..=max).contains(n))
        .ok_or_else(|| format!("{name}={:?}: expected a number from {min} to {max}", clip(v)))
}

/// A `timeout=` value: whole seconds from 1 to 3600.
pub fn timeout(v: &str) -> Result<std::time::Duration, String> {
    number("timeout", v, 1, 3600).map(std::time::Duration::from_secs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_are_pairs_given_once_and_numbers_stay_in_range() {
        assert_eq!(options("a=1&&b=x&"), Ok(vec![("a", "1"), ("b", "x")]));
        assert_eq!(options(""), Ok(vec![]));
        assert_eq!(options("a=1&a=2"), Err("\"a\" is given twice".to_string()));
        assert_eq!(options("a"), Err("\"a\": expected NAME=VALUE".to_string()));
        assert_eq!(timeout("30"), Ok(std::time::Duration::from_secs(30)));
        assert_eq!(timeout("0"), Err("timeout=\"0\": expected a number from 1 to 3600".to_string()));
        assert_eq!(
            number("uid", "4294967296", 0, u32::MAX as u64).unwrap_err(),
            "uid=\"4294967296\": expected a number from 0 to 4294967295"
        );
    }
}
