//! `ioscope import vdbench`: converts a vdbench parameter file for file-system workloads
//! (`fsd`, `fwd`, `rd`) into an ioscope workload file (TOML, see docs/workload.md).
//! Every parameter ioscope cannot express is reported with its line and column, all at once,
//! and nothing is produced unless the whole file converts.

use crate::canonical::toml_string;
use crate::units::{secs_literal, size_literal};
use std::collections::HashMap;
use std::fmt::Write;

/// One vdbench parameter ioscope cannot express, or a malformed line.
#[derive(Debug, Clone, PartialEq)]
pub struct ImportError {
    /// 1-based line.
    pub line: usize,
    /// 1-based column (in chars) of the start of the parameter, e.g. the `e` of `elapsed=`.
    pub col: usize,
    /// Length in chars of the offending `name=value` text (at least 1).
    pub len: usize,
    /// The parameter's name, e.g. "hotband" or "sd".
    pub parameter: String,
    /// One sentence: what is wrong or why it is unsupported.
    pub message: String,
    /// The expected form or supported alternative.
    pub expected: String,
}

/// Where a parameter's text sits in the file.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Pos {
    line: usize,
    col: usize,
    len: usize,
}

fn error_at(pos: Pos, parameter: &str, message: impl Into<String>, expected: impl Into<String>) -> ImportError {
    let Pos { line, col, len } = pos;
    ImportError { line, col, len, parameter: parameter.into(), message: message.into(), expected: expected.into() }
}

/// One `name=value`. `items` holds the value, split when it is a parenthesised list.
struct Param {
    name: String,
    raw: String,
    items: Vec<String>,
    pos: Pos,
}

