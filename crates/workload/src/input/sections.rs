//! The section tables: the one flat workload or each `[[workload]]`, the `[dataset]`, each
//! `[[probe]]` and `[[check]]`: read, with the rules inside one table.

use super::*;

impl<'a> Ctx<'a> {
    /// `--set workload.KEY` and `--set probe.KEY` change every [[workload]] or [[probe]] of
    /// the file; with none there, they would change nothing, which is refused, not ignored.
    pub(super) fn sets_need_their_sections(&mut self, workloads: usize) {
        let probes = self.arrays.get("probe").map_or(0, Vec::len);
        let hosts = self.arrays.get("host").map_or(0, Vec::len);
        let sets: Vec<(&str, &str)> = self.sets.iter().map(|(k, _, t)| (*k, *t)).collect();
        for (key, text) in sets {
            let Some((section, inner)) = key.split_once('.') else { continue };
            let note = match section {
                "workload" if workloads == 0 => {
                    let file = if self.file.is_some() { "the workload file has" } else { "there is" };
                    let mut note = format!("{file} no [[workload]] section, so `{key}` would change nothing");
                    if ["rw", "rwmix_read", "bs", "threads", "name"]
                        .iter()
                        .chain(&crate::access::KEYS)
                        .any(|k| *k == inner)
                    {
                        note.push_str(&format!(
                            "\nthe one workload of a file without [[workload]] takes the top-level key: --set {inner}={text}"
                        ));
                    }
                    note
                }
                "host" if hosts == 0 => {
                    let file = if self.file.is_some() { "the workload file has" } else { "there is" };
                    format!("{file} no [[host]] section, so `{key}` would change nothing (a host is a [[host]] table with its address, or --hosts)")
                }
                "probe" if probes == 0 => {
                    let file = if self.file.is_some() { "the workload file has" } else { "there is" };
                    format!("{file} no [[probe]] section, so `{key}` would change nothing (a probe is a [[probe]] table with its command and at)")
                }
                _ => continue,
            };
            let loc = Loc::Flag { flag: "--set".into(), text: format!("{key}={text}") };
            self.err(&loc, key, format!("a [[{section}]] section in the workload file for {section}.* keys"), note);
        }
    }

    /// The one workload of a file without [[workload]]: `rw`, `rwmix_read`, `bs`, `threads`.
    pub(super) fn flat_workload(&mut self, has_dataset: bool) -> Option<ParsedWorkload> {
        let (rw_g, rw_skip) = self.rw_and_skip("rw");
        let rwmix_g = self.int("rwmix_read", 0, 100);
        let bs_g = self.block_sizes("bs");
        let threads_g = self.int("threads", 1, 4096);
        let name_g = self.text_value("name", "a name like \"job1\"");
        let text = self.text();
        // rwmix_read only means something for randrw (and rw, its sequential form).
        if let (Got::Ok(_, loc), Some(rw)) = (&rwmix_g, rw_g.or(defaults::choice("rw", RWS))) {
            if !rw.is_mixed() {
                let note = format!(
                    "rwmix_read applies only to rw = randrw or rw, and rw is {} ({}): remove rwmix_read, or set rw = \"randrw\"",
                    rw.name(),
                    rw_g.loc().describe(text)
                );
                self.err(loc, "rwmix_read", "no rwmix_read unless rw = \"randrw\"", note);
            }
        }
        let rw = rw_g.or(defaults::choice("rw", RWS))?;
        let read_pct = match (rw, &rwmix_g) {
            (rw, Got::Ok(pct, _)) if rw.is_mixed() => *pct as u8,
            (rw, _) if rw.is_mixed() => defaults::number("rwmix_read") as u8,
            (rw, _) => rw.default_read_pct(),
        };
        let bs = bs_g.or(defaults::block_size("bs"))?;
        let access =
            self.access("", access::Context { random: rw.is_random(), tree: has_dataset, pattern: false, rw_skip });
        Some(ParsedWorkload {
            name_loc: name_g.loc(),
            flow_loc: Loc::Default,
            workload: Workload {
                name: name_g.or(rw.name().to_string())?,
                operation: if read_pct > 0 { Operation::Read } else { Operation::Write },
                read_pct,
                block_sizes: bs.iter().map(|e| e.bs).collect(),
                fileio: if rw.is_random() { FileIo::Random } else { FileIo::Sequential },
                fileselect: if has_dataset || rw.is_random() { FileSelect::Random } else { FileSelect::Sequential },
                threads: threads_g.or(defaults::number("threads"))? as u32,
                skew_pct: None,
                pattern: None,
                access: access?,
                content: Default::default(),
                iodepth: None,
                sync: None,
                direct: None,
                rate_iops: None,
                phase: None,
                flow: Vec::new(),
                flow_rate: None,
            },
            bs,
            skew_loc: Loc::Default,
            own_locs: super::own::OwnLocs::default(),
        })
    }

