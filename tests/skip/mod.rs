//! Tests that cannot run here (not root, a tool missing) say why instead of passing in
//! silence; where every prerequisite is installed (scripts/test.sh, CI) the variable
//! `IOSCOPE_TEST_REQUIRE_ALL=1` turns such a skip into a failure.

/// The variable that makes a skip fail.
#[allow(dead_code)] // not every test file names it
pub const REQUIRE_ALL: &str = "IOSCOPE_TEST_REQUIRE_ALL";

/// Reports that the calling test cannot run here, for `why`; panics instead when
/// [`REQUIRE_ALL`] is set to 1. The caller returns after it.
#[track_caller]
pub fn skip(why: &str) {
    let required = std::env::var(REQUIRE_ALL).is_ok_and(|v| v == "1");
    if required {
        panic!("this test cannot run here ({why}), and {REQUIRE_ALL}=1 requires every test to run");
    }
    eprintln!("skipped: {why} (set {REQUIRE_ALL}=1 to make this a failure)");
}
