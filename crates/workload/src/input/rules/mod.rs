//! The rules layer: the values read ([`super::top::Top`], the sections) become a [`Plan`], each
//! rule between keys in the module of its concern. The rules run in one fixed order, which is
//! the order their problems are reported in.

use super::top::Top;
use super::*;

mod amount;
mod content;
mod data;
mod engine;
mod flow;
mod hosts;
mod own;
mod steps;
mod threads;
mod verify;

/// What the rules derive from the values read and share: the engine, the hosts, the data and
/// the workloads.
#[derive(Default)]
pub(super) struct Run {
    /// The engine (posix by default); None when `engine` is bad.
    engine: Option<EngineKind>,
    /// The engine's target rule, when it works on a target (nfs, s3, smb).
    target_rule: Option<TargetRule>,
    /// The target, parsed once; its errors are reported with the other engine rules.
    parsed_target: Option<Result<Target, ioscope_engine_table::InvalidTarget>>,
    /// The target, when it parsed.
    target: Option<Target>,
    /// The run's hosts (empty: a local run); None when any is wrong.
    hosts: Option<Vec<crate::host::HostSpec>>,
    hosts_given: usize,
    /// Every host has its own `dir` (or `target`), in place of the top-level one.
    hosts_dirs: bool,
    hosts_targets: bool,
    /// The run has a `[dataset]` (else the flat working set).
    has_dataset: bool,
    /// `size` and `files` of the flat working set, as read.
    size_g: Got<u64>,
    files_g: Got<u64>,
    dataset: Option<Option<Dataset>>,
    /// Each [[fileset]] and where its header is; None when any is bad.
    filesets: Option<Vec<(Dataset, Loc)>>,
    /// The number of `[[workload]]` tables (0: the one workload of the top-level keys).
    n: usize,
    workloads: Vec<Option<ParsedWorkload>>,
    probes: Vec<Option<(Probe, Loc)>>,
    checks: Vec<Option<String>>,
    /// Some workload draws a pattern.
    patterned: bool,
    /// Every block size the run can use: the workloads' and the for_bs steps'.
    all_bs: Vec<BsEntry>,
    direct: bool,
    verify_block: Option<u32>,
    /// The top-level content keys (the laid-out files, and each workload's default).
    content: Option<crate::content::Content>,
}

impl Run {
    /// The workloads that read without a problem.
    fn parsed(&self) -> Vec<&ParsedWorkload> {
        self.workloads.iter().flatten().collect()
    }
    /// `size` and `files` of the flat working set, defaults applied; None when bad.
    fn size_files(&self) -> (Option<u64>, Option<u64>) {
        (self.size_g.or(defaults::number("size")), self.files_g.or(defaults::number("files")))
    }
}

impl<'a> Ctx<'a> {
    /// Reads every key, applies defaults and the rules between keys. None if anything is wrong
    /// (the diagnostics say what).
    pub(super) fn plan(&mut self) -> Option<Plan> {
        let mut top = self.read_top();
        let mut run = Run::default();
        self.engine_and_target(&mut top, &mut run);
        self.run_hosts(&top, &mut run);
        self.data(&top, &mut run);
        self.sections(&mut run);
        self.repeat_rules(&top, &run);
        self.step_rules(&top, &run);
        self.phase_rules(&top, &run);
        self.depth_rules(&top, &run);
        self.dataset_sync_rule(&top, &run);
        self.capability_rules(&top, &mut run);
        run.all_bs = run.parsed().iter().flat_map(|w| w.bs.iter().cloned()).collect();
        if let Got::Ok(lists, _) = &top.for_bs {
            run.all_bs.extend(lists.iter().flatten().cloned());
        }
        self.file_size_rules(&run);
        self.object_rules(&top, &run);
        self.buffer_and_rate_rules(&top, &run);
        self.own_io_rules(&top, &run);
        self.own_rate_rules(&top, &run);
        self.direct_rules(&top, &mut run);
        self.sync_rules(&top, &run);
        self.verify_rules(&top, &mut run);
        self.flow_run_rules(&top, &mut run);
        self.dir_rule(&top, &run);
        let mut plan = assemble(&top, &run)?;
        own::apply_own_rates(&mut plan);
        self.run_limits(&plan, &top, &run)?;
        self.amount_rules(&plan, &top, &run);
        if !self.diags.is_empty() {
            return None;
        }
        Some(plan)
    }

    /// Workloads: [[workload]] tables, or the one workload of the top-level keys; then the
    /// probes and checks.
    fn sections(&mut self, run: &mut Run) {
        let has_dataset = run.has_dataset;
        run.n = self.arrays.get("workload").map_or(0, Vec::len);
        let (n, workloads) = (run.n, &mut run.workloads);
        if n == 0 {
            workloads.push(self.flat_workload(has_dataset));
        } else {
            for key in ["rw", "rwmix_read", "bs", "threads", "name"].into_iter().chain(crate::access::KEYS) {
                if let Some((_, loc)) = self.raw(key) {
                    let note = format!("with [[workload]] sections, each workload sets its own `{key}`");
                    self.err(&loc, key, format!("`{key}` inside each [[workload]]"), note);
                }
            }
            for i in 0..n {
                self.current = Some(("workload", i));
                workloads.push(self.workload(i, has_dataset));
                self.current = None;
            }
            let mut names: Vec<&str> = Vec::new();
            for w in workloads.iter().flatten() {
                if names.contains(&w.workload.name.as_str()) {
                    self.err(&w.name_loc, "workload.name", "a name no other workload has", "");
                }
                names.push(&w.workload.name);
            }
        }
        self.sets_need_their_sections(n);
        self.content_rules(run);
        run.probes = (0..self.arrays.get("probe").map_or(0, Vec::len))
            .map(|i| {
                self.current = Some(("probe", i));
                let p = self.probe(i);
                self.current = None;
                p
            })
            .collect();
        run.checks = (0..self.arrays.get("check").map_or(0, Vec::len))
            .map(|i| {
                self.current = Some(("check", i));
                let c = self.check(i);
                self.current = None;
                c
            })
            .collect();
    }
}