    /// One [[workload]] table (keys "workload.*" of entry `i`).
    pub(super) fn workload(&mut self, i: usize, has_dataset: bool) -> Option<ParsedWorkload> {
        let name_g = self.text_value("workload.name", "a name like \"seqread\"");
        let op_g = self.choice("workload.operation", OPERATIONS);
        let (rw_g, rw_skip) = self.rw_and_skip("workload.rw");
        let rwmix_g = self.int("workload.rwmix_read", 0, 100);
        let bs_g = self.block_sizes("workload.bs");
        let fileio_g = self.choice("workload.fileio", FILEIOS);
        let fileselect_g = self.fileselect("workload.fileselect");
        let threads_g = self.int("workload.threads", 1, 4096);
        let skew_g = self.percent("workload.skew");
        let pattern_g = self.pattern("workload.pattern");
        let flow_g = self.flow_steps("workload.flow");
        let flow_rate_g = self.int("workload.flow_rate", 1, 10_000_000);
        let own = self.own_io();
        let replaced = [
            (op_g.loc(), "operation"),
            (rw_g.loc(), "rw"),
            (rwmix_g.loc(), "rwmix_read"),
            (bs_g.loc(), "bs"),
            (fileio_g.loc(), "fileio"),
            (pattern_g.loc(), "pattern"),
            (own.locs.iodepth.clone(), "iodepth"),
            (own.locs.sync.clone(), "sync"),
            (own.locs.rate.clone(), "rate_iops"),
        ];
        self.flow_rules(&flow_g, &replaced, has_dataset);
        if let (Got::Ok(_, loc), false) = (&flow_rate_g, matches!(flow_g, Got::Ok(..))) {
            let note = "flow_rate is the rounds per second of a flow; a workload of one operation has rate_iops";
            self.err(loc, "workload.flow_rate", "flow_rate with a flow", note);
        }
        for (other, key) in [(op_g.loc(), "operation"), (fileio_g.loc(), "fileio")] {
            if let (Got::Ok(_, loc), false) = (&rw_g, matches!(other, Loc::Default)) {
                let note = format!("rw names the operation and the file I/O order at once; `{key}` is also set");
                self.err(loc, "workload.rw", format!("either rw or {key}, not both"), note);
            }
        }
        let op = match &rw_g {
            Got::Ok(rw, _) => Some(if rw.default_read_pct() > 0 { Operation::Read } else { Operation::Write }),
            _ => op_g.or(defaults::choice("workload.operation", OPERATIONS)),
        };
        if let (Some(op), Got::Ok(_, loc)) = (op, &op_g) {
            if !op.transfers() && !has_dataset {
                let note = format!(
                    "`{}` works on the files and directories of a [dataset]; without one, only read and write apply",
                    op.name()
                );
                self.err(loc, "workload.operation", "read or write without a [dataset]", note);
            }
        }
        if let (Some(op), Got::Ok(_, loc)) = (op, &rwmix_g) {
            if !op.transfers() {
                let note = format!("rwmix_read mixes reads and writes; the operation is {}", op.name());
                self.err(loc, "workload.rwmix_read", "rwmix_read only with operation read or write", note);
            }
        }
        if let (Got::Ok(_, loc), true) = (&pattern_g, has_dataset || op.is_some_and(|o| !o.transfers())) {
            self.err(loc, "workload.pattern", "a pattern only for read or write on the flat working set", "");
        }
        let read_pct = match (&rwmix_g, &rw_g, op) {
            (Got::Ok(p, _), _, _) => *p as u8,
            (_, Got::Ok(rw, _), _) if rw.is_mixed() => defaults::number("workload.rwmix_read") as u8,
            (_, Got::Ok(rw, _), _) => rw.default_read_pct(),
            (_, _, Some(Operation::Write)) => 0,
            _ => 100,
        };
        let fileio = match &rw_g {
            Got::Ok(rw, _) => FileIo::from_random(rw.is_random()),
            _ => fileio_g.or(if has_dataset {
                FileIo::Sequential
            } else {
                defaults::choice("workload.fileio", FILEIOS)
            })?,
        };
        let flow = flow_g.or(Vec::new())?;
        // A flow's transfers are its steps' sizes (the buffers are sized for the largest).
        let bs = match flow.iter().map(|s| s.bytes).max().filter(|b| *b > 0) {
            Some(bytes) => vec![BsEntry { bs: BlockSize { bytes, weight: 1 }, loc: flow_g.loc() }],
            None => bs_g.or(defaults::block_size("workload.bs"))?,
        };
        let cx = access::Context {
            random: fileio == FileIo::Random,
            tree: has_dataset,
            pattern: matches!(pattern_g, Got::Ok(..)),
            rw_skip,
        };
        let access = self.access("workload.", cx);
        Some(ParsedWorkload {
            name_loc: name_g.loc(),
            flow_loc: flow_g.loc(),
            skew_loc: skew_g.loc(),
            workload: Workload {
                name: name_g.or(format!("workload{}", i + 1))?,
                operation: op?,
                read_pct,
                block_sizes: bs.iter().map(|e| e.bs).collect(),
                fileio,
                fileselect: fileselect_g.or(defaults::choice("workload.fileselect", FILESELECTS))?,
                threads: threads_g.or(defaults::number("workload.threads"))? as u32,
                skew_pct: match skew_g {
                    Got::Ok(s, _) => Some(s),
                    Got::Absent => None,
                    Got::Bad => return None,
                },
                pattern: match pattern_g {
                    Got::Ok(p, _) => Some(p),
                    Got::Absent => None,
                    Got::Bad => return None,
                },
                access: access?,
                content: Default::default(),
                iodepth: own.iodepth,
                sync: own.sync,
                direct: own.direct,
                rate_iops: own.rate_iops,
                phase: own.phase,
                flow,
                flow_rate: flow_rate_g.opt()?,
            },
            own_locs: own.locs,
            bs,
        })
    }

