//! Aligning hosts' clocks: each agent's wall-clock offset from the coordinator's, from
//! several request/answer exchanges, keeping the one with the shortest round trip (its
//! midpoint is the tightest bound on when the agent read its clock).

pub use ioscope_exec::clock::unix_ns;

/// The instant `at_unix_ns` of this host's wall clock on [`ioscope_exec::clock::now_ns`]'s
/// time line (both clocks read back to back; the closest of a few pairs).
pub fn unix_to_monotonic(at_unix_ns: i64) -> u64 {
    let (mono, unix) = (0..5)
        .map(|_| {
            let a = ioscope_exec::clock::now_ns();
            let u = unix_ns();
            let b = ioscope_exec::clock::now_ns();
            (b - a, a + (b - a) / 2, u)
        })
        .min_by_key(|s| s.0)
        .map(|(_, m, u)| (m, u))
        .unwrap_or((ioscope_exec::clock::now_ns(), unix_ns()));
    let ahead = at_unix_ns.saturating_sub(unix);
    if ahead >= 0 {
        mono.saturating_add(ahead as u64)
    } else {
        mono.saturating_sub(ahead.unsigned_abs())
    }
}

/// One exchange: the coordinator's clock when it sent the request and when the answer
/// came, and the agent's clock in its answer.
#[derive(Clone, Copy, Debug)]
pub struct Exchange {
    pub sent_unix_ns: i64,
    pub agent_unix_ns: i64,
    pub received_unix_ns: i64,
}

/// An agent's clock against the coordinator's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Offset {
    /// Agent clock minus coordinator clock.
    pub offset_ns: i64,
    /// The offset is known to within ± this (half the best round trip).
    pub uncertainty_ns: u64,
    pub rtt_ns: u64,
}

/// The offset from the exchange with the shortest round trip (None without a usable one).
pub fn estimate(exchanges: &[Exchange]) -> Option<Offset> {
    exchanges
        .iter()
        .filter(|e| e.received_unix_ns >= e.sent_unix_ns)
        .min_by_key(|e| e.received_unix_ns - e.sent_unix_ns)
        .map(|e| {
            let rtt = (e.received_unix_ns - e.sent_unix_ns) as u64;
            let mid = e.sent_unix_ns + (rtt / 2) as i64;
            Offset { offset_ns: e.agent_unix_ns.saturating_sub(mid), uncertainty_ns: rtt.div_ceil(2), rtt_ns: rtt }
        })
}

/// Above this uncertainty, seconds of different hosts cannot be said to cover the same
/// interval (a twentieth of a second): the host is refused.
pub const MAX_UNCERTAINTY_NS: u64 = 50_000_000;

/// Whether a host's seconds can be aligned with the others' (the offset itself can be any
/// size: it is corrected; what cannot be corrected is not knowing it).
pub fn alignable(o: &Offset) -> Result<(), String> {
    if o.uncertainty_ns <= MAX_UNCERTAINTY_NS {
        return Ok(());
    }
    Err(format!(
        "its clock offset ({:+.1} ms) is known only to ±{:.1} ms (best round trip {:.1} ms of 16): seconds cannot be \
         aligned to within {} ms; use a faster or less loaded link to it",
        o.offset_ns as f64 / 1e6,
        o.uncertainty_ns as f64 / 1e6,
        o.rtt_ns as f64 / 1e6,
        MAX_UNCERTAINTY_NS / 1_000_000
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_offset_comes_from_the_shortest_round_trip() {
        // The agent is 5 ms ahead; the second exchange was slow one way (a queued answer).
        let ex = [
            Exchange { sent_unix_ns: 1_000_000, agent_unix_ns: 6_100_000, received_unix_ns: 1_200_000 },
            Exchange { sent_unix_ns: 2_000_000, agent_unix_ns: 7_050_000, received_unix_ns: 4_000_000 },
            Exchange { sent_unix_ns: 3_000_000, agent_unix_ns: 8_040_000, received_unix_ns: 3_080_000 },
        ];
        let o = estimate(&ex).unwrap();
        assert_eq!(o, Offset { offset_ns: 5_000_000, uncertainty_ns: 40_000, rtt_ns: 80_000 });
    }

    #[test]
    fn any_offset_is_corrected_but_an_uncertain_one_is_refused_naming_it() {
        let hour_ahead = Offset { offset_ns: 3_600_000_000_000, uncertainty_ns: 200_000, rtt_ns: 400_000 };
        assert!(alignable(&hour_ahead).is_ok(), "a large offset is measured and corrected");
        let slow_link = Offset { offset_ns: -2_000_000, uncertainty_ns: 120_000_000, rtt_ns: 240_000_000 };
        let why = alignable(&slow_link).unwrap_err();
        assert!(why.contains("±120.0 ms") && why.contains("-2.0 ms"), "{why}");
    }

    #[test]
    fn a_clock_that_went_backwards_during_an_exchange_is_not_used() {
        let ex = [Exchange { sent_unix_ns: 10, agent_unix_ns: 0, received_unix_ns: 5 }];
        assert_eq!(estimate(&ex), None);
    }

    #[test]
    fn a_wall_clock_instant_maps_onto_the_monotonic_clock() {
        let now = unix_ns();
        let mono = ioscope_exec::clock::now_ns();
        let at = unix_to_monotonic(now + 1_000_000_000);
        let ahead = at as i64 - mono as i64;
        // Both clocks advance together; a scheduler hiccup between the reads is tolerated.
        assert!((500_000_000..1_500_000_000).contains(&ahead), "{ahead}");
    }
}
