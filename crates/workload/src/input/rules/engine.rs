//! Engine capabilities: what the engine can do (a target, file operations, patterns, sqpoll,
//! direct I/O, a page cache to warm), checked against the keys that ask for it.

use super::*;

impl<'a> Ctx<'a> {
    /// The engine, and its target: a block device given as the target of an engine of local
    /// files is its `dir`; a target URL is parsed once.
    pub(super) fn engine_and_target(&mut self, top: &mut Top, run: &mut Run) {
        let engine =
            top.engine.or(defaults::choice("engine", &ioscope_engine_table::engine_names().collect::<Vec<_>>()));
        // The target, parsed once; its errors are reported with the other engine rules below.
        let target_rule = engine.and_then(|e| e.spec().caps.target);
        // A block device (`--target /dev/X`) for an engine of local files is its `dir`:
        // the device itself is the target (see ioscope_exec::blockdev).
        if let (Got::Ok(dev, loc), None, Got::Absent) = (&top.target, target_rule, &top.dir) {
            if dev.starts_with("/dev/") && engine.is_some_and(|e| e.spec().caps.local_files()) {
                top.dir = Got::Ok(PathBuf::from(dev), loc.clone());
                top.target = Got::Absent;
            }
        }
        let parsed_target = match (&top.target, target_rule) {
            (Got::Ok(url, _), Some(rule)) => Some((rule.parse)(url)),
            _ => None,
        };
        (run.engine, run.target_rule, run.parsed_target) = (engine, target_rule, parsed_target);
    }

    /// Patterns, dataset file operations, the target and sqpoll, each on an engine that has it.
    pub(super) fn capability_rules(&mut self, top: &Top, run: &mut Run) {
        let (engine, target_rule, has_dataset, hosts_targets) =
            (run.engine, run.target_rule, run.has_dataset, run.hosts_targets);
        let parsed_target = run.parsed_target.take();
        let patterned = run.workloads.iter().flatten().any(|w| w.workload.pattern.is_some());
        if let (true, Some(e)) = (patterned, engine) {
            if !e.spec().caps.patterns || top.iodepth.or(defaults::number("iodepth")).unwrap_or(1) > 1 {
                let with = Capability::Patterns.engines_with();
                let note = format!(
                    "a pattern draws column by column, one I/O at a time per thread: use engine {with} with iodepth 1"
                );
                self.err(&top.engine.loc(), "engine", format!("{with}, iodepth 1, for a pattern workload"), note);
            }
        }
        if let (true, Got::Ok(e, loc)) = (has_dataset, &top.engine) {
            if !e.spec().caps.file_ops {
                let with = Capability::FileOps.engines_with();
                let note = format!("dataset workloads (open, create, delete ...) run on engine {with}");
                self.err(loc, "engine", format!("{with} with a [dataset]"), note);
            }
        }
        // An engine with a target, and its target, go together.
        match (&top.target, engine, target_rule, parsed_target) {
            (Got::Ok(_, loc), _, Some(rule), Some(parsed)) => match parsed {
                Ok(t) => run.target = Some(t),
                Err(e) => self.err(loc, "target", rule.expected, e.0),
            },
            (Got::Ok(_, loc), Some(e), None, _) => {
                let with = Capability::Target.engines_with();
                let note = format!("a target is where engine {with} works, and the engine is {}", e.name());
                self.err(loc, "target", format!("a target only with engine = \"{with}\""), note);
            }
            // Every host may bring its own (a dataset is anchored under the top-level one).
            (Got::Absent, _, Some(_), _) if hosts_targets && !has_dataset => {}
            (Got::Absent, _, Some(rule), _) => self.err(&top.engine.loc(), "target", rule.expected, rule.missing),
            _ => {}
        }
        // Submission-queue polling is an io_uring feature.
        if let (Got::Ok(true, loc), Some(e)) = (&top.sqpoll, engine) {
            if !e.spec().caps.sqpoll {
                let note = format!("sqpoll is an io_uring option and the engine is {}", e.name());
                let with = Capability::Sqpoll.engines_with();
                self.err(loc, "sqpoll", format!("sqpoll only with engine = \"{with}\""), note);
            }
        }
        run.patterned = patterned;
    }

    /// Direct I/O on an engine that has it, with aligned block sizes; a page cache to warm.
    pub(super) fn direct_rules(&mut self, top: &Top, run: &mut Run) {
        let (engine, text) = (run.engine, self.text());
        // O_DIRECT needs sector-aligned transfers; engines without a page cache here (null
        // does no I/O, nfs has no client cache) take direct = true as it is.
        let direct = top.direct.or(defaults::boolean("direct")).unwrap_or(false);
        if let (Got::Ok(true, loc), Some(e)) = (&top.direct, engine) {
            if !e.spec().caps.direct_io {
                let note = format!("engine {} has no direct I/O (O_DIRECT)", e.name());
                let with = Capability::DirectIo.engines_with();
                self.err(loc, "direct", format!("direct = false with engine {}, or engine {with}", e.name()), note);
            }
        }
        // Warming reads the files through this host's page cache: an engine whose files are
        // on a server (ioscope's own client, no client cache) has none to warm.
        if let (Got::Ok(CacheMode::Warm, loc), Some(e)) = (&top.cache, engine) {
            if e.spec().caps.target.is_some() {
                let note = format!(
                    "engine {} reads and writes through ioscope's own client, which keeps no page cache on this host",
                    e.name()
                );
                self.err(loc, "cache", "cache = \"cold\" or \"as-is\" with this engine", note);
            }
        }
        let align = engine.map_or(0, |e| e.spec().caps.direct_align_bytes);
        if direct && align > 0 {
            for e in run.all_bs.iter().filter(|e| e.bs.bytes % align != 0) {
                let note = format!(
                    "direct = true (O_DIRECT, {}) needs block sizes that are multiples of {align} bytes; {} is not",
                    top.direct.loc().describe(text),
                    e.bs.bytes
                );
                self.err(&e.loc.clone(), "bs", format!("a multiple of {align} bytes with direct = true"), note);
            }
        }
        run.direct = direct;
    }
}
