//! Heat maps in columns of several seconds (`column_seconds=N`, docs/api.md): a view of a
//! long run needs no more time columns than its canvas has pixels, so the UI asks for
//! columns of N seconds. Each column is the exact merge of its seconds' histograms
//! (bucket addition): every I/O is still counted, in the bucket it was recorded in, only
//! the time resolution is coarser. Columns start at the answer's `from` and follow each
//! other without gaps or overlaps; the last one ends at `to`.

use crate::packed;
use crate::query::{self, HeatCells, HeatMap, HeatSeries, HeatmapAnswer, Query};
use ioscope_store::Results;

/// The `column_seconds` parameter was not a whole number of seconds of at least 1.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("column_seconds={}: expected a whole number of seconds per column, 1 or more", query::echo(.0))]
pub struct BadColumnSeconds(pub String);

/// The `column_seconds` parameter: None when absent (one column per second).
pub fn column_seconds(value: Option<&str>) -> Result<Option<u32>, BadColumnSeconds> {
    match value {
        None | Some("") => Ok(None),
        Some(v) => match v.parse::<u32>() {
            Ok(n) if n >= 1 => Ok(Some(n)),
            _ => Err(BadColumnSeconds(v.to_string())),
        },
    }
}

/// `map` with every `width` consecutive seconds merged into one column (the last column
/// may hold fewer). Returns the merged map and each column's first second.
pub fn merge(map: HeatMap, width: u32) -> (HeatMap, Vec<u32>) {
    let width = width.max(1) as usize;
    let ncols = map.seconds.div_ceil(width);
    let starts: Vec<u32> =
        (0..ncols).map(|c| map.from.saturating_add(u32::try_from(c * width).unwrap_or(u32::MAX))).collect();
    // One dense accumulator over the buckets, reset through the list of touched ones.
    let mut acc = vec![0u64; map.buckets.len()];
    let mut touched: Vec<u32> = Vec::new();
    let series = map
        .series
        .into_iter()
        .map(|s| {
            let columns = s
                .columns
                .chunks(width)
                .map(|group| {
                    for col in group {
                        for &(b, count) in col {
                            if let Some(slot) = acc.get_mut(b as usize) {
                                if *slot == 0 {
                                    touched.push(b);
                                }
                                *slot = slot.saturating_add(count);
                            }
                        }
                    }
                    touched.sort_unstable();
                    let cells = touched
                        .drain(..)
                        .map(|b| (b, std::mem::take(&mut acc[b as usize])))
                        .filter(|&(_, count)| count > 0)
                        .collect::<Vec<_>>();
                    cells
                })
                .collect();
            HeatSeries { key: s.key, total: s.total, columns }
        })
        .collect();
    (HeatMap { from: map.from, seconds: ncols, buckets: map.buckets, series }, starts)
}

/// `answer` (of the merged map) with its per-second fields made per column: `seconds`
/// lists each column's first second, `step` the step of that second, `warmup` whether any
/// second of the column is a warm-up one, and `column_seconds` the width.
fn in_columns<S>(mut answer: HeatmapAnswer<S>, width: u32, starts: Vec<u32>) -> HeatmapAnswer<S> {
    let w = width.max(1) as usize;
    answer.step = answer.step.chunks(w).map(|c| c.iter().flatten().next().copied()).collect();
    answer.warmup = answer
        .warmup
        .chunks(w)
        .map(|c| if c.iter().any(|v| v.is_some()) { Some(c.contains(&Some(true))) } else { None })
        .collect();
    answer.seconds = starts;
    answer.column_seconds = Some(width);
    answer
}

/// `GET /api/v1/runs/{id}/heatmap?column_seconds=N` in the JSON encoding.
pub fn heatmap(results: &Results, q: &Query, width: u32) -> Result<HeatmapAnswer<HeatCells>, query::QueryError> {
    let (map, starts) = merge(query::heat_map(results, q)?, width);
    let answer = query::heatmap_answer(results, q, map, None, |series| {
        series.into_iter().map(|s| HeatCells { key: s.key, total: s.total, columns: s.columns }).collect()
    });
    Ok(in_columns(answer, width, starts))
}

