//! Reading a workload's access-pattern keys (`seq_skip`, `random_distribution`,
//! `percentage_random`, `arrivals`; see [`crate::access`]) and the rules that tie them to
//! the workload's `rw`: each pattern only where it means something.

use super::{Ctx, Got, Loc, Raw, RWS};
use crate::access::{self, Access, Arrivals, Distribution};
use crate::plan::Rw;
use toml_edit::Value;

/// What the access keys depend on in the workload being read.
pub(super) struct Context {
    /// Offsets are random (rw randread/randwrite/randrw, fileio random).
    pub random: bool,
    /// The workload runs on a [dataset] (a file tree), not the flat working set.
    pub tree: bool,
    /// The workload draws a text (`pattern`), which places its own offsets.
    pub pattern: bool,
    /// The skip written as fio's offset modifier on `rw` (`read:-8k`).
    pub rw_skip: Got<i64>,
}

const ARRIVALS: &[(&str, Arrivals)] = &[("uniform", Arrivals::Uniform), ("poisson", Arrivals::Poisson)];

impl<'a> Ctx<'a> {
    /// The access pattern of the workload whose keys start with `prefix` ("" for the one
    /// workload of the top level, "workload." for a [[workload]]). None when a key is wrong
    /// (each problem reported).
    pub(super) fn access(&mut self, prefix: &str, cx: Context) -> Option<Access> {
        let skip_key = format!("{prefix}seq_skip");
        let dist_key = format!("{prefix}random_distribution");
        let pct_key = format!("{prefix}percentage_random");
        let arrivals_key = format!("{prefix}arrivals");
        let mut skip_g = self.seq_skip(&skip_key);
        match (&skip_g, cx.rw_skip) {
            (Got::Ok(_, loc), Got::Ok(..)) => {
                let note = "rw = \"read:SIZE\" is fio's spelling of seq_skip";
                self.err(loc, &skip_key, "either seq_skip or rw with :SIZE, not both", note);
                skip_g = Got::Bad;
            }
            (Got::Absent, rw_skip) => skip_g = rw_skip,
            _ => {}
        }
        let dist_g = self.distribution(&dist_key);
        let pct_g = self.int(&pct_key, 0, 100);
        let arrivals_g = self.choice(&arrivals_key, ARRIVALS);
        let offsets = [(&skip_g.loc(), &skip_key), (&dist_g.loc(), &dist_key), (&pct_g.loc(), &pct_key)];
        for (loc, key) in offsets {
            if matches!(loc, Loc::Default) {
                continue;
            }
            if cx.tree || cx.pattern {
                let why = if cx.tree {
                    "a [dataset] workload reads and writes whole files"
                } else {
                    "a pattern workload places its offsets by picture"
                };
                self.err(loc, key, "an access pattern only for reads and writes on the flat working set", why);
            }
        }
        if let (Got::Ok(skip, loc), true) = (&skip_g, cx.random) {
            if *skip != 0 {
                let note = "seq_skip moves a sequential stream; this workload's offsets are random (rw = read, write or rw, or fileio = \"sequential\", is sequential)";
                self.err(loc, &skip_key, "no seq_skip on a random workload", note);
            }
        }
        for (loc, key, default) in [
            (dist_g.loc(), &dist_key, matches!(dist_g, Got::Ok(Distribution::Uniform, _))),
            (pct_g.loc(), &pct_key, matches!(pct_g, Got::Ok(100, _))),
        ] {
            if !cx.random && !default && !matches!(loc, Loc::Default) {
                let note = "it shapes random offsets; this workload is sequential (rw = randread, randwrite or randrw, or fileio = \"random\", is random)";
                self.err(&loc, key, format!("no {} on a sequential workload", key.trim_start_matches(prefix)), note);
            }
        }
        if let Got::Ok(Arrivals::Poisson, loc) = &arrivals_g {
            if self.raw("rate_iops").is_none() && self.raw("curve").is_none() {
                let note = "arrivals time the I/Os of an open loop; without a rate, each I/O starts when the last ends";
                self.err(loc, &arrivals_key, "poisson arrivals with a rate (rate_iops or curve)", note);
            }
        }
        Some(Access {
            seq_skip: skip_g.or(0)?,
            distribution: dist_g.or(Distribution::Uniform)?,
            random_pct: pct_g.or(100)? as u8,
            arrivals: arrivals_g.or(Arrivals::Uniform)?,
        })
    }

    /// `rw`, and the skip of fio's offset modifier when it has one (`read:-8k`, `write:4k`).
    pub(super) fn rw_and_skip(&mut self, key: &str) -> (Got<Rw>, Got<i64>) {
        let modified = match self.raw(key) {
            Some((Raw::Flag(t), loc)) => t.split_once(':').map(|m| (m, loc)),
            Some((Raw::Toml(item), loc)) => item.as_str().and_then(|t| t.split_once(':')).map(|m| (m, loc)),
            None => None,
        };
        let Some(((base, modifier), loc)) = modified else {
            return (self.choice(key, RWS), Got::Absent);
        };
        let base = base.trim().to_ascii_lowercase();
        let base = super::table_key(key).map_or(base.as_str(), |k| k.native_value(&base)).to_string();
        let Some(&(_, rw)) = RWS.iter().find(|(n, _)| *n == base) else {
            self.err(&loc, key, "read, write or rw, then an optional :SIZE (fio's offset modifier, like read:-8k)", "");
            return (Got::Bad, Got::Bad);
        };
        if rw.is_random() {
            let note = "fio draws a new random offset every N I/Os, sequential in between; ioscope has no fixed-length runs (percentage_random mixes sequential and random I/Os at random)";
            self.err(&loc, key, format!("{} without :N", rw.name()), note);
            return (Got::Bad, Got::Bad);
        }
        match access::parse_seq_skip(modifier) {
            Ok(skip) => (Got::Ok(rw, loc.clone()), Got::Ok(skip, loc)),
            Err(note) => {
                self.err(&loc, key, format!("{}:SIZE, the size {}", rw.name(), access::SEQ_SKIP_EXPECTED), note);
                (Got::Bad, Got::Bad)
            }
        }
    }

    /// `seq_skip`: a signed size ("-8k") or a byte count.
    fn seq_skip(&mut self, key: &str) -> Got<i64> {
        let Some((raw, loc)) = self.raw(key) else {
            return Got::Absent;
        };
        let parsed = match raw {
            Raw::Toml(item) if item.as_value().is_some_and(Value::is_integer) => {
                access::check_seq_skip(item.as_integer().unwrap_or(0))
            }
            raw => match self.string(key, raw, &loc, access::SEQ_SKIP_EXPECTED) {
                Some(text) => access::parse_seq_skip(text),
                None => return Got::Bad,
            },
        };
        match parsed {
            Ok(v) => Got::Ok(v, loc),
            Err(note) => {
                self.err(&loc, key, access::SEQ_SKIP_EXPECTED, note);
                Got::Bad
            }
        }
    }

    /// `random_distribution`: fio's spelling (`zipf:1.2`).
    fn distribution(&mut self, key: &str) -> Got<Distribution> {
        let Some((raw, loc)) = self.raw(key) else {
            return Got::Absent;
        };
        let Some(text) = self.string(key, raw, &loc, access::DISTRIBUTION_EXPECTED) else {
            return Got::Bad;
        };
        match Distribution::parse(text) {
            Ok(d) => Got::Ok(d, loc),
            Err(note) => {
                self.err(&loc, key, access::DISTRIBUTION_EXPECTED, note);
                Got::Bad
            }
        }
    }
}
