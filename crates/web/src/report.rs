//! `ioscope report`: one self-contained HTML file that opens with no server. It is the
//! UI itself (bundled into one script, see assets.rs) with the API answers it needs
//! embedded: the run, its summary, steps and system configuration, every statistic as a
//! series and as heat maps, whole and broken down by each dimension, and the same for each
//! operation's own I/O (one level of drill-down). The UI offers only what is embedded.

use crate::api::{query_path, run_detail, Api, ListEntry, RunList, API_VERSION};
use crate::assets::{self, AssetError};
use crate::query::{self, Kind, Query, QueryError, STATS};
use ioscope_store::StoreError;
use serde_json::Value;
use std::path::Path;

/// Breakdowns embedded for heat maps (each one is a heat map per value).
const HEATMAP_BREAKDOWNS: &[Option<&str>] = &[None, Some("op"), Some("workload"), Some("step")];

/// Why a report could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A query the report makes was refused (a statistic the run cannot answer).
    #[error(transparent)]
    Query(#[from] QueryError),
    #[error(transparent)]
    Asset(#[from] AssetError),
    #[error("cannot write the embedded data: {0}")]
    Json(#[from] serde_json::Error),
}

pub fn render(results_path: &Path) -> Result<String, ReportError> {
    let api = Api::new(&[results_path.to_path_buf()]);
    let run = &api.runs[0];
    let results = run.results()?;
    let detail = run_detail(run, &results);
    let dims = query::dimension_values(&results);
    let multi = |d: query::Dim| dims.of(d).len() > 1;

    // (path, JSON text) of every answer embedded.
    let mut responses: Vec<(String, String)> =
        vec![(format!("/api/v1/runs/{}", run.id), serde_json::to_string(&detail)?)];
    let mut embed = |stat: &'static query::Stat, by: Option<&str>, filter: &str| -> Result<(), ReportError> {
        let mut q = Query::new(stat.name)?.filter(filter)?;
        if let Some(b) = by {
            q = q.by(b)?;
        }
        responses.push((
            query_path(&run.id, "series", stat.name, by, filter),
            serde_json::to_string(&query::series(&results, &q))?,
        ));
        if stat.kind == Kind::Distribution && HEATMAP_BREAKDOWNS.contains(&by) {
            let packed = serde_json::to_string(&crate::packed::heatmap_packed(&results, &q)?)?;
            responses.push((query_path(&run.id, "heatmap", stat.name, by, filter), packed));
        }
        Ok(())
    };
    // The client's statistics, and the target's when the run has target series (their
    // own dimensions even with one value: the server worksheet's disk IOPS by disk).
    for stat in ioscope_metrics::stat::all() {
        let target = stat.side == ioscope_metrics::Side::Target;
        if (stat.kind == Kind::Event && results.probes.is_empty()) || (target && !query::offered(&results, stat)) {
            continue;
        }
        let own = |d: query::Dim| target && d != query::Dim::Host && !dims.of(d).is_empty();
        let mut bys: Vec<Option<&str>> = vec![None];
        bys.extend(stat.dims.iter().filter(|&&d| multi(d) || d == query::Dim::Op || own(d)).map(|d| Some(d.name())));
        for by in bys {
            embed(stat, by, "")?;
        }
    }
    // One level of drill-down: each operation's own I/O ("writes, by latency"), every
    // statistic the run offers with an op, whole and by each other dimension with more
    // than one value. The UI offers exactly the answers found here.
    for op in dims.of(query::Dim::Op) {
        let filter = format!("op:{op}");
        for stat in STATS.iter().filter(|s| s.has(query::Dim::Op) && query::offered(&results, s)) {
            embed(stat, None, &filter)?;
            for d in stat.dims.iter().filter(|&&d| d != query::Dim::Op && multi(d)) {
                embed(stat, Some(d.name()), &filter)?;
            }
        }
    }
    // The report's run is finished as far as the page is concerned: nothing to follow.
    let entry = ListEntry::Run(crate::api::RunEntry { live: false, ..detail.entry.clone() });
    let answers: Vec<String> = responses.iter().map(|(k, v)| format!("{}:{v}", Value::String(k.clone()))).collect();
    let runs = serde_json::to_string(&RunList { api_version: API_VERSION, runs: vec![entry] })?;
    // Read by assets/api.js; the answers are already JSON text.
    let embedded =
        format!("{{\"runs\":{runs},\"responses\":{{{}}},\"worksheet\":\"\",\"report\":true}}", answers.join(","));
    page(&run.name(), &embedded)
}

/// index.html with its stylesheet and scripts inlined; `embedded` is JSON text.
fn page(title: &str, embedded: &str) -> Result<String, ReportError> {
    let html = assets::text("index.html")?;
    let css = assets::text("app.css")?;
    let script = assets::bundle()?;
    let data = script_safe(embedded);
    let (head, rest) = html.split_once("</head>").ok_or(AssetError::Malformed("index.html has no </head>"))?;
    let head = strip_tags(head, &["<link rel=\"stylesheet\"", "<script"]);
    let body = strip_tags(rest, &["<script"]);
    let (body, tail) = body.rsplit_once("</body>").ok_or(AssetError::Malformed("index.html has no </body>"))?;
    let title = html_escape(&format!("ioscope report: {title}"));
    let head = match head.split_once("<title>") {
        Some((a, b)) => format!("{a}<title>{title}</title>{}", b.split_once("</title>").map_or("", |x| x.1)),
        None => format!("{head}<title>{title}</title>"),
    };
    Ok(format!(
        "{head}<style>\n{css}\n</style>\n</head>{body}<script>window.IOSCOPE_EMBEDDED = {data};</script>\n<script>\n{}\n</script>\n</body>{tail}",
        script_safe(&script)
    ))
}

/// Removes every element starting with one of `starts` (up to its end tag or `>`).
fn strip_tags(html: &str, starts: &[&str]) -> String {
    let mut out = String::new();
    let mut rest = html;
    while let Some((i, start)) = starts.iter().filter_map(|s| rest.find(s).map(|i| (i, *s))).min_by_key(|x| x.0) {
        out.push_str(&rest[..i]);
        let after = &rest[i..];
        let end = if start == "<script" {
            after.find("</script>").map(|e| e + "</script>".len())
        } else {
            after.find('>').map(|e| e + 1)
        };
        rest = &after[end.unwrap_or(after.len())..];
    }
    out.push_str(rest);
    out
}

/// Text that cannot end a `<script>` element early.
fn script_safe(s: &str) -> String {
    s.replace("</", "<\\/").replace("<!--", "<\\!--")
}

fn html_escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_are_stripped_and_scripts_stay_closed() {
        let html = "<head><link rel=\"stylesheet\" href=\"/assets/app.css\"><script type=\"module\" src=\"/assets/app.js\"></script><title>x</title>";
        assert_eq!(strip_tags(html, &["<link rel=\"stylesheet\"", "<script"]), "<head><title>x</title>");
        assert_eq!(script_safe("a</script>b"), "a<\\/script>b");
    }
}