/// `GET /api/v1/runs/{id}/heatmap?column_seconds=N&encoding=packed`.
pub fn heatmap_packed(
    results: &Results,
    q: &Query,
    width: u32,
) -> Result<HeatmapAnswer<packed::PackedSeries>, query::QueryError> {
    let (map, starts) = merge(query::heat_map(results, q)?, width);
    let answer = query::heatmap_answer(results, q, map, Some("packed"), |series| {
        series.iter().map(|s| packed::pack(&s.key, s.total, &s.columns)).collect()
    });
    Ok(in_columns(answer, width, starts))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::write_results;
    use crate::Api;
    use serde_json::Value;
    use std::collections::BTreeMap;

    /// Per series key and bucket bounds: the count over the whole answer (either form).
    fn totals_per_bucket(v: &Value) -> BTreeMap<(String, u64, u64), u64> {
        let buckets = v["buckets"].as_array().unwrap();
        let mut out = BTreeMap::new();
        for s in v["series"].as_array().unwrap() {
            for col in s["columns"].as_array().unwrap() {
                let cells = col.as_array().unwrap();
                for pair in cells.chunks(2) {
                    let b = &buckets[pair[0].as_u64().unwrap() as usize];
                    let key = (s["key"].as_str().unwrap().to_string(), b[0].as_u64().unwrap(), b[1].as_u64().unwrap());
                    *out.entry(key).or_default() += pair[1].as_u64().unwrap();
                }
            }
        }
        out
    }

    #[test]
    fn merged_columns_hold_exactly_the_counts_of_their_seconds_per_bucket() {
        let dir = tempfile::tempdir().unwrap();
        let api = Api::new(&[write_results(dir.path())]);
        let full = api.get("/api/v1/runs/0/heatmap", "stat=latency&by=op").json();
        for width in [2, 3, 4, 100] {
            let merged = api.get("/api/v1/runs/0/heatmap", &format!("stat=latency&by=op&column_seconds={width}"));
            assert_eq!(merged.status, 200, "{}", merged.body);
            let merged = merged.json();
            assert_eq!(totals_per_bucket(&merged), totals_per_bucket(&full), "column_seconds={width}");
            assert_eq!(merged["column_seconds"], width);
            // Column i holds the bucket sums of its seconds, nothing else.
            let seconds = full["seconds"].as_array().unwrap().len();
            let ncols = merged["seconds"].as_array().unwrap().len();
            assert_eq!(ncols, seconds.div_ceil(width as usize), "column_seconds={width}");
            for (s, fs) in merged["series"].as_array().unwrap().iter().zip(full["series"].as_array().unwrap()) {
                assert_eq!(s["total"], fs["total"]);
                for (c, col) in s["columns"].as_array().unwrap().iter().enumerate() {
                    let mut want: BTreeMap<u64, u64> = BTreeMap::new();
                    for sec in
                        &fs["columns"].as_array().unwrap()[c * width as usize..((c + 1) * width as usize).min(seconds)]
                    {
                        for pair in sec.as_array().unwrap().chunks(2) {
                            *want.entry(pair[0].as_u64().unwrap()).or_default() += pair[1].as_u64().unwrap();
                        }
                    }
                    let got: BTreeMap<u64, u64> = col
                        .as_array()
                        .unwrap()
                        .chunks(2)
                        .map(|p| (p[0].as_u64().unwrap(), p[1].as_u64().unwrap()))
                        .collect();
                    assert_eq!(got, want, "column {c} of {}", s["key"]);
                }
            }
        }
    }

    #[test]
    fn columns_cover_the_asked_seconds_without_gaps_or_overlaps() {
        let dir = tempfile::tempdir().unwrap();
        let api = Api::new(&[write_results(dir.path())]);
        for (range, width) in [("", 2), ("&from=1&to=4", 3), ("&from=2&to=2", 5), ("&from=0&to=3", 1)] {
            let v = api.get("/api/v1/runs/0/heatmap", &format!("stat=size{range}&column_seconds={width}")).json();
            let (from, to) = (v["from"].as_u64().unwrap(), v["to"].as_u64().unwrap());
            let starts: Vec<u64> = v["seconds"].as_array().unwrap().iter().map(|s| s.as_u64().unwrap()).collect();
            // Column i spans [starts[i], starts[i+1] - 1]; the last ends at `to`.
            assert_eq!(starts.first(), Some(&from), "{range} by {width}");
            for pair in starts.windows(2) {
                assert_eq!(pair[1] - pair[0], width, "{range} by {width}: {starts:?}");
            }
            let last = *starts.last().unwrap();
            assert!(last <= to && to < last + width, "{range} by {width}: {starts:?} to {to}");
            for key in ["step", "warmup"] {
                assert_eq!(v[key].as_array().unwrap().len(), starts.len(), "{key}");
            }
        }
        // Second 0 is the warm-up: its column says so.
        let v = api.get("/api/v1/runs/0/heatmap", "stat=size&column_seconds=2").json();
        assert_eq!(v["warmup"][0], true);
    }

    #[test]
    fn packed_columns_decode_to_the_json_columns() {
        let dir = tempfile::tempdir().unwrap();
        let api = Api::new(&[write_results(dir.path())]);
        let json = api.get("/api/v1/runs/0/heatmap", "stat=latency&by=op&column_seconds=2").json();
        let packed = api.get("/api/v1/runs/0/heatmap", "stat=latency&by=op&column_seconds=2&encoding=packed").json();
        assert_eq!(packed["encoding"], "packed");
        assert_eq!(packed["seconds"], json["seconds"]);
        assert_eq!(packed["buckets"], json["buckets"]);
        for (p, j) in packed["series"].as_array().unwrap().iter().zip(json["series"].as_array().unwrap()) {
            let cols: Vec<Vec<(u32, u64)>> = j["columns"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| {
                    c.as_array()
                        .unwrap()
                        .chunks(2)
                        .map(|x| (x[0].as_u64().unwrap() as u32, x[1].as_u64().unwrap()))
                        .collect()
                })
                .collect();
            let want = packed::pack(j["key"].as_str().unwrap(), j["total"].as_u64().unwrap(), &cols);
            assert_eq!(p["lengths"], want.lengths);
            assert_eq!(p["counts"], want.counts);
            assert_eq!(p["steps"], want.steps);
        }
    }

    #[test]
    fn column_seconds_must_be_a_whole_number_of_at_least_one() {
        let dir = tempfile::tempdir().unwrap();
        let api = Api::new(&[write_results(dir.path())]);
        for bad in ["0", "-1", "x", "1.5"] {
            let a = api.get("/api/v1/runs/0/heatmap", &format!("stat=latency&column_seconds={bad}"));
            assert_eq!(a.status, 400, "{bad}");
            assert_eq!(
                a.json()["error"],
                format!("column_seconds=\"{bad}\": expected a whole number of seconds per column, 1 or more")
            );
        }
        let one = api.get("/api/v1/runs/0/heatmap", "stat=latency&column_seconds=1");
        assert_eq!(one.body, api.get("/api/v1/runs/0/heatmap", "stat=latency").body);
    }
}
