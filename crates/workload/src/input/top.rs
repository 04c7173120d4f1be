//! The top-level keys, read once (flag over file) into typed values with their locations:
//! what the rules layer ([`super::rules`]) turns into a Plan.

use super::*;

/// Every top-level key the rules read first, as read. (`size` and `files` are read with the
/// data, after the hosts, so that their problems are reported in that order.)
#[derive(Clone)]
pub(super) struct Top {
    pub(super) engine: Got<EngineKind>,
    pub(super) iodepth: Got<u64>,
    pub(super) sqpoll: Got<bool>,
    pub(super) duration: Got<Duration>,
    pub(super) warmup: Got<Duration>,
    /// `warmup = "auto"`.
    pub(super) warmup_auto: bool,
    pub(super) steady_window: Got<Duration>,
    pub(super) until_steady: Got<Duration>,
    /// The end by amount: `io_size`, `number_ios`, `passes`.
    pub(super) io_size: Got<u64>,
    pub(super) number_ios: Got<u64>,
    pub(super) passes: Got<u64>,
    pub(super) precondition: Got<Precondition>,
    pub(super) dir: Got<PathBuf>,
    pub(super) target: Got<String>,
    pub(super) direct: Got<bool>,
    pub(super) sync: Got<SyncMode>,
    pub(super) cache: Got<CacheMode>,
    pub(super) verify: Got<VerifyMode>,
    pub(super) verify_block: Got<u64>,
    pub(super) rate: Got<u64>,
    pub(super) curve: Got<Vec<u8>>,
    pub(super) for_threads: Got<Vec<u64>>,
    pub(super) for_iodepth: Got<Vec<u64>>,
    pub(super) for_bs: Got<Vec<Vec<BsEntry>>>,
    pub(super) for_pct: Got<Vec<u64>>,
    pub(super) staircase: Got<Staircase>,
    pub(super) force: Got<bool>,
    pub(super) cleanup: Got<bool>,
    pub(super) max_errors: Got<MaxErrors>,
    pub(super) breakdown_top: Got<u64>,
    pub(super) repeat: Got<u64>,
    pub(super) until_ci: Got<UntilCi>,
    pub(super) on_host_loss: Got<OnHostLoss>,
    pub(super) host_timeout: Got<Duration>,
}

impl<'a> Ctx<'a> {
    /// Reads the top-level keys, in the order their problems are reported.
    pub(super) fn read_top(&mut self) -> Top {
        let engines: Vec<(&str, EngineKind)> = ioscope_engine_table::engine_names().collect();
        let engine = self.choice("engine", &engines);
        let iodepth = self.int("iodepth", 1, 1024);
        let sqpoll = self.boolean("sqpoll");
        let duration = self.step_time("duration", 1);
        let (warmup, warmup_auto) = self.warmup();
        let steady_window = self.step_time("steady_window", 2);
        let until_steady = self.step_time("until_steady", 2);
        let io_size = self.size("io_size");
        let number_ios = self.int("number_ios", 1, MAX_NUMBER_IOS);
        let passes = self.int("passes", 1, u64::from(MAX_PASSES));
        let precondition = self.precondition();
        let dir = self.dir("dir");
        let target = self.text_value("target", TARGET_EXPECTED);
        let direct = self.boolean("direct");
        let sync = self.choice("sync", SYNCS);
        let cache = self.choice("cache", CACHES);
        let verify = self.verify_mode();
        let verify_block = self.size("verify_block");
        let rate = self.int("rate_iops", 1, 100_000_000);
        let curve = self.curve();
        let for_threads = self.int_list("for_threads", 1, 4096);
        let for_iodepth = self.int_list("for_iodepth", 1, 1024);
        let for_bs = self.bs_lists("for_bs");
        let for_pct = self.int_list("for_rwmix_read", 0, 100);
        let staircase = self.staircase();
        let force = self.boolean("force");
        let cleanup = self.boolean("cleanup");
        let max_errors = self.max_errors();
        let breakdown_top = self.int("breakdown_top", 0, 10_000);
        let repeat = self.int("repeat", 1, u64::from(MAX_REPEATS));
        let until_ci = self.until_ci();
        let on_host_loss = self.choice("on_host_loss", ON_HOST_LOSS);
        let host_timeout = match self.duration("host_timeout") {
            Got::Ok(d, loc) if d < HOST_TIMEOUT_RANGE.0 || d > HOST_TIMEOUT_RANGE.1 => {
                self.err(&loc, "host_timeout", "a duration from 1s to 1h, like 10s", "");
                Got::Bad
            }
            g => g,
        };
        if let Some((raw, loc)) = self.raw("description") {
            self.string("description", raw, &loc, "a string of free text");
        }
        Top {
            engine,
            iodepth,
            sqpoll,
            duration,
            warmup,
            warmup_auto,
            steady_window,
            until_steady,
            io_size,
            number_ios,
            passes,
            precondition,
            dir,
            target,
            direct,
            sync,
            cache,
            verify,
            verify_block,
            rate,
            curve,
            for_threads,
            for_iodepth,
            for_bs,
            for_pct,
            staircase,
            force,
            cleanup,
            max_errors,
            breakdown_top,
            repeat,
            until_ci,
            on_host_loss,
            host_timeout,
        }
    }

    /// `precondition = "2x sequential write"`.
    fn precondition(&mut self) -> Got<Precondition> {
        let Some((raw, loc)) = self.raw("precondition") else {
            return Got::Absent;
        };
        let expected =
            format!("\"Nx sequential write\" with N from 1 to {MAX_PRECONDITION_PASSES}, like \"2x sequential write\"");
        match self.string("precondition", raw, &loc, &expected).map(Precondition::parse) {
            Some(Some(p)) => Got::Ok(p, loc),
            Some(None) => {
                self.err(&loc, "precondition", expected, "");
                Got::Bad
            }
            None => Got::Bad,
        }
    }
}
