//! Data and files: the dataset or the flat working set (`size`, `files`), what each file must
//! hold, what an object store can write, when syncing means something, and where the files live.

use super::*;

impl<'a> Ctx<'a> {
    /// Reads the data: a dataset tree, or the flat working set.
    pub(super) fn data(&mut self, top: &Top, run: &mut Run) {
        let (engine, target_rule) = (run.engine, run.target_rule);
        let parsed_target = &run.parsed_target;
        let has_dataset = self.entries.keys().any(|k| k.starts_with("dataset."))
            || self.sets.iter().any(|(k, _, _)| k.starts_with("dataset."));
        run.size_g = self.size("size");
        run.files_g = self.int("files", 1, 1_000_000);
        let on_target = target_rule.map(|rule| (rule, parsed_target.as_ref().and_then(|t| t.as_ref().ok())));
        run.dataset = if has_dataset { self.dataset(&top.dir, engine, on_target) } else { Some(None) };
        let dataset = run.dataset.clone().flatten();
        run.filesets = self.filesets(dataset.as_ref());
        if has_dataset {
            for (g, key) in [(run.size_g.loc(), "size"), (run.files_g.loc(), "files")] {
                if !matches!(g, Loc::Default) {
                    let note = format!(
                        "`{key}` sizes the flat working set; with a [dataset], its files and sizes are set there"
                    );
                    self.err(&g, key, "no `size` or `files` with a [dataset]", note);
                }
            }
        }
        run.has_dataset = has_dataset;
    }

    /// A dataset writes whole files: no per-write sync; and opens them through the page
    /// cache: no O_DIRECT (it would be asked for and not done).
    pub(super) fn dataset_sync_rule(&mut self, top: &Top, run: &Run) {
        let has_dataset = run.has_dataset;
        if let (true, Got::Ok(sync, loc)) = (has_dataset, &top.sync) {
            if *sync != SyncMode::None {
                let note = "dataset workloads write whole files through open/write/close; per-write sync applies to the flat working set";
                self.err(loc, "sync", "none with a [dataset]", note);
            }
        }
        let own = run
            .parsed()
            .iter()
            .filter(|w| w.workload.direct == Some(true))
            .map(|w| w.own_locs.direct.clone())
            .collect::<Vec<_>>();
        let top_direct = match &top.direct {
            Got::Ok(true, loc) => Some(loc.clone()),
            _ => None,
        };
        for loc in top_direct.into_iter().chain(own).filter(|_| has_dataset) {
            let note =
                "dataset workloads open their files through the page cache; O_DIRECT applies to the flat working set";
            self.err(&loc, "direct", "false with a [dataset]", note);
        }
    }

    /// Each file of the flat working set holds at least one block of the largest size.
    pub(super) fn file_size_rules(&mut self, run: &Run) {
        let (has_dataset, all_bs) = (run.has_dataset, &run.all_bs);
        // Each file must hold at least one block of the largest size.
        let (size, files) = run.size_files();
        if let (false, Some(size), Some(files), Some(largest)) =
            (has_dataset, size, files, all_bs.iter().max_by_key(|e| e.bs.bytes))
        {
            let max = largest.bs.bytes;
            let need = u128::from(files) * u128::from(max);
            if u128::from(size) < need {
                let why = format!(
                    "each of the {files} file(s) gets size / files = {} and must hold at least one {} block",
                    format_size(size / files),
                    format_size(max)
                );
                if !matches!(run.size_g.loc(), Loc::Default) {
                    let need = u64::try_from(need).map_or("more".to_string(), format_size);
                    let expected = format!("at least {need} (files × largest bs = {files} × {})", format_size(max));
                    self.err(&run.size_g.loc(), "size", expected, why);
                } else if !matches!(run.files_g.loc(), Loc::Default) {
                    let expected = format!(
                        "at most {} files for size {} and bs {}",
                        size / max,
                        format_size(size),
                        format_size(max)
                    );
                    self.err(&run.files_g.loc(), "files", expected, why);
                } else {
                    let expected = format!("at most {} with size {}", format_size(size), format_size(size));
                    self.err(&largest.loc.clone(), "bs", expected, why);
                }
            }
        }
    }

