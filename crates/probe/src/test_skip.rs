//! A test that cannot run here (not root, a tool missing) says why instead of passing in
//! silence; `IOSCOPE_TEST_REQUIRE_ALL=1` (scripts/test.sh, CI) turns the skip into a failure.

/// Reports that the calling test cannot run here, for `why`; panics instead under
/// IOSCOPE_TEST_REQUIRE_ALL=1. The caller returns after it.
#[track_caller]
pub fn skip(why: &str) {
    if std::env::var("IOSCOPE_TEST_REQUIRE_ALL").is_ok_and(|v| v == "1") {
        panic!("this test cannot run here ({why}), and IOSCOPE_TEST_REQUIRE_ALL=1 requires every test to run");
    }
    eprintln!("skipped: {why} (set IOSCOPE_TEST_REQUIRE_ALL=1 to make this a failure)");
}
