//! The target side's per-second values: what `ioscope probe` samplers recorded for one
//! host and one second, in the same series model as the client side (a statistic of
//! [`crate::stat::TARGET_STATS`], its dimension values, and a count, a level or a
//! histogram). They travel from agents as JSON and are stored in `series` / `sample`.

use crate::stat::{self, Dim, Kind, Side, StatId};
use crate::Histogram;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One series' value for one second.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "SeriesWire", try_from = "SeriesWire")]
pub struct TargetSeries {
    pub stat: StatId,
    /// Dimension values besides the host (`disk` = `loop3`, `op` = `write`), each a
    /// dimension of the statistic.
    pub labels: Vec<(Dim, String)>,
    pub value: TargetValue,
}

/// A counter's count in the second, a gauge's level at its end, or a distribution.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TargetValue {
    Count(u64),
    Gauge(u64),
    Dist(Histogram),
}

/// Everything one host's samplers recorded for one second of the run (second 0 starts
/// at the run's time zero, as the client side's do).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TargetSecond {
    pub host: String,
    pub second: u64,
    /// The time the counters were sampled over (about 1 s; the eBPF histograms' is the
    /// second itself, cut in the kernel).
    pub interval_ns: u64,
    pub series: Vec<TargetSeries>,
}

impl TargetSeries {
    pub fn new(stat: StatId, labels: &[(Dim, &str)], value: TargetValue) -> TargetSeries {
        TargetSeries { stat, labels: labels.iter().map(|(d, v)| (*d, v.to_string())).collect(), value }
    }

    /// The value of dimension `dim` ("" when the series has none).
    pub fn label(&self, dim: Dim) -> &str {
        self.labels.iter().find(|(d, _)| *d == dim).map_or("", |(_, v)| v.as_str())
    }
}

#[derive(Serialize, Deserialize)]
struct SeriesWire {
    stat: String,
    labels: BTreeMap<String, String>,
    value: TargetValue,
}

impl From<TargetSeries> for SeriesWire {
    fn from(s: TargetSeries) -> SeriesWire {
        SeriesWire {
            stat: stat::stat(s.stat).stored.to_string(),
            labels: s.labels.into_iter().map(|(d, v)| (d.name().to_string(), v)).collect(),
            value: s.value,
        }
    }
}

impl TryFrom<SeriesWire> for TargetSeries {
    type Error = String;

    /// A series from the wire names a target statistic, only its dimensions, and a value
    /// of its kind.
    fn try_from(w: SeriesWire) -> Result<TargetSeries, String> {
        let st = stat::by_stored(&w.stat)
            .filter(|s| s.side == Side::Target)
            .ok_or_else(|| format!("unknown target statistic {:?}", w.stat))?;
        let mut labels = Vec::with_capacity(w.labels.len());
        for (name, value) in w.labels {
            let dim = Dim::parse(&name)
                .filter(|d| *d != Dim::Host && st.has(*d))
                .ok_or_else(|| format!("{} has no dimension {name:?}", st.stored))?;
            labels.push((dim, value));
        }
        let fits = matches!(
            (&w.value, st.kind),
            (TargetValue::Count(_), Kind::Counter)
                | (TargetValue::Gauge(_), Kind::Gauge)
                | (TargetValue::Dist(_), Kind::Distribution)
        );
        if !fits {
            return Err(format!("{}: a value of another kind than {}", st.stored, st.kind.name()));
        }
        Ok(TargetSeries { stat: st.id, labels, value: w.value })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_target_second_crosses_the_wire_unchanged_and_a_forged_one_is_refused() {
        let mut h = Histogram::new();
        h.record(1500);
        let second = TargetSecond {
            host: "server".into(),
            second: 7,
            interval_ns: 1_000_000_000,
            series: vec![
                TargetSeries::new(StatId::DiskOps, &[(Dim::Disk, "loop3"), (Dim::Op, "write")], TargetValue::Count(12)),
                TargetSeries::new(StatId::MemDirty, &[], TargetValue::Gauge(4096)),
                TargetSeries::new(
                    StatId::BlockLatency,
                    &[(Dim::Disk, "loop3"), (Dim::Op, "write")],
                    TargetValue::Dist(h),
                ),
            ],
        };
        let json = serde_json::to_string(&second).unwrap();
        assert_eq!(serde_json::from_str::<TargetSecond>(&json).unwrap(), second);
        for forged in [
            r#"{"host":"h","second":1,"interval_ns":1,"series":[{"stat":"io.ops","labels":{},"value":{"count":1}}]}"#,
            r#"{"host":"h","second":1,"interval_ns":1,"series":[{"stat":"disk.ops","labels":{"cpu":"0"},"value":{"count":1}}]}"#,
            r#"{"host":"h","second":1,"interval_ns":1,"series":[{"stat":"disk.ops","labels":{},"value":{"gauge":1}}]}"#,
        ] {
            assert!(serde_json::from_str::<TargetSecond>(forged).is_err(), "{forged}");
        }
    }
}