    /// The [dataset] table. Some(None) never: a present dataset is Some(Some) or None (bad).
    pub(super) fn dataset(
        &mut self,
        top_dir: &Got<PathBuf>,
        engine: Option<EngineKind>,
        on_target: Option<(TargetRule, Option<&Target>)>,
    ) -> Option<Option<Dataset>> {
        let dir_g = self.dir("dataset.dir");
        let name_g = self.set_name("dataset.name");
        let shape = self.tree_shape("dataset");
        let total_g = self.size("dataset.total_size");
        let ws_g = self.size("dataset.working_set");
        let format_g = self.choice("dataset.format", FORMATS);
        let dir = match (dir_g, top_dir) {
            (dir_g, _) if on_target.is_some() => self.target_anchor(dir_g, engine, on_target),
            (Got::Ok(d, _), _) => Some(d),
            (Got::Absent, Got::Ok(d, _)) => Some(d.clone()),
            (Got::Absent, Got::Absent) => {
                self.err(
                    &Loc::Default,
                    "dataset.dir",
                    "the dataset's anchor directory: dir in [dataset], or the top-level dir",
                    "",
                );
                None
            }
            _ => None,
        };
        let shape = shape?;
        Some(Some(Dataset {
            name: name_g.opt()?,
            dir: dir?,
            total_size_bytes: match total_g {
                Got::Ok(v, _) => Some(v),
                Got::Absent => None,
                Got::Bad => return None,
            },
            working_set_bytes: match ws_g {
                Got::Ok(v, _) => Some(v),
                Got::Absent => None,
                Got::Bad => return None,
            },
            format: format_g.or(defaults::choice("dataset.format", FORMATS))?,
            ..shape
        }))
    }