    /// An object store writes whole objects.
    pub(super) fn object_rules(&mut self, top: &Top, run: &Run) {
        let (engine, has_dataset, parsed) = (run.engine, run.has_dataset, run.parsed());
        let (size, files) = run.size_files();
        // An object store writes whole objects: no partial or random writes, no sync, no
        // directories or attributes.
        if let Some(e) = engine.filter(|e| e.spec().caps.objects) {
            let name = e.name();
            if let Got::Ok(sync, loc) = &top.sync {
                if *sync != SyncMode::None {
                    let note = format!("engine {name}: a PUT is durable when it succeeds; there is nothing to sync");
                    self.err(loc, "sync", "none", note);
                }
            }
            if let (false, Some(size), Some(files)) = (has_dataset, size, files) {
                let object = size / files.max(1);
                for w in parsed.iter().filter(|w| w.workload.writes()) {
                    if let Some(b) = w.bs.iter().find(|b| b.bs.bytes != object) {
                        let note = format!(
                            "engine {name} writes whole objects: each write PUTs one object of size / files = {}, so bs must be that size",
                            format_size(object)
                        );
                        self.err(
                            &b.loc.clone(),
                            "bs",
                            format!("{} (the object size) for a workload that writes", format_size(object)),
                            note,
                        );
                    }
                }
            }
            for w in parsed.iter().filter(|_| has_dataset) {
                let op = w.workload.operation;
                let refused = match op {
                    Operation::Mkdir | Operation::Rmdir => {
                        Some("there are no directories to make or remove: a prefix exists while an object is under it")
                    }
                    Operation::Setattr => Some("objects have no attributes to set"),
                    Operation::Write if w.workload.fileio == FileIo::Random => {
                        Some("an object is written whole or in order, part after part: use fileio = \"sequential\"")
                    }
                    _ => None,
                };
                if let Some(why) = refused {
                    let (key, expected) = match op {
                        Operation::Write => ("fileio", "sequential"),
                        _ => ("operation", "read, write, create, delete, open, close, getattr, copy, move or list"),
                    };
                    self.err(
                        &w.name_loc.clone(),
                        key,
                        format!("{expected} with engine {name}"),
                        format!("engine {name}: {why}"),
                    );
                }
            }
        }
    }

    /// Syncing only after writes.
    pub(super) fn sync_rules(&mut self, top: &Top, run: &Run) {
        let (n, parsed, text) = (run.n, run.parsed(), self.text());
        let all_ok = parsed.len() == run.workloads.len();
        if let (Got::Ok(sync, loc), true) = (&top.sync, all_ok) {
            let writes = parsed.iter().any(|w| w.workload.writes())
                || matches!(&top.for_pct, Got::Ok(l, _) if l.iter().any(|p| *p < 100));
            if *sync != SyncMode::None && !writes {
                let note = match (n, parsed.first()) {
                    (0, Some(w)) => format!(
                        "sync applies after writes, and rw = {} ({}) never writes: use rw = write, randwrite or randrw, or sync = \"none\"",
                        w.workload.rw_name(),
                        self.raw("rw").map_or(Loc::Default, |(_, l)| l).describe(text)
                    ),
                    _ => "sync applies after writes, and no workload writes: set rwmix_read below 100 or operation = \"write\", or sync = \"none\"".to_string(),
                };
                self.err(loc, "sync", "none when nothing is written", note);
            }
        }
    }

    /// The files need a home, unless the engine does no I/O.
    pub(super) fn dir_rule(&mut self, top: &Top, run: &Run) {
        let (engine, has_dataset, hosts_dirs) = (run.engine, run.has_dataset, run.hosts_dirs);
        let no_local_files = engine.is_some_and(|e| !e.spec().caps.local_files());
        if matches!(top.dir, Got::Absent) && !has_dataset && !no_local_files && !self.syntax_failed && !hosts_dirs {
            let mut note =
                format!("engine {} reads and writes files in this directory", engine.map_or("posix", |e| e.name()));
            if let Some(f) = self.file {
                note.push_str(&format!("\nneither --dir nor `dir` in {} was given", f.path.display()));
            }
            self.err(&Loc::Default, "dir", DIR_EXPECTED, note);
        }
    }
}
