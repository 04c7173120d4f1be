//! What a client can put in a request, as property tests (docs/robustness.md): query
//! strings and their percent-decoding, the series and heat-map parameters, and whole API
//! requests (path and query) answered in process over a real results file. Every request
//! gets a JSON answer: 200, or 400/404 with an error that says what was wrong; nothing
//! panics. `tests/api_fuzz.rs` sends such requests to a live server.

use crate::api::{encode_component, parse_query, Api};
use crate::query::{Query, QueryError, MAX_FILTER_TERMS};
use crate::tests::write_results;
use ioscope_metrics::stat::{all as all_stats, Dim};
use ioscope_props::proptest::prelude::*;
use ioscope_props::proptest::sample::select;

/// `s` percent-decoded as a URL query component is (`+` is a space, `%` and two hex
/// digits a byte, anything else itself), written plainly so the property can compare.
fn reference_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        match (b[i], b.get(i + 1).copied().and_then(hex), b.get(i + 2).copied().and_then(hex)) {
            (b'%', Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            (b'+', _, _) => {
                out.push(b' ');
                i += 1;
            }
            (c, _, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Query-string text: percent escapes good and bad, separators, odd characters.
fn query_text() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        select(vec![
            "%", "%2", "%20", "%3A", "%3a", "%zz", "%+1", "%-1", "% 1", "%%41", "+", "=", "&", ";", ":", "é", "%C3%A9",
            "%FF", "%00"
        ])
        .prop_map(String::from),
        "[a-z0-9_.]{0,6}".prop_map(String::from),
        "\\PC{0,4}".prop_map(String::from),
    ];
    prop::collection::vec(piece, 0..12).prop_map(|p| p.concat())
}

#[test]
fn query_strings_decode_as_urls_do() {
    let strategy = (query_text(), prop::collection::vec(("\\PC{1,8}", "\\PC{0,8}"), 0..4));
    ioscope_props::check("web: query string decoding", 3000, strategy, |(text, pairs)| {
        // Any text: each value decoded exactly as a URL's.
        let got = parse_query(&format!("k={}", text.replace('&', "%26")));
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].1, reference_decode(&text.replace('&', "%26")), "decoding {text:?}");
        // What the UI encodes reads back as it was.
        let query: Vec<String> =
            pairs.iter().map(|(k, v)| format!("{}={}", encode_component(k), encode_component(v))).collect();
        assert_eq!(parse_query(&query.join("&")), pairs);
    });
}

/// Found by `query_strings_decode_as_urls_do`: `%+1` and `%-0` were read as escapes (a
/// hex number may start with a sign in Rust's parser), giving bytes no client sent.
#[test]
fn a_percent_sign_without_two_hex_digits_stays_as_it_is() {
    for text in ["%+1", "%-0", "%+f", "%zz", "%4", "%", "%%41"] {
        assert_eq!(parse_query(&format!("where={text}"))[0].1, reference_decode(text), "{text}");
    }
    assert_eq!(parse_query("where=%+1")[0].1, "% 1", "the + is a space, the % itself");
    assert_eq!(parse_query("where=%-0")[0].1, "%-0");
    assert_eq!(parse_query("where=%41%3a%3A")[0].1, "A::");
}

/// Numbers at and past the boundaries of a second, as text.
const NUMBERS: &[&str] = &[
    "0",
    "1",
    "2",
    "3",
    "4",
    "5",
    "4294967295",
    "4294967296",
    "18446744073709551616",
    "-1",
    "-0",
    "+1",
    "007",
    " 1",
    "1 ",
    "1.0",
    "1e3",
    "0x10",
    "",
    "١",
    "NaN",
];

fn stat_name() -> impl Strategy<Value = String> {
    let names: Vec<String> = all_stats().map(|s| s.name.to_string()).collect();
    prop_oneof![4 => select(names), 1 => "\\PC{0,10}"]
}

fn dim_name() -> impl Strategy<Value = String> {
    let names: Vec<String> = Dim::ALL.iter().map(|d| d.name().to_string()).collect();
    prop_oneof![4 => select(names), 1 => "\\PC{0,8}"]
}

/// `where` values: terms of known and unknown dimensions, empty and odd parts.
fn filter_text() -> impl Strategy<Value = String> {
    let value = prop_oneof![
        select(vec!["a", "b", "read", "write", "f1", "(other)", "0", "", "w", "EROFS"]).prop_map(String::from),
        "\\PC{0,6}".prop_map(String::from),
    ];
    let term = prop_oneof![
        6 => (dim_name(), value).prop_map(|(d, v)| format!("{d}:{v}")),
        1 => "\\PC{0,6}",
        1 => Just(String::new()),
    ];
    prop::collection::vec(term, 0..6).prop_map(|t| t.join(";"))
}

