//! A [[workload]]'s own `iodepth`, `sync`, `direct` and `rate_iops` (the run's keys, given inside one
//! workload), and its `phase`: read here with their locations, checked by rules/own.rs and
//! (the phases) rules/steps.rs.

use super::*;

/// Where a workload's own keys were written (Loc::Default: not given).
#[derive(Clone, Debug)]
pub(super) struct OwnLocs {
    pub(super) iodepth: Loc,
    pub(super) sync: Loc,
    pub(super) direct: Loc,
    pub(super) rate: Loc,
    pub(super) phase: Loc,
}

impl Default for OwnLocs {
    fn default() -> Self {
        OwnLocs {
            iodepth: Loc::Default,
            sync: Loc::Default,
            direct: Loc::Default,
            rate: Loc::Default,
            phase: Loc::Default,
        }
    }
}

/// The values read; None when absent or bad (a bad one has been reported).
pub(super) struct OwnIo {
    pub(super) iodepth: Option<u32>,
    pub(super) sync: Option<SyncMode>,
    pub(super) direct: Option<bool>,
    pub(super) rate_iops: Option<u64>,
    pub(super) phase: Option<u32>,
    pub(super) locs: OwnLocs,
}

impl<'a> Ctx<'a> {
    /// The current [[workload]]'s `iodepth`, `sync`, `direct`, `rate_iops` and `phase`.
    pub(super) fn own_io(&mut self) -> OwnIo {
        let depth = self.int("workload.iodepth", 1, 1024);
        let sync = self.choice("workload.sync", SYNCS);
        let direct = self.boolean("workload.direct");
        let rate = self.int("workload.rate_iops", 1, 100_000_000);
        let phase = self.int("workload.phase", 1, u64::from(MAX_PHASES));
        OwnIo {
            locs: OwnLocs {
                iodepth: depth.loc(),
                sync: sync.loc(),
                direct: direct.loc(),
                rate: rate.loc(),
                phase: phase.loc(),
            },
            phase: match phase {
                Got::Ok(p, _) => Some(p as u32),
                _ => None,
            },
            rate_iops: match rate {
                Got::Ok(r, _) => Some(r),
                _ => None,
            },
            iodepth: match depth {
                Got::Ok(d, _) => Some(d as u32),
                _ => None,
            },
            sync: match sync {
                Got::Ok(s, _) => Some(s),
                _ => None,
            },
            direct: match direct {
                Got::Ok(d, _) => Some(d),
                _ => None,
            },
        }
    }
}