    /// Each [[fileset]] table: a tree of its own in `dataset`'s anchor, in the directory named
    /// as the set. None when any is bad (or there is one and no dataset).
    pub(super) fn filesets(&mut self, dataset: Option<&Dataset>) -> Option<Vec<(Dataset, Loc)>> {
        let n = self.arrays.get("fileset").map_or(0, Vec::len);
        let mut sets = Vec::new();
        let mut ok = true;
        for i in 0..n {
            self.current = Some(("fileset", i));
            let name_g = self.set_name("fileset.name");
            let shape = self.tree_shape("fileset");
            self.current = None;
            let header = self.arrays.get("fileset").and_then(|a| a.get(i)).and_then(|(s, _)| s.clone());
            let header = header.map_or(Loc::Default, |span| Loc::File { span, shown: "[[fileset]]".into() });
            let name = match name_g {
                Got::Ok(n, _) => Some(n),
                Got::Absent => {
                    self.err(
                        &header,
                        "fileset.name",
                        "name = \"NAME\" in each [[fileset]]",
                        "flow steps name a fileset: \"append 16k in NAME\"",
                    );
                    None
                }
                Got::Bad => None,
            };
            match (name, shape, dataset) {
                (Some(name), Some(shape), Some(d)) => {
                    let dir = d.dir.join(&name);
                    sets.push((Dataset { name: Some(name), dir, format: d.format, ..shape }, header));
                }
                (_, _, None) if ok => {
                    let note = "a fileset lives in a directory of the dataset's anchor, beside the dataset's own tree";
                    self.err(&header, "fileset.name", "a [dataset] with the [[fileset]]", note);
                    ok = false;
                }
                _ => ok = false,
            }
        }
        ok.then_some(sets)
    }

    /// A set's `name`: checked as a flow step names it, never a name of the tree's own
    /// directories (`dNN`).
    fn set_name(&mut self, key: &str) -> Got<String> {
        let got = self.text_value(key, crate::flow::SET_NAME_FORM);
        if let Got::Ok(name, loc) = &got {
            let ours = name.len() > 1 && name.starts_with('d') && name[1..].bytes().all(|b| b.is_ascii_digit());
            let why = match crate::flow::SetName::new(name) {
                Err(why) => why,
                Ok(_) if ours => format!("`{name}` is how the tree names its own directories"),
                Ok(_) => return got,
            };
            self.err(loc, key, crate::flow::SET_NAME_FORM, why);
            return Got::Bad;
        }
        got
    }

    /// The keys of a tree's shape in section `sec` (`dataset`, `fileset`): depth, width,
    /// files, sizes and prealloc, the rest of the [`Dataset`] left at its defaults. None
    /// when any is bad.
    fn tree_shape(&mut self, sec: &str) -> Option<Dataset> {
        let key = |k: &str| format!("{sec}.{k}");
        let depth_g = self.int(&key("depth"), 0, 8);
        let width_g = self.int(&key("width"), 1, 10_000);
        let files_g = self.int(&key("files"), 1, 10_000_000);
        let prealloc_g = self.int(&key("prealloc"), 0, 100);
        let gamma_g = self.gamma_sizes(&key("sizes"));
        let sizes_g = match &gamma_g {
            None => self.block_sizes(&key("sizes")),
            Some(Got::Ok(g, loc)) => {
                Got::Ok(g.quantiles().into_iter().map(|bs| BsEntry { bs, loc: loc.clone() }).collect(), loc.clone())
            }
            Some(_) => Got::Bad,
        };
        let (depth, width, files) = (
            depth_g.or(defaults::number("dataset.depth"))?,
            width_g.or(defaults::number("dataset.width"))?,
            files_g.or(defaults::number("dataset.files"))?,
        );
        // Checked: 10000^8 × 10000000 does not fit even in a u128.
        let total = u128::from(width).checked_pow(depth as u32).and_then(|d| d.checked_mul(u128::from(files)));
        if !matches!(total, Some(t) if t <= MAX_DATASET_FILES) {
            let total = total.map_or("more than 10^38".to_string(), |t| t.to_string());
            let note = format!("width^depth × files = {width}^{depth} × {files} = {total} files");
            self.err(&files_g.loc(), &key("files"), format!("at most {MAX_DATASET_FILES} files in all"), note);
            return None;
        }
        Some(Dataset {
            name: None,
            dir: PathBuf::new(),
            depth: depth as u32,
            width: width as u32,
            files: files as u32,
            sizes: sizes_g.or(defaults::block_size("dataset.sizes"))?.into_iter().map(|e| e.bs).collect(),
            total_size_bytes: None,
            working_set_bytes: None,
            format: DatasetFormat::Reuse,
            prealloc_pct: prealloc_g.opt()?.map(|p| p as u8),
            size_gamma: match gamma_g {
                Some(Got::Ok(g, _)) => Some(g),
                _ => None,
            },
        })
    }