/// (key, value) parameters of a series or heat-map query.
fn params() -> impl Strategy<Value = Vec<(String, String)>> {
    let number = || prop_oneof![select(NUMBERS).prop_map(String::from), any::<u32>().prop_map(|n| n.to_string())];
    let param = prop_oneof![
        3 => stat_name().prop_map(|v| ("stat".to_string(), v)),
        2 => dim_name().prop_map(|v| ("by".to_string(), v)),
        2 => filter_text().prop_map(|v| ("where".to_string(), v)),
        2 => number().prop_map(|v| ("from".to_string(), v)),
        2 => number().prop_map(|v| ("to".to_string(), v)),
        1 => number().prop_map(|v| ("column_seconds".to_string(), v)),
        1 => select(vec!["json", "packed", "", "JSON", "gzip"]).prop_map(|v| ("encoding".to_string(), v.to_string())),
        1 => select(vec!["0", "1", "2", "x", ""]).prop_map(|v| ("with".to_string(), v.to_string())),
        1 => ("\\PC{0,6}", "\\PC{0,6}"),
    ];
    prop::collection::vec(param, 0..7)
}

/// A refusal names what was wrong: the parameter, or the value with what was expected.
fn assert_clear(message: &str) {
    let named = ["expected", "cannot", "missing parameter", "at most", "no such path", "no run", "needs", "are for"];
    assert!(named.iter().any(|w| message.contains(w)), "an unclear refusal: {message:?}");
}

#[test]
fn series_parameters_give_a_query_or_a_clear_error() {
    ioscope_props::check("web: series parameters", 3000, params(), |params| {
        match Query::parse(params.iter().map(|(k, v)| (k.as_str(), v.as_str()))) {
            Ok(q) => {
                assert!(q.filter.len() <= MAX_FILTER_TERMS);
                // The last of a key counts, an empty value as none.
                let last =
                    |k: &str| params.iter().rev().find(|(key, _)| key == k).map(|(_, v)| v).filter(|v| !v.is_empty());
                assert_eq!(q.from, last("from").map(|v| v.parse::<u32>().unwrap()));
                assert_eq!(q.to, last("to").map(|v| v.parse::<u32>().unwrap()));
                assert_eq!(q.stat.name, last("stat").unwrap());
            }
            Err(e) => {
                assert_clear(&e.to_string());
                if let QueryError::NotASecond { key, value } = &e {
                    assert!(e.to_string().starts_with(&format!("{key}=")) && !value.is_empty());
                }
            }
        }
    });
}

/// Path segments of API requests: the real ones and odd ones.
fn path() -> impl Strategy<Value = String> {
    let segment = prop_oneof![
        6 => select(vec!["runs", "0", "1", "series", "heatmap", "compare", "", "..", ".", "%2e", "api", "v1", "00", "-1",
            "4294967296", "runs?"]).prop_map(String::from),
        1 => "\\PC{0,8}",
    ];
    let tail = prop::collection::vec(segment, 0..5).prop_map(|s| s.join("/"));
    prop_oneof![
        4 => tail.clone().prop_map(|t| format!("/api/v1/{t}")),
        4 => prop_oneof![Just("series"), Just("heatmap"), Just("compare"), Just("")]
            .prop_map(|k| format!("/api/v1/runs/0/{k}")),
        1 => tail.prop_map(|t| format!("/{t}")),
    ]
}

#[test]
fn any_api_request_is_answered_with_json_or_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let api = Api::new(&[write_results(dir.path())]);
    let strategy = (path(), params(), any::<bool>());
    ioscope_props::check("web: API requests", 1500, strategy, |(path, params, gzip)| {
        let query: Vec<String> =
            params.iter().map(|(k, v)| format!("{}={}", encode_component(k), encode_component(v))).collect();
        let answer = api.get_with(&path, &query.join("&"), gzip);
        let json: serde_json::Value = serde_json::from_str(&answer.body)
            .unwrap_or_else(|e| panic!("{path}: answer {} is not JSON ({e}): {}", answer.status, answer.body));
        match answer.status {
            200 => assert!(json.get("error").is_none()),
            400 | 404 => assert_clear(json["error"].as_str().expect("an error message")),
            other => panic!("{path}?{}: status {other}: {}", query.join("&"), answer.body),
        }
    });
}