/// The Plan, from the values read and what the rules derived; None when any is bad.
fn assemble(top: &Top, run: &Run) -> Option<Plan> {
    let steps = Steps {
        for_threads: top.for_threads.or(Vec::new())?.into_iter().map(|t| t as u32).collect(),
        for_iodepth: top.for_iodepth.or(Vec::new())?.into_iter().map(|d| d as u32).collect(),
        for_bs: top.for_bs.or(Vec::new())?.into_iter().map(|e| e.into_iter().map(|e| e.bs).collect()).collect(),
        for_read_pct: top.for_pct.or(Vec::new())?.into_iter().map(|p| p as u8).collect(),
        curve: top.curve.or(Vec::new())?,
        staircase: match (top.staircase.opt()?, &top.duration) {
            // A --duration flag over a file's staircase sets each of its steps' duration.
            (Some(st), Got::Ok(d, Loc::Flag { .. })) if !matches!(top.staircase.loc(), Loc::Flag { .. }) => {
                Some(Staircase { every: *d, ..st })
            }
            (st, _) => st,
        },
    };
    let has_dataset = run.has_dataset;
    let (size, files) = run.size_files();
    let amount = Amount {
        io_size_bytes: top.io_size.opt()?,
        number_ios: top.number_ios.opt()?,
        passes: top.passes.opt()?.map(|p| p as u32),
    };
    Some(Plan {
        engine: run.engine?,
        iodepth: top.iodepth.or(defaults::number("iodepth"))? as u32,
        sqpoll: top.sqpoll.or(defaults::boolean("sqpoll"))?,
        direct: run.direct,
        sync: top.sync.or(defaults::choice("sync", SYNCS))?,
        cache: top.cache.or(defaults::choice("cache", CACHES))?,
        dir: top.dir.or(PathBuf::new())?,
        target: match top.target {
            Got::Bad => return None,
            _ => run.target.clone(),
        },
        size_bytes: if has_dataset { 0 } else { size? },
        size_default: !has_dataset && matches!(run.size_g, Got::Absent),
        files: if has_dataset { 0 } else { files? as u32 },
        dataset: run.dataset.clone()?,
        // A fileset is made, reused or remade as the dataset is (a flow may have set its format).
        filesets: {
            let format = run.dataset.clone()?.map_or(DatasetFormat::Reuse, |d| d.format);
            run.filesets.clone()?.into_iter().map(|(f, _)| Dataset { format, ..f }).collect()
        },
        workloads: run.workloads.iter().map(|w| w.as_ref().map(|w| w.workload.clone())).collect::<Option<Vec<_>>>()?,
        duration: match top.duration {
            // An end by amount without a duration runs until the amount is moved, at most 24h.
            Got::Absent if !amount.is_none() => Duration::from_secs(AMOUNT_MAX_DURATION_S),
            _ => top.duration.or(defaults::secs("duration"))?,
        },
        warmup: top.warmup.or(defaults::secs("warmup"))?,
        rate_iops: top.rate.opt()?,
        steps,
        probes: run.probes.iter().map(|p| p.as_ref().map(|(p, _)| p.clone())).collect::<Option<Vec<_>>>()?,
        force: top.force.or(defaults::boolean("force"))?,
        cleanup: top.cleanup.or(defaults::boolean("cleanup"))?,
        max_errors: top.max_errors.or(defaults::max_errors())?,
        breakdown_top: top.breakdown_top.opt()?.map(|n| n as u32),
        hosts: run.hosts.clone()?,
        on_host_loss: top.on_host_loss.or(defaults::choice("on_host_loss", ON_HOST_LOSS))?,
        host_timeout: top.host_timeout.or(defaults::secs("host_timeout"))?,
        host_share: None,
        checks: run.checks.iter().cloned().collect::<Option<Vec<_>>>()?,
        warmup_auto: top.warmup_auto,
        steady_window_s: top.steady_window.opt()?.map(|d| d.as_secs() as u32),
        until_steady_s: top.until_steady.opt()?.map(|d| d.as_secs() as u32),
        amount,
        precondition: top.precondition.opt()?,
        repeat: top.repeat.opt()?.map(|n| n as u32),
        until_ci: top.until_ci.opt()?,
        verify: top.verify.or(defaults::choice("verify", VERIFY_MODES))?,
        verify_block: match top.verify_block {
            Got::Bad => return None,
            _ => run.verify_block,
        },
        content: run.content?,
    })
}