impl Param {
    fn err(&self, message: impl Into<String>, expected: impl Into<String>) -> ImportError {
        error_at(self.pos, &self.name, message, expected)
    }
    /// A value that is not a valid number, size, duration or name.
    fn invalid(&self, expected: &str) -> ImportError {
        self.err(format!("`{}` is not a valid value for {}", self.raw, self.name), expected)
    }
    /// A value vdbench knows but ioscope cannot express.
    fn unsupported(&self, expected: &str) -> ImportError {
        self.err(format!("{}={} is not supported by ioscope", self.name, self.raw), expected)
    }
    /// The value as one lowercase keyword ("" when it is a list).
    fn word(&self) -> String {
        if self.items.len() == 1 {
            self.items[0].to_ascii_lowercase()
        } else {
            String::new()
        }
    }
    fn count(&self) -> Result<u64, ImportError> {
        parse_num(&self.word()).ok_or_else(|| self.invalid("a whole number, e.g. 48 or 10k"))
    }
    fn pct(&self) -> Result<u64, ImportError> {
        parse_pct(&self.word()).ok_or_else(|| self.invalid("a percentage from 0 to 100"))
    }
    fn size(&self) -> Result<String, ImportError> {
        match parse_num(&self.word()) {
            Some(n) if n > 0 => Ok(toml_string(&size_literal(n))),
            _ => Err(self.invalid("a size such as 512, 8k, 4m or 100g")),
        }
    }
    fn secs(&self) -> Result<u64, ImportError> {
        parse_secs(&self.word()).ok_or_else(|| self.invalid("seconds, e.g. 600, or with a suffix: 90s, 30m, 20h"))
    }
    /// A size or a weighted list `(8k,60,32k,40)` as ioscope's `"8k:60,32k:40"`.
    fn weighted(&self) -> Result<String, ImportError> {
        let bad = || self.invalid("a size like 8k, or (size,percent,...) pairs such as (8k,60,32k,40)");
        if self.items.len() == 1 {
            return self.size();
        }
        if self.items.len() % 2 != 0 {
            return Err(bad());
        }
        let (mut parts, mut total) = (Vec::new(), 0);
        for pair in self.items.chunks(2) {
            let size = parse_num(&pair[0].to_ascii_lowercase()).filter(|&n| n > 0).ok_or_else(bad)?;
            let pct = parse_pct(&pair[1]).ok_or_else(bad)?;
            total += pct;
            parts.push(format!("{}:{pct}", size_literal(size)));
        }
        if total != 100 {
            return Err(self.err(
                format!("the percentages of {} add up to {total}, not 100", self.name),
                "percentages adding up to 100",
            ));
        }
        Ok(toml_string(&parts.join(",")))
    }
    /// A vdbench for-list (values and `a-b,d` / `a-b,N` ranges) as a TOML array.
    fn for_list(&self, parse: fn(&str) -> Option<u64>, render: fn(u64) -> String) -> Result<String, ImportError> {
        let lower: Vec<String> = self.items.iter().map(|i| i.to_ascii_lowercase()).collect();
        let values = expand(&lower, parse)
            .ok_or_else(|| self.invalid("a list like (1,2,4), or a range (1-64,d) doubling or (0-100,25) stepping"))?;
        Ok(format!("[{}]", values.into_iter().map(render).collect::<Vec<_>>().join(", ")))
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Kind {
    Fsd,
    Fwd,
    Rd,
    /// A host definition: a client host the run also runs on (`[[host]]`).
    Hd,
}

/// One fsd, fwd or rd with its defaults (from `fsd=default` etc.) applied.
#[derive(Clone, Default)]
struct Def {
    name: String,
    pos: Pos,
    /// The vdbench lines it came from, its defaults' first: written above its section.
    src: Vec<String>,
    /// ioscope keys and their TOML values.
    keys: HashMap<String, String>,
    /// Raw values that are checked against other definitions at the end (fsd=, fwd=, rdpct=...).
    refs: HashMap<&'static str, (Vec<String>, Pos)>,
}

impl Def {
    fn set(&mut self, key: &str, value: String) {
        self.keys.insert(key.to_string(), value);
    }
}

const OPERATIONS: [&str; 12] =
    ["read", "write", "create", "delete", "mkdir", "rmdir", "open", "close", "getattr", "setattr", "copy", "move"];
const TOP_KEYS: [&str; 6] = ["dir", "direct", "sync", "compress_ratio", "dedup_ratio", "dedup_unit"];
const RD_KEYS: [&str; 7] = ["duration", "warmup", "rate_iops", "curve", "for_threads", "for_bs", "for_rwmix_read"];
const DATASET_KEYS: [&str; 7] = ["dir", "depth", "width", "files", "sizes", "total_size", "working_set"];
const HOST_KEYS: [&str; 3] = ["name", "address", "user"];
const WORKLOAD_KEYS: [&str; 8] = ["name", "operation", "rwmix_read", "bs", "fileio", "fileselect", "threads", "skew"];

#[derive(Default)]
struct Converter {
    errors: Vec<ImportError>,
    defaults: HashMap<Kind, Def>,
    /// Keys from `openflags`, which ioscope only has at the top level.
    global: Def,
    fsd: Option<Def>,
    fwds: Vec<Def>,
    rd: Option<Def>,
    hds: Vec<Def>,
}

/// Converts a vdbench parameter file into an ioscope workload file, or reports every problem.
pub fn convert(text: &str) -> Result<String, Vec<ImportError>> {
    let mut c = Converter::default();
    for (chars, src) in statements(text) {
        let mut params = split_params(&chars).into_iter().map(|p| p.map_err(|e| c.errors.push(e)).ok());
        // A broken first parameter leaves the line's kind unknown: report only that.
        let Some(Some(head)) = params.next() else { continue };
        let rest: Vec<Param> = params.flatten().collect();
        match head.name.as_str() {
            "fsd" => c.definition(Kind::Fsd, &head, &rest, src),
            "fwd" => c.definition(Kind::Fwd, &head, &rest, src),
            "rd" => c.definition(Kind::Rd, &head, &rest, src),
            "hd" => c.definition(Kind::Hd, &head, &rest, src),
            "sd" | "wd" => {
                let what = match head.name.as_str() {
                    "sd" => "raw storage definitions (sd)",
                    _ => "raw workload definitions (wd)",
                };
                let msg = format!("{what} are not supported: ioscope's vdbench import covers file-system workloads");
                c.errors.push(head.err(msg, "fsd=, fwd= and rd= definitions"));
            }
            // Data validation: ioscope's own (`verify`), with its own header and checks, is
            // not vdbench's; the importer does not turn one into the other.
            "validate" | "data_errors" if head.word() == "no" => {}
            "validate" | "data_errors" => {
                let msg = format!(
                    "{}: ioscope validates data with its own verify = \"fail\" (docs/verify.md), for flat working sets and [dataset] trees alike; import without it, then add verify = \"fail\" to the workload (or run with --verify)",
                    head.name
                );
                c.errors.push(
                    head.err(msg, "no validate or data_errors (then verify = \"fail\" in the imported workload)"),
                );
            }
            "compratio" | "dedupratio" | "dedupunit" => {
                for p in std::iter::once(&head).chain(&rest) {
                    if let Err(e) = c.content(p) {
                        c.errors.push(e);
                    }
                }
            }
            _ => {
                for p in std::iter::once(&head).chain(&rest) {
                    let msg = format!("the general parameter {} is not supported", p.name);
                    c.errors.push(p.err(msg, "fsd=, fwd= and rd= definitions"));
                }
            }
        }
    }
    c.finish()
}

/// A char of the file with its 1-based line and column.
type Located = (char, usize, usize);

/// Joins continuation lines (a line ending in a comma goes on on the next line) and drops
/// comments and blank lines. Each statement's chars keep their (line, column) for errors.
fn statements(text: &str) -> Vec<(Vec<Located>, Vec<String>)> {
    let (mut out, mut chars, mut src) = (Vec::new(), Vec::new(), Vec::new());
    for (i, line) in text.lines().enumerate() {
        let line = line.trim_end();
        let t = line.trim_start();
        if t.is_empty() || t.starts_with(['*', '#', '/']) {
            continue;
        }
        chars.extend(line.chars().enumerate().map(|(c, ch)| (ch, i + 1, c + 1)));
        src.push(line.to_string());
        if !line.ends_with(',') {
            out.push((std::mem::take(&mut chars), std::mem::take(&mut src)));
        }
    }
    if !chars.is_empty() {
        out.push((chars, src));
    }
    out
}

/// Splits a statement at the commas outside parentheses into parameters.
fn split_params(chars: &[Located]) -> Vec<Result<Param, ImportError>> {
    let (mut out, mut depth, mut start) = (Vec::new(), 0usize, 0);
    for i in 0..=chars.len() {
        match chars.get(i).map(|c| c.0) {
            Some('(') => depth += 1,
            Some(')') => depth = depth.saturating_sub(1),
            _ => {}
        }
        if chars.get(i).is_some_and(|c| c.0 != ',' || depth > 0) {
            continue;
        }
        let seg = &chars[start..i];
        start = i + 1;
        let Some(first) = seg.iter().position(|c| !c.0.is_whitespace()) else { continue };
        let last = seg.iter().rposition(|c| !c.0.is_whitespace()).unwrap_or(first);
        let seg = &seg[first..=last];
        let pos = Pos { line: seg[0].1, col: seg[0].2, len: seg.len() };
        let text: String = seg.iter().map(|c| c.0).collect();
        // Whitespace inside a name is dropped: copies from PDFs have `ela psed=72000`.
        let (name, raw) = text.split_once('=').unwrap_or((&text, ""));
        let name: String = name.chars().filter(|c| !c.is_whitespace()).collect::<String>().to_ascii_lowercase();
        let raw = raw.trim().to_string();
        let items: Vec<String> = match raw.strip_prefix('(').and_then(|v| v.strip_suffix(')')) {
            Some(inner) => inner.split(',').map(|v| v.trim().to_string()).collect(),
            None => vec![raw.clone()],
        };
        let param = Param { name, raw, items, pos };
        out.push(if !text.contains('=') || param.name.is_empty() {
            Err(param.err(format!("`{text}` is not a name=value parameter"), "name=value, separated by commas"))
        } else if param.items.iter().any(|i| i.contains(['(', ')'])) {
            Err(param.err("the parentheses in this value do not match", "a value, or a list in parentheses: (a,b,c)"))
        } else {
            Ok(param)
        });
    }
    out
}

impl Converter {
    fn definition(&mut self, kind: Kind, head: &Param, params: &[Param], src: Vec<String>) {
        let label = head.name.as_str();
        let name = match head.items.as_slice() {
            [n] if !n.is_empty() => n.clone(),
            _ => return self.errors.push(head.invalid(&format!("{label}=name"))),
        };
        let is_default = name.eq_ignore_ascii_case("default");
        let mut def = self.defaults.get(&kind).cloned().unwrap_or_default();
        def.src.extend(src);
        (def.name, def.pos) = (name, head.pos);
        for p in params {
            if let Err(e) = self.apply(kind, &mut def, p) {
                self.errors.push(e);
            }
        }
        if is_default {
            self.defaults.insert(kind, def);
            return;
        }
        let slot = match kind {
            Kind::Fsd => &mut self.fsd,
            Kind::Rd => &mut self.rd,
            Kind::Fwd if self.fwds.iter().any(|f| f.name == def.name) => {
                return self
                    .errors
                    .push(head.err(format!("fwd {} is defined twice", def.name), "a unique name for each fwd"));
            }
            Kind::Fwd => return self.fwds.push(def),
            Kind::Hd if self.hds.iter().any(|h| h.name == def.name) => {
                return self
                    .errors
                    .push(head.err(format!("hd {} is defined twice", def.name), "a unique name for each hd"));
            }
            Kind::Hd => return self.hds.push(def),
        };
        if slot.is_some() {
            let why = if kind == Kind::Fsd { "has one dataset" } else { "is one run" };
            let msg = format!("a second {label} is not supported: an ioscope workload file {why}");
            self.errors.push(head.err(msg, format!("one {label} per file (split the file)")));
        } else {
            *slot = Some(def);
        }
    }

    /// The general parameters of data content: `compratio`, `dedupratio` (the same ratios
    /// as ioscope's) and `dedupunit`.
    fn content(&mut self, p: &Param) -> Result<(), ImportError> {
        let ratio = |max: f64| {
            crate::content::parse_ratio(&p.word(), max)
                .map(crate::content::ratio_literal)
                .map_err(|why| p.err(format!("{}: {why}", p.name), crate::content::RATIO_EXPECTED))
        };
        match p.name.as_str() {
            "compratio" => self.global.set("compress_ratio", ratio(crate::content::MAX_COMPRESS_RATIO)?),
            "dedupratio" => self.global.set("dedup_ratio", ratio(crate::content::MAX_DEDUP_RATIO)?),
            "dedupunit" => self.global.set("dedup_unit", p.size()?),
            _ => {
                let msg = format!("the general parameter {} is not supported", p.name);
                return Err(p.err(msg, "compratio, dedupratio or dedupunit"));
            }
        }
        Ok(())
    }

    fn apply(&mut self, kind: Kind, def: &mut Def, p: &Param) -> Result<(), ImportError> {
        let word = p.word();
        // In an rd, vdbench accepts both `threads=` and `forthreads=` (and so on).
        let name = match p.name.as_str() {
            "forthreads" | "forxfersize" | "forrdpct" if kind == Kind::Rd => &p.name[3..],
            n => n,
        };
        match (kind, name) {
            (_, "openflags") => {
                // An fsd is a [dataset], whose files ioscope opens through the page cache and
                // writes whole: O_DIRECT and O_SYNC apply to the flat working set only.
                return Err(p.unsupported(
                    "no openflags: ioscope's dataset workloads open files buffered, without o_direct or o_sync",
                ));
            }
            (Kind::Fsd, "anchor") if p.items.len() == 1 && !p.raw.is_empty() => def.set("dir", toml_string(&p.raw)),
            (Kind::Fsd, "anchor") => return Err(p.invalid("anchor=/path/to/directory")),
            (Kind::Fsd, "depth" | "width" | "files") => def.set(name, p.count()?.to_string()),
            (Kind::Fsd, "sizes") => def.set("sizes", p.weighted()?),
            (Kind::Fsd, "totalsize") => def.set("total_size", p.size()?),
            (Kind::Fsd, "workingsetsize") => def.set("working_set", p.size()?),
            // Each ioscope host works in a directory of its own; files only in the leaf directories.
            (Kind::Fsd, "shared") if word == "no" => {}
            (Kind::Fsd, "shared") => {
                return Err(p.unsupported("shared=no: each ioscope host works in a directory of its own"));
            }
            (Kind::Fsd, "distribution") if word == "bottom" => {}
            (Kind::Fsd, "distribution") => {
                return Err(p.unsupported("distribution=bottom (files in the leaf directories)"));
            }
            (Kind::Fwd, "fsd") => _ = def.refs.insert("fsd", (p.items.clone(), p.pos)),
            (Kind::Fwd, "operation") if OPERATIONS.contains(&word.as_str()) => def.set("operation", toml_string(&word)),
            (Kind::Fwd, "operation") => return Err(p.unsupported(&format!("operation={}", OPERATIONS.join("|")))),
            (Kind::Fwd, "rdpct") => {
                def.set("rwmix_read", p.pct()?.to_string());
                def.refs.insert("rdpct", (p.items.clone(), p.pos));
            }
            (Kind::Fwd, "xfersize") => def.set("bs", p.weighted()?),
            (Kind::Fwd, "fileio" | "fileselect") => {
                let value = match word.as_str() {
                    "sequential" | "seq" => "sequential",
                    "random" => "random",
                    _ => return Err(p.unsupported(&format!("{name}=sequential or {name}=random"))),
                };
                def.set(name, toml_string(value));
            }
            (Kind::Fwd, "skew") => def.set("skew", p.pct()?.to_string()),
            (Kind::Fwd, "threads") => match p.count()? {
                0 => return Err(p.invalid("at least 1 thread")),
                n => def.set("threads", n.to_string()),
            },
            (Kind::Rd, "fwd") => _ = def.refs.insert("fwd", (p.items.clone(), p.pos)),
            (Kind::Rd, "fwdrate") => {
                if word != "max" && word != "curve" && !p.count().is_ok_and(|n| n > 0) {
                    return Err(p.unsupported("fwdrate=N (I/Os per second), fwdrate=max or fwdrate=curve"));
                }
                def.refs.insert("fwdrate", (vec![word], p.pos));
            }
            (Kind::Rd, "curve") => {
                def.set("curve", p.for_list(parse_pct, |n| n.to_string())?);
                def.refs.insert("curve", (p.items.clone(), p.pos));
            }
            (Kind::Rd, "elapsed") => def.set("duration", toml_string(&secs_literal(p.secs()?))),
            (Kind::Rd, "warmup") => def.set("warmup", toml_string(&secs_literal(p.secs()?))),
            // ioscope records every second; other reporting intervals have no equivalent.
            (Kind::Rd, "interval") if p.secs()? == 1 => {}
            (Kind::Rd, "interval") => return Err(p.unsupported("interval=1: ioscope records every second")),
            (Kind::Rd, "format") => {
                let value = match word.as_str() {
                    "no" => "never",
                    "yes" => "always",
                    "restart" => "reuse",
                    _ => return Err(p.unsupported("format=no, format=yes or format=restart")),
                };
                def.set("format", toml_string(value));
            }
            (Kind::Rd, "threads") => {
                def.set("for_threads", p.for_list(|s| parse_num(s).filter(|&n| n > 0), |n| n.to_string())?)
            }
            (Kind::Rd, "xfersize") => {
                def.set("for_bs", p.for_list(|s| parse_num(s).filter(|&n| n > 0), |n| toml_string(&size_literal(n)))?)
            }
            (Kind::Rd, "rdpct") => def.set("for_rwmix_read", p.for_list(parse_pct, |n| n.to_string())?),
            (Kind::Hd, "system") => {
                // Noted, so that a bad one is not also reported as missing.
                def.refs.insert("system", (p.items.clone(), p.pos));
                match crate::host::parse_address(&p.raw) {
                    Ok((crate::host::HostKind::Ssh { .. }, _)) if p.items.len() == 1 => {
                        def.set("address", toml_string(&p.raw))
                    }
                    _ => return Err(p.invalid("system=hostname (or an IP address), reached over ssh")),
                }
            }
            (Kind::Hd, "user") => match crate::host::check_user(&p.raw) {
                Ok(()) if p.items.len() == 1 => def.set("user", toml_string(&p.raw)),
                _ => return Err(p.invalid("user=login name")),
            },
            (Kind::Hd, "shell") if word == "ssh" => {}
            (Kind::Hd, "shell") => {
                return Err(p.unsupported("shell=ssh: ioscope starts its agents with the system's ssh"));
            }
            // The path of vdbench on the host: ioscope copies itself there instead.
            (Kind::Hd, "vdbench") => {}
            _ => {
                let supported = match kind {
                    Kind::Fsd => "anchor, depth, width, files, sizes, totalsize, workingsetsize, openflags",
                    Kind::Fwd => "fsd, operation, rdpct, xfersize, fileio, fileselect, skew, threads, openflags",
                    Kind::Rd => {
                        "fwd, fwdrate, curve, elapsed, warmup, interval, format, forthreads, forxfersize, forrdpct"
                    }
                    Kind::Hd => "system, user, shell=ssh, vdbench (ignored: ioscope copies itself to the host)",
                };
                let msg = format!("{} is not a parameter ioscope supports here", p.name);
                return Err(p.err(msg, format!("one of: {supported}")));
            }
        }
        Ok(())
    }

    /// Checks what spans definitions, then writes the TOML.
    fn finish(mut self) -> Result<String, Vec<ImportError>> {
        let mut errors = std::mem::take(&mut self.errors);
        let fsd_name = self.fsd.as_ref().map(|f| f.name.clone());
        if let Some(fsd) = self.fsd.as_ref().filter(|f| !f.keys.contains_key("dir")) {
            errors.push(error_at(fsd.pos, "fsd", format!("fsd {} has no anchor", fsd.name), "anchor=/path/to/dir"));
        }
        for f in &self.fwds {
            match f.refs.get("fsd") {
                None => errors.push(error_at(f.pos, "fwd", format!("fwd {} names no fsd", f.name), "fsd=<fsd name>")),
                Some((names, pos)) if names.len() != 1 || Some(&names[0]) != fsd_name.as_ref() => {
                    let msg = format!("fwd {} uses fsd {}, which is not the file's one fsd", f.name, names.join(","));
                    errors.push(error_at(
                        *pos,
                        "fsd",
                        msg,
                        format!("fsd={}", fsd_name.as_deref().unwrap_or("<fsd name>")),
                    ));
                }
                _ => {}
            }
            let op = f.keys.get("operation").map_or("\"read\"", String::as_str);
            if let (Some((_, pos)), false) = (f.refs.get("rdpct"), op == "\"read\"" || op == "\"write\"") {
                let msg = format!("rdpct applies only to read and write, not operation={}", op.trim_matches('"'));
                errors.push(error_at(*pos, "rdpct", msg, "operation=read or operation=write"));
            }
        }
        for h in self.hds.iter().filter(|h| !h.refs.contains_key("system")) {
            errors.push(error_at(h.pos, "hd", format!("hd {} has no system", h.name), "system=hostname"));
        }
        let Some(mut rd) = self.rd.take() else {
            let msg = "the file has no run definition (rd=)";
            errors.push(error_at(Pos { line: 1, col: 1, len: 1 }, "rd", msg, "rd=name,fwd=(...),elapsed=..."));
            return Err(dedup(errors));
        };
        // The workloads are the fwds the rd names (`fwd*` matches by prefix), in its order.
        let mut chosen: Vec<&Def> = Vec::new();
        match rd.refs.get("fwd") {
            None => errors.push(error_at(rd.pos, "rd", format!("rd {} names no fwd", rd.name), "fwd=(name1,name2)")),
            Some((names, pos)) => {
                for n in names {
                    let hits: Vec<&Def> = match n.strip_suffix('*') {
                        Some(prefix) => self.fwds.iter().filter(|f| f.name.starts_with(prefix)).collect(),
                        None => self.fwds.iter().filter(|f| &f.name == n).collect(),
                    };
                    if hits.is_empty() {
                        errors.push(error_at(
                            *pos,
                            "fwd",
                            format!("fwd {n} is not defined"),
                            "the name of a defined fwd",
                        ));
                    }
                    for h in hits {
                        if !chosen.iter().any(|c| c.name == h.name) {
                            chosen.push(h);
                        }
                    }
                }
            }
        }
        let rate = rd.refs.get("fwdrate").map(|(w, _)| w[0].clone()).unwrap_or_default();
        if rate == "curve" {
            rd.keys.entry("curve".into()).or_insert_with(|| "true".into());
        } else if let Some((_, pos)) = rd.refs.get("curve") {
            errors.push(error_at(*pos, "curve", "curve= applies only with fwdrate=curve", "fwdrate=curve"));
        } else if let Some(n) = parse_num(&rate) {
            rd.set("rate_iops", n.to_string());
        }
        // vdbench runs 30 s without `elapsed`, ioscope 60 s: say it.
        rd.keys.entry("duration".into()).or_insert_with(|| toml_string("30s"));
        if !errors.is_empty() {
            return Err(dedup(errors));
        }

        let mut out = String::from("# Converted from vdbench parameter file by ioscope import vdbench.\n");
        let _ = writeln!(out, "description = {}\nengine = \"posix\"", toml_string(&format!("vdbench: {}", rd.name)));
        let mut top = self.global.clone();
        // vdbench's dedupunit defaults to 128k.
        if top.keys.contains_key("dedup_ratio") && !top.keys.contains_key("dedup_unit") {
            top.set("dedup_unit", toml_string("128k"));
        }
        let fsd = self.fsd.as_ref().expect("every fwd names the fsd and the rd names an fwd");
        top.keys.extend(fsd.keys.get("dir").map(|d| ("dir".to_string(), d.clone())));
        emit(&mut out, &top, &TOP_KEYS, None);
        emit(&mut out, &rd, &RD_KEYS, Some(""));
        let mut dataset = fsd.clone();
        dataset.keys.extend(rd.keys.get("format").map(|f| ("format".to_string(), f.clone())));
        emit(&mut out, &dataset, &[&DATASET_KEYS[..], &["format"]].concat(), Some("[dataset]"));
        for f in chosen {
            let mut f = f.clone();
            f.set("name", toml_string(&f.name));
            emit(&mut out, &f, &WORKLOAD_KEYS, Some("[[workload]]"));
        }
        for h in &self.hds {
            let mut h = h.clone();
            h.set("name", toml_string(&h.name));
            emit(&mut out, &h, &HOST_KEYS, Some("[[host]]"));
        }
        Ok(out)
    }
}

/// Writes a definition's keys in a fixed order; with a header, after a blank line and its
/// vdbench source lines as comments.
fn emit(out: &mut String, def: &Def, order: &[&str], header: Option<&str>) {
    if let Some(header) = header {
        out.push('\n');
        for line in &def.src {
            // TOML comments may not hold control characters other than tab.
            let line: String = line.trim().chars().map(|c| if c.is_control() && c != '\t' { '?' } else { c }).collect();
            let _ = writeln!(out, "# {line}");
        }
        if !header.is_empty() {
            let _ = writeln!(out, "{header}");
        }
    }
    for key in order {
        if let Some(v) = def.keys.get(*key) {
            let _ = writeln!(out, "{key} = {v}");
        }
    }
}

/// Drops repeats (a default's error shows once per definition inheriting it) and sorts by position.
fn dedup(errors: Vec<ImportError>) -> Vec<ImportError> {
    let mut out: Vec<ImportError> = Vec::new();
    for e in errors {
        if !out.contains(&e) {
            out.push(e);
        }
    }
    out.sort_by_key(|e| (e.line, e.col));
    out
}

/// A whole number with an optional unit suffix (lowercase input), scaled by the unit.
fn scaled(s: &str, units: &[(char, u64)]) -> Option<u64> {
    let (digits, unit) = match units.iter().find(|(c, _)| s.ends_with(*c)) {
        Some(&(c, unit)) => (&s[..s.len() - c.len_utf8()], unit),
        None => (s, 1),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse::<u64>().ok()?.checked_mul(unit)
}

/// A count or size: binary suffixes k, m, g, t.
fn parse_num(s: &str) -> Option<u64> {
    scaled(s, &[('k', 1 << 10), ('m', 1 << 20), ('g', 1 << 30), ('t', 1 << 40)])
}

/// Seconds, or with a suffix s, m or h.
fn parse_secs(s: &str) -> Option<u64> {
    scaled(s, &[('s', 1), ('m', 60), ('h', 3600)])
}

fn parse_pct(s: &str) -> Option<u64> {
    s.parse::<u64>().ok().filter(|&n| n <= 100)
}

/// Expands a vdbench for-list: plain values, and ranges `a-b` followed by a step, `d` to
/// double or an increment: (1-8,d) is 1,2,4,8 and (0-100,25) is 0,25,50,75,100.
fn expand(items: &[String], parse: fn(&str) -> Option<u64>) -> Option<Vec<u64>> {
    const MAX_STEPS: usize = 1000;
    let mut out = Vec::new();
    let mut it = items.iter();
    while let Some(item) = it.next() {
        let Some((a, b)) = item.split_once('-') else {
            out.push(parse(item)?);
            continue;
        };
        let (mut v, end, step) = (parse(a.trim())?, parse(b.trim())?, it.next()?);
        let inc = if step == "d" { None } else { Some(parse(step).filter(|&n| n > 0)?) };
        if v > end || (inc.is_none() && v == 0) {
            return None;
        }
        while v <= end {
            // Checked here, not after the loop: (1-999999999,1) must not build a huge list first.
            if out.len() == MAX_STEPS {
                return None;
            }
            out.push(v);
            v = match inc {
                Some(n) => v.checked_add(n)?,
                None => v.checked_mul(2)?,
            };
        }
    }
    (!out.is_empty()).then_some(out)
}

/// Converts a vdbench parameter file; every problem as a [`crate::Diagnostic`] pointing
/// at the parameter in the file.
pub fn import(file: &crate::SourceFile) -> Result<String, Vec<crate::Diagnostic>> {
    convert(&file.text).map_err(|errors| {
        let omitted = errors.len().saturating_sub(crate::diagnostic::MAX_DIAGNOSTICS);
        let mut diags: Vec<crate::Diagnostic> = errors
            .into_iter()
            .take(crate::diagnostic::MAX_DIAGNOSTICS)
            .map(|e| {
                // Line and column (chars) to a byte span.
                let line_start: usize = file.text.split_inclusive('\n').take(e.line - 1).map(str::len).sum();
                let line = file.text[line_start..].lines().next().unwrap_or("");
                let byte = |col: usize| line.char_indices().nth(col).map_or(line.len(), |(b, _)| b);
                let (start, end) = (byte(e.col - 1), byte(e.col - 1 + e.len.max(1)));
                let value = line.get(start..end).unwrap_or("").to_string();
                crate::Diagnostic::in_file(
                    &file.path,
                    &file.text,
                    line_start + start..line_start + end.max(start),
                    e.parameter.clone(),
                    value,
                    e.expected,
                    e.message,
                )
            })
            .collect();
        if omitted > 0 {
            diags.push(crate::Diagnostic::omitted(omitted));
        }
        diags
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEED: &str = "\
fsd=fsd1,anchor=/data_remote/test,depth=2,width=8,files=10000,sizes=(8k,60,32k, 25,512k,10,4m,5)
fwd=fwd1,fsd=fsd1,operation=read,skew=50,xfersize= 8k,fileio=sequential,fileselect=random,threads=48
fwd=fwd2,fsd=fsd1,operation=read,skew=50,xfersize= 8k,fileio=random,fileselect=random,threads=48
rd=rd1,fwd=(fwd1,fwd2),fwdrate=10000,format=no,ela psed=72000,interval=1
";

    const HEAD: &str = "fsd=fsd1,anchor=/d,depth=1,width=1,files=1,sizes=8k\n";

    fn toml(text: &str) -> toml::Table {
        let out = convert(text).unwrap_or_else(|e| panic!("conversion failed: {e:#?}"));
        out.parse::<toml::Table>().unwrap_or_else(|e| panic!("not TOML: {e}\n{out}"))
    }

    fn errors(text: &str) -> Vec<ImportError> {
        convert(text).expect_err("should not convert")
    }

    #[test]
    fn vdbench_data_validation_is_refused_naming_verify_and_why() {
        let e = convert("validate=yes\nfsd=fsd1,anchor=/d,depth=1,width=1,files=10,size=4k\n").unwrap_err();
        assert!(e.iter().any(|x| x.message.contains("verify = \"fail\"")), "{e:?}");
        let e = convert("data_errors=1\nfsd=fsd1,anchor=/d,depth=1,width=1,files=10,size=4k\n").unwrap_err();
        assert!(e.iter().any(|x| x.parameter == "data_errors"), "{e:?}");
    }

    #[test]
    fn seed_file_converts() {
        let out = convert(SEED).unwrap();
        let expected = r#"# Converted from vdbench parameter file by ioscope import vdbench.
description = "vdbench: rd1"
engine = "posix"
dir = "/data_remote/test"

# rd=rd1,fwd=(fwd1,fwd2),fwdrate=10000,format=no,ela psed=72000,interval=1
duration = "20h"
rate_iops = 10000

# fsd=fsd1,anchor=/data_remote/test,depth=2,width=8,files=10000,sizes=(8k,60,32k, 25,512k,10,4m,5)
[dataset]
dir = "/data_remote/test"
depth = 2
width = 8
files = 10000
sizes = "8k:60,32k:25,512k:10,4m:5"
format = "never"

# fwd=fwd1,fsd=fsd1,operation=read,skew=50,xfersize= 8k,fileio=sequential,fileselect=random,threads=48
[[workload]]
name = "fwd1"
operation = "read"
bs = "8k"
fileio = "sequential"
fileselect = "random"
threads = 48
skew = 50

# fwd=fwd2,fsd=fsd1,operation=read,skew=50,xfersize= 8k,fileio=random,fileselect=random,threads=48
[[workload]]
name = "fwd2"
operation = "read"
bs = "8k"
fileio = "random"
fileselect = "random"
threads = 48
skew = 50
"#;
        assert_eq!(out, expected);
        let t = toml(SEED);
        assert_eq!(t["rate_iops"].as_integer(), Some(10000));
        assert_eq!(t["duration"].as_str(), Some("20h"));
        assert_eq!(t["dataset"]["sizes"].as_str(), Some("8k:60,32k:25,512k:10,4m:5"));
        assert_eq!(t["dataset"]["format"].as_str(), Some("never"));
        let w = t["workload"].as_array().unwrap();
        let names: Vec<_> = w.iter().map(|w| w["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["fwd1", "fwd2"]);
        assert_eq!(w[1]["fileio"].as_str(), Some("random"));
    }

    #[test]
    fn unsupported_parameter_has_its_position() {
        let text = format!("{HEAD}fwd=fwd1,fsd=fsd1,hotband=(10,20),operation=read\nrd=rd1,fwd=fwd1\n");
        let e = errors(&text);
        assert_eq!(e.len(), 1, "{e:#?}");
        assert_eq!((e[0].line, e[0].col, e[0].len), (2, 19, "hotband=(10,20)".len()));
        assert_eq!(e[0].parameter, "hotband");
        assert!(e[0].expected.contains("fileselect"), "{}", e[0].expected);
    }

    #[test]
    fn all_errors_are_collected() {
        let text = "\
sd=sd1,lun=/dev/sdb
fsd=fsd1,anchor=/a,sizes=(8k,50,16k,40)
fsd=fsd2,anchor=/b
fwd=fwd1,fsd=fsd1,fileio=(random,shared),stopafter=100,operation=read,rdpct=70
fwd=fwd2,fsd=fsd2,operation=mkdir,rdpct=50
rd=rd1,fwd=(fwd1,nope),interval=5,elapsed=1x,openflags=o_trunc
rd=rd2,fwd=fwd1
";
        let e = errors(text);
        let got: Vec<(usize, usize, &str)> = e.iter().map(|e| (e.line, e.col, e.parameter.as_str())).collect();
        assert_eq!(
            got,
            [
                (1, 1, "sd"),
                (2, 20, "sizes"),
                (3, 1, "fsd"),
                (4, 19, "fileio"),
                (4, 42, "stopafter"),
                (5, 10, "fsd"),
                (5, 35, "rdpct"),
                (6, 8, "fwd"),
                (6, 24, "interval"),
                (6, 35, "elapsed"),
                (6, 46, "openflags"),
                (7, 1, "rd"),
            ]
        );
    }

    #[test]
    fn continuations_comments_defaults_and_steps() {
        let text = "\
* vdbench comment
# another comment
// and another

FSD=fsd1,ANCHOR=/mnt/x,
   depth=1,width=2,
   * a comment inside the continuation
   files=3,sizes=(4k,50,
   8k,50)
fwd=default,fsd=fsd1,threads=4,xfersize=(4k,50,64k,50)
fwd=wr,operation=write,rdpct=30,fileselect=seq
fwd=rd,operation=read,threads=8,xfersize=16k
rd=run,fwd=*,fwdrate=curve,elapsed=90,warmup=30m,forthreads=(1-8,d),forxfersize=(4k-16k,4k),forrdpct=(0-100,50),
   format=yes
";
        let t = toml(text);
        assert_eq!(t["dir"].as_str(), Some("/mnt/x"));
        assert_eq!(t["duration"].as_str(), Some("90s"));
        assert_eq!(t["warmup"].as_str(), Some("30m"));
        assert_eq!(t["curve"].as_bool(), Some(true));
        assert_eq!(t["for_threads"], toml::Value::Array(vec![1.into(), 2.into(), 4.into(), 8.into()]));
        assert_eq!(t["for_bs"], toml::Value::Array(vec!["4k".into(), "8k".into(), "12k".into(), "16k".into()]));
        assert_eq!(t["for_rwmix_read"], toml::Value::Array(vec![0.into(), 50.into(), 100.into()]));
        assert_eq!(t["dataset"]["sizes"].as_str(), Some("4k:50,8k:50"));
        assert_eq!(t["dataset"]["files"].as_integer(), Some(3));
        assert_eq!(t["dataset"]["format"].as_str(), Some("always"));
        let w = t["workload"].as_array().unwrap();
        // fwd=default gives both workloads fsd, threads and xfersize; their own lines override.
        assert_eq!((w[0]["name"].as_str(), w[0]["threads"].as_integer()), (Some("wr"), Some(4)));
        assert_eq!((w[0]["bs"].as_str(), w[0]["rwmix_read"].as_integer()), (Some("4k:50,64k:50"), Some(30)));
        assert_eq!(w[0]["fileselect"].as_str(), Some("sequential"));
        assert_eq!((w[1]["threads"].as_integer(), w[1]["bs"].as_str()), (Some(8), Some("16k")));
        // An error on a continuation line points at that line.
        let e = errors(&text.replace("depth=1", "depth=x"));
        assert_eq!((e.len(), e[0].line, e[0].col, e[0].parameter.as_str()), (1, 6, 4, "depth"));
    }

    #[test]
    fn for_ranges_expand() {
        let list = |s: &str| s.split(',').map(String::from).collect::<Vec<_>>();
        let num = |s: &str| parse_num(s);
        assert_eq!(expand(&list("1-8,d"), num), Some(vec![1, 2, 4, 8]));
        assert_eq!(expand(&list("1-10,d"), num), Some(vec![1, 2, 4, 8]));
        assert_eq!(expand(&list("2-10,4"), num), Some(vec![2, 6, 10]));
        assert_eq!(expand(&list("1,2,4-16,d,32"), num), Some(vec![1, 2, 4, 8, 16, 32]));
        for bad in ["8-1,d", "0-8,d", "1-8", "1-8,0", "1-x,d", "1-99999999999,1", "1-16777215t,d"] {
            assert_eq!(expand(&list(bad), num), None, "{bad}");
        }
        let e = errors(&format!("{HEAD}fwd=f,fsd=fsd1\nrd=r,fwd=f,forthreads=(1-8)\n"));
        assert_eq!((e[0].line, e[0].col, e[0].parameter.as_str()), (3, 12, "forthreads"));
    }

    #[test]
    fn values_and_durations() {
        assert_eq!(parse_num("10k"), Some(10240));
        assert_eq!(parse_num("k"), None);
        assert_eq!(
            (size_literal(512), size_literal(512 << 10), size_literal(4 << 20), size_literal(1536)),
            ("512".into(), "512k".into(), "4m".into(), "1536".into())
        );
        assert_eq!(parse_secs("2h"), Some(7200));
        assert_eq!(
            (secs_literal(72000), secs_literal(1800), secs_literal(90)),
            ("20h".into(), "30m".into(), "90s".into())
        );
        let t = toml("fsd=f,anchor=/a \"q\",totalsize=1g\nfwd=w,fsd=f\nrd=r,fwd=w,fwdrate=max\n");
        assert_eq!(t["dir"].as_str(), Some("/a \"q\""));
        // Dataset files are opened buffered: openflags would be asked for and not done.
        for flag in ["o_dsync", "o_direct"] {
            let e = errors(&format!("fsd=f,anchor=/a,openflags={flag}\nfwd=w,fsd=f\nrd=r,fwd=w\n"));
            assert!(e.iter().any(|x| x.parameter == "openflags"), "{e:?}");
        }
        assert_eq!((t["duration"].as_str(), t.get("rate_iops")), (Some("30s"), None));
        assert_eq!(t["dataset"]["total_size"].as_str(), Some("1g"));
    }

    #[test]
    fn host_definitions_become_host_tables_that_validate() {
        let text = format!(
            "hd=default,vdbench=/opt/vdbench,user=bench,shell=ssh\nhd=hd1,system=client1\nhd=hd2,system=10.0.0.2\n\
             {HEAD}fwd=fwd1,fsd=fsd1\nrd=rd1,fwd=fwd1\n"
        );
        let out = convert(&text).unwrap_or_else(|e| panic!("{e:#?}"));
        assert!(out.contains("\n# hd=default,vdbench=/opt/vdbench,user=bench,shell=ssh\n# hd=hd1,system=client1\n[[host]]\nname = \"hd1\"\naddress = \"client1\"\nuser = \"bench\"\n"), "{out}");
        let plan = crate::validate_file(&crate::SourceFile { path: "out.toml".into(), text: out.clone() })
            .unwrap_or_else(|d| panic!("{out}\n{}", crate::render_diagnostics(&d)));
        let hosts: Vec<String> = plan.hosts.iter().map(|h| format!("{} {}", h.name, h.kind.address())).collect();
        assert_eq!(hosts, ["hd1 ssh://bench@client1", "hd2 ssh://bench@10.0.0.2"]);
        // What ioscope cannot do with a host is refused where it is written.
        let e = errors(&format!(
            "hd=hd1,system=c1,shell=rsh,jvms=2\nhd=hd2\nhd=hd3,system=-oX\n{HEAD}fwd=f,fsd=fsd1\nrd=r,fwd=f\n"
        ));
        let got: Vec<(usize, usize, &str)> = e.iter().map(|e| (e.line, e.col, e.parameter.as_str())).collect();
        assert_eq!(got, [(1, 18, "shell"), (1, 28, "jvms"), (2, 1, "hd"), (3, 8, "system")], "{e:#?}");
        assert!(e[0].expected.contains("shell=ssh"), "{}", e[0].expected);
    }
}