    /// With an engine that has a target (nfs, s3, smb) the dataset lives on the server, under the
    /// target: `dataset.dir` is a relative path there (the target's directory itself when
    /// absent), or its URL spelling (`nfs://...`, `s3://...`), which is how the plan keeps it.
    pub(super) fn target_anchor(
        &mut self,
        dir_g: Got<PathBuf>,
        engine: Option<EngineKind>,
        on_target: Option<(TargetRule, Option<&Target>)>,
    ) -> Option<PathBuf> {
        // A missing or malformed target is reported with the target.
        let (rule, Some(t)) = on_target? else { return None };
        let base = PathBuf::from(&t.root);
        let scheme = t.root.split_once("://").map_or(String::new(), |(s, _)| format!("{s}://"));
        let (d, loc) = match dir_g {
            Got::Ok(d, loc) => (d, loc),
            Got::Absent => return Some(base),
            Got::Bad => return None,
        };
        let text = d.to_string_lossy();
        let under = match (rule.parse)(&text) {
            Ok(dt) => Some(PathBuf::from(dt.root)).filter(|p| p.starts_with(&base)),
            Err(_) if text.starts_with(&scheme) => None,
            Err(_) if d.is_absolute() || d.components().any(|c| c == std::path::Component::ParentDir) => None,
            Err(_) => Some(base.join(&d)),
        };
        if under.is_none() {
            let name = engine.map_or("nfs", EngineKind::name);
            let note = format!("with engine {name} the dataset lives on the server, under {}", base.display());
            self.err(&loc, "dataset.dir", TARGET_DATASET_DIR_EXPECTED, note);
        }
        under
    }

    /// One [[check]] table: its expression, which must parse (a malformed one is pointed
    /// at in the file, at the column the check's parser names).
    pub(super) fn check(&mut self, i: usize) -> Option<String> {
        let expected = "a condition like \"read.latency.p99 < 2ms\" (SCOPE.FIGURE OPERATOR VALUE, see docs/checks.md)";
        match self.text_value("check.expr", expected) {
            Got::Ok(text, loc) => match crate::check::Check::parse(&text) {
                Ok(_) => Some(text),
                Err(e) => {
                    let at = self.inside_string(&loc, &text, e.column);
                    self.err(&at, "check.expr", e.expected, format!("in \"{text}\""));
                    None
                }
            },
            Got::Absent => {
                let header = self.arrays.get("check").and_then(|a| a.get(i)).and_then(|(s, _)| s.clone());
                let loc = header.map_or(Loc::Default, |s| self.file_loc(s));
                self.err(&loc, "check.expr", "expr in each [[check]]", "`check.expr` is missing");
                None
            }
            Got::Bad => None,
        }
    }

    /// One [[probe]] table, and where its `at` is written.
    pub(super) fn probe(&mut self, i: usize) -> Option<(Probe, Loc)> {
        let command_g = self.text_value("probe.command", "a shell command, like \"rsync -a /src/ /dst/\"");
        let name_g = self.text_value("probe.name", "a name like \"rsync\"");
        let at_g = self.duration_list("probe.at");
        let timeout_g = self.duration("probe.timeout");
        if matches!(command_g, Got::Absent) || matches!(at_g, Got::Absent) {
            let header = self.arrays.get("probe").and_then(|a| a.get(i)).and_then(|(s, _)| s.clone());
            let loc = header.map_or(Loc::Default, |s| self.file_loc(s));
            let missing = if matches!(command_g, Got::Absent) { "probe.command" } else { "probe.at" };
            self.err(&loc, missing, "command and at in each [[probe]]", format!("`{missing}` is missing"));
            return None;
        }
        let command = command_g.or(String::new())?;
        let default_name =
            command.split_whitespace().next().unwrap_or("probe").rsplit('/').next().unwrap_or("probe").to_string();
        let at_loc = at_g.loc();
        let mut at = at_g.or(Vec::new())?;
        at.sort();
        let probe = Probe {
            name: name_g.or(default_name)?,
            command,
            at,
            timeout: match timeout_g {
                Got::Ok(t, _) => Some(t),
                Got::Absent => None,
                Got::Bad => return None,
            },
        };
        Some((probe, at_loc))
    }
}
