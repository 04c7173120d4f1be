//! `ioscope import filebench`: converts a Filebench workload (`.f`: `set $var`, `define
//! fileset` / `define file`, `define process { thread { flowop ... } }`, `run N`) into an
//! ioscope workload file. A fileset becomes the `[dataset]` (entries, dirwidth, size with
//! its cvar-gamma, prealloc), each process's threads a `[[workload]]` with a `flow` of its
//! flowops; a single file read or written by one flowop per thread becomes the flat working
//! set. Whatever has no meaning here is reported with its line and column, all at once,
//! and nothing is produced unless the whole file converts.

use crate::canonical::toml_string;
use crate::units::{parse_size, secs_literal, size_literal};
use std::collections::HashMap;
use std::fmt::Write;
use std::ops::Range;

/// Filebench's run time when `run` names none.
const DEFAULT_RUN_S: u64 = 60;
/// At most this many statements, variables or attributes are read (a hostile file cannot
/// make the conversion endless).
const MAX_STATEMENTS: usize = 10_000;

/// One problem: where, the option, what was expected and why.
struct Problem {
    span: Range<usize>,
    option: String,
    expected: String,
    why: String,
}

/// `name=value` or a bare `name`, with where it is written.
#[derive(Clone)]
struct Attr {
    name: String,
    value: Option<String>,
    span: Range<usize>,
}

struct FileSet {
    name: String,
    /// `define file` (one file) rather than `define fileset`.
    single: bool,
    attrs: Vec<Attr>,
    span: Range<usize>,
}

struct Thread {
    name: String,
    instances: u64,
    flowops: Vec<(String, Vec<Attr>, Range<usize>)>,
}

struct Process {
    name: String,
    instances: u64,
    threads: Vec<Thread>,
}

struct Reader<'t> {
    text: &'t str,
    vars: HashMap<String, String>,
    problems: Vec<Problem>,
    filesets: Vec<FileSet>,
    processes: Vec<Process>,
    run_s: Option<u64>,
    /// `eventgen rate = N`: its events per second (0: off), and where it is.
    eventgen: Option<(u64, Range<usize>)>,
    /// The workload that has a rate from the event generator, once one has.
    limited: Option<String>,
}

/// The file's statements: (byte offset, text), comments removed, a line that ends with a
/// comma continued on the next, braces their own statements.
fn statements(text: &str) -> Vec<(usize, String)> {
    let mut out: Vec<(usize, String)> = Vec::new();
    let mut pending: Option<(usize, String)> = None;
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        let start = at;
        at += line.len();
        let code = line.split('#').next().unwrap_or("").trim_end();
        let trimmed = code.trim_start();
        let offset = start + (code.len() - trimmed.len());
        if trimmed.is_empty() {
            continue;
        }
        let (offset, mut body) = match pending.take() {
            Some((o, mut b)) => {
                b.push(' ');
                b.push_str(trimmed);
                (o, b)
            }
            None => (offset, trimmed.to_string()),
        };
        if body.ends_with(',') {
            pending = Some((offset, body));
            continue;
        }
        // "{" or "}" at the end of a statement, or alone.
        let mut close = Vec::new();
        while let Some(b) = body.strip_suffix('{').or_else(|| body.strip_suffix('}')) {
            let brace = body[b.len()..].to_string();
            close.push(brace);
            body = b.trim_end().to_string();
        }
        if !body.is_empty() {
            out.push((offset, body));
        }
        out.extend(close.into_iter().rev().map(|b| (offset, b)));
        if out.len() > MAX_STATEMENTS {
            break;
        }
    }
    if let Some(p) = pending {
        out.push(p);
    }
    out
}

/// Splits `a=1,b=(x,y),c` at the commas outside parentheses.
fn split_attrs(s: &str, base: usize) -> Vec<Attr> {
    let mut out = Vec::new();
    let (mut depth, mut from) = (0i32, 0usize);
    let mut push = |piece: &str, at: usize| {
        let lead = piece.len() - piece.trim_start().len();
        let p = piece.trim();
        if p.is_empty() {
            return;
        }
        let (name, value) = match p.split_once('=') {
            Some((n, v)) => (n.trim().to_string(), Some(v.trim().to_string())),
            None => (p.to_string(), None),
        };
        out.push(Attr { name, value, span: base + at + lead..base + at + lead + p.len() });
    };
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth <= 0 => {
                push(&s[from..i], from);
                from = i + 1;
            }
            _ => {}
        }
    }
    push(&s[from..], from);
    out.truncate(MAX_STATEMENTS);
    out
}

impl<'t> Reader<'t> {
    fn problem(&mut self, span: Range<usize>, option: &str, expected: impl Into<String>, why: impl Into<String>) {
        self.problems.push(Problem { span, option: option.into(), expected: expected.into(), why: why.into() });
    }

    /// A value with its `$variables` replaced.
    fn value(&mut self, a: &Attr) -> Option<String> {
        let v = a.value.clone()?;
        match v.strip_prefix('$') {
            Some(name) => match self.vars.get(name) {
                Some(x) => Some(x.clone()),
                None => {
                    self.problem(
                        a.span.clone(),
                        &a.name,
                        "a variable set before with `set $NAME=VALUE`",
                        format!("${name} is not set"),
                    );
                    None
                }
            },
            None => Some(v),
        }
    }

    fn number(&mut self, a: &Attr, max: u64) -> Option<u64> {
        let v = self.value(a)?;
        match parse_size(&v).ok().filter(|n| *n <= max) {
            Some(n) => Some(n),
            None => {
                self.problem(
                    a.span.clone(),
                    &a.name,
                    format!("a whole number up to {max} (k, m, g suffixes)"),
                    format!("\"{v}\""),
                );
                None
            }
        }
    }

    fn read(&mut self) {
        let stmts = statements(self.text);
        let mut i = 0;
        while i < stmts.len() {
            let (at, s) = &stmts[i];
            let (word, rest) = s.split_once(char::is_whitespace).unwrap_or((s.as_str(), ""));
            let rest_at = at + word.len() + (rest.len() - rest.trim_start().len()) + usize::from(!rest.is_empty());
            let rest = rest.trim_start();
            match word {
                "set" => self.set(rest, rest_at),
                "echo" | "usage" | "debug" | "enable" => {}
                "eventgen" => self.eventgen(rest, *at..at + s.len()),
                "run" => self.run(rest, *at..at + s.len()),
                "define" => {
                    let (kind, attrs) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
                    let attrs_at = rest_at + kind.len() + (attrs.len() - attrs.trim_start().len()) + 1;
                    let attrs = split_attrs(attrs.trim_start(), attrs_at);
                    let name =
                        attrs.iter().find(|a| a.name == "name").and_then(|a| a.value.clone()).unwrap_or_default();
                    let name = name.strip_prefix('$').and_then(|n| self.vars.get(n).cloned()).unwrap_or(name);
                    match kind {
                        "fileset" | "file" => {
                            self.filesets.push(FileSet { name, single: kind == "file", attrs, span: *at..at + s.len() })
                        }
                        "process" => {
                            let instances = self.instances(&attrs);
                            let (threads, next) = self.process_body(&stmts, i + 1);
                            self.processes.push(Process { name, instances, threads });
                            i = next;
                            continue;
                        }
                        _ => self.problem(
                            *at..at + s.len(),
                            "define",
                            "define fileset, file or process",
                            format!("define {kind}"),
                        ),
                    }
                }
                _ => self.problem(
                    *at..at + s.len(),
                    word,
                    "set, define, eventgen, echo or run",
                    format!("`{word}` is not converted"),
                ),
            }
            i += 1;
        }
    }

    fn instances(&mut self, attrs: &[Attr]) -> u64 {
        let a = attrs.iter().find(|a| a.name == "instances").cloned();
        a.and_then(|a| self.number(&a, 4096)).unwrap_or(1).max(1)
    }

    /// `{ thread ... { flowop ... } ... }` after a `define process`: its threads, and the
    /// statement after its closing brace.
    fn process_body(&mut self, stmts: &[(usize, String)], mut i: usize) -> (Vec<Thread>, usize) {
        let mut threads: Vec<Thread> = Vec::new();
        let mut depth = 0;
        while i < stmts.len() {
            let (at, s) = &stmts[i];
            let span = *at..at + s.len();
            i += 1;
            match s.as_str() {
                "{" => depth += 1,
                "}" => {
                    depth -= 1;
                    if depth <= 0 {
                        break;
                    }
                }
                _ => {
                    let (word, rest) = s.split_once(char::is_whitespace).unwrap_or((s.as_str(), ""));
                    let rest_at = at + word.len() + 1;
                    match word {
                        "thread" => {
                            let attrs = split_attrs(rest, rest_at);
                            let name = attrs
                                .iter()
                                .find(|a| a.name == "name")
                                .and_then(|a| a.value.clone())
                                .unwrap_or_default();
                            let instances = self.instances(&attrs);
                            threads.push(Thread { name, instances, flowops: Vec::new() });
                        }
                        "flowop" => {
                            let (kind, attrs) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
                            let attrs = split_attrs(attrs, rest_at + kind.len() + 1);
                            match threads.last_mut() {
                                Some(t) => t.flowops.push((kind.to_string(), attrs, span)),
                                None => self.problem(
                                    span,
                                    "flowop",
                                    "flowops inside a thread",
                                    "a flowop outside any thread",
                                ),
                            }
                        }
                        _ => self.problem(span, word, "thread or flowop inside a process", format!("`{word}`")),
                    }
                }
            }
        }
        (threads, i)
    }

    fn set(&mut self, rest: &str, at: usize) {
        let Some((name, value)) = rest.split_once('=') else {
            self.problem(at..at + rest.len(), "set", "set $NAME=VALUE", rest.to_string());
            return;
        };
        let name = name.trim().trim_start_matches('$').to_string();
        if self.vars.len() < MAX_STATEMENTS {
            self.vars.insert(name, value.trim().to_string());
        }
    }

    /// `eventgen rate = N`: N events per second shared by the limit flowops.
    fn eventgen(&mut self, rest: &str, span: Range<usize>) {
        let v = rest.split_once('=').map(|(k, v)| (k.trim(), v.trim()));
        let v = v.filter(|(k, _)| *k == "rate").map(|(_, v)| v.to_string());
        let v = v.map(|v| v.strip_prefix('$').and_then(|n| self.vars.get(n).cloned()).unwrap_or(v));
        match v.as_deref().and_then(|v| v.parse::<u64>().ok()).filter(|r| *r <= 10_000_000) {
            Some(rate) => self.eventgen = Some((rate, span)),
            None => self.problem(span, "eventgen", "eventgen rate = EVENTS_PER_SECOND", format!("\"{}\"", rest.trim())),
        }
    }

    fn run(&mut self, rest: &str, span: Range<usize>) {
        let t = rest.trim();
        let t = t.strip_prefix('$').and_then(|n| self.vars.get(n).cloned()).unwrap_or_else(|| t.to_string());
        self.run_s = match t.as_str() {
            "" => Some(DEFAULT_RUN_S),
            n => match n.parse::<u64>().ok().filter(|s| (1..=30 * 86_400).contains(s)) {
                Some(s) => Some(s),
                None => {
                    self.problem(span, "run", "run SECONDS, like run 60", format!("\"{t}\""));
                    None
                }
            },
        };
    }
}

/// A fileset's size: a byte count, or cvar-gamma's mean and shape ("gamma:128k:1.5").
fn size_of(v: &str) -> Option<String> {
    if let Some(inner) = v.strip_prefix("cvar(").and_then(|r| r.strip_suffix(')')) {
        let mut mean = None;
        let mut shape = None;
        let mut gamma = false;
        for part in split_attrs(inner, 0) {
            match (part.name.as_str(), part.value.as_deref()) {
                ("type", Some("cvar-gamma")) => gamma = true,
                ("parameters", Some(p)) => {
                    for kv in p.split(';') {
                        match kv.split_once(':') {
                            Some(("mean", m)) => mean = m.trim().parse::<u64>().ok(),
                            Some(("gamma", g)) => shape = g.trim().parse::<f64>().ok(),
                            _ => {}
                        }
                    }
                }
                _ => {}
            }
        }
        return match (gamma, mean, shape) {
            (true, Some(m), Some(s)) => Some(format!("gamma:{}:{s}", size_literal(m))),
            _ => None,
        };
    }
    parse_size(v).ok().filter(|b| *b > 0).map(size_literal)
}

/// One flowop as a flow step; Err when it cannot convert.
fn step_of(kind: &str, iosize: Option<u64>, random: bool) -> Result<String, String> {
    let size = |what: &str| iosize.map(size_literal).ok_or(format!("{what} needs iosize here"));
    let r = if random { " random" } else { "" };
    Ok(match kind {
        "createfile" => "create".into(),
        "openfile" => "open".into(),
        "closefile" => "close".into(),
        "deletefile" => "delete".into(),
        "statfile" => "stat".into(),
        "fsync" => "fsync".into(),
        "readwholefile" => format!("read_whole {}", size(kind)?),
        "writewholefile" => format!("write_whole {}", size(kind)?),
        "appendfile" => format!("append {}", size(kind)?),
        "appendfilerand" => format!("append {} random", size(kind)?),
        "read" => format!("read {}{r}", size(kind)?),
        "write" => format!("write {}{r}", size(kind)?),
        _ => return Err(kind.to_string()),
    })
}

/// The rounds per second of thread `t`'s flow that the limit flowop `f` allows at
/// `events` per second, and how it follows (for a comment), as Filebench counts events:
/// eventlimit one a round, opslimit and iopslimit one an operation or I/O of its target
/// (or of the whole flow), bwlimit one a MiB its target (or the flow) moves.
fn limit_rate(
    r: &mut Reader,
    t: &Thread,
    f: &(String, Vec<Attr>, Range<usize>),
    events: u64,
) -> Result<(u64, String), String> {
    let target = r.attr(&f.1, "target").map(|(v, _)| v);
    let counted: Vec<&(String, Vec<Attr>, Range<usize>)> = t
        .flowops
        .iter()
        .filter(|o| !matches!(o.0.as_str(), "opslimit" | "bwlimit" | "iopslimit" | "eventlimit" | "delay"))
        .filter(|o| match &target {
            Some(name) => o.1.iter().any(|a| a.name == "name" && a.value.as_deref() == Some(name)),
            None => true,
        })
        .collect();
    if target.is_some() && counted.is_empty() {
        return Err(format!("no flowop named {} in this thread", target.unwrap_or_default()));
    }
    let iters = |o: &(String, Vec<Attr>, Range<usize>)| {
        o.1.iter().find(|a| a.name == "iters").and_then(|a| a.value.as_deref()?.parse::<u64>().ok()).unwrap_or(1).max(1)
    };
    let per_round: u64 = match f.0.as_str() {
        "eventlimit" => 1,
        "bwlimit" => {
            let mut bytes = 0u64;
            for o in &counted {
                if matches!(o.0.as_str(), "readwholefile" | "writewholefile") {
                    return Err(format!("{}: a whole file moves as many bytes as the file holds", o.0));
                }
                let size = r.attr(&o.1, "iosize").and_then(|(v, _)| parse_size(&v).ok()).unwrap_or(0);
                bytes = bytes.saturating_add(size.saturating_mul(iters(o)));
            }
            if bytes == 0 {
                return Err("its flowops move no bytes".into());
            }
            let rounds = ((events as f64) * (1u64 << 20) as f64 / bytes as f64).round().max(1.0) as u64;
            let why = format!(
                "bwlimit under eventgen rate {events}: {events} MiB/s of {} a round = {rounds} rounds/s of the flow",
                size_literal(bytes)
            );
            return Ok((rounds, why));
        }
        _ => counted.iter().map(|o| iters(o)).sum::<u64>().max(1),
    };
    let rounds = (events / per_round).max(1);
    let why =
        format!("{} under eventgen rate {events}: {per_round} event(s) a round = {rounds} rounds/s of the flow", f.0);
    Ok((rounds, why))
}

/// A semblock as a `wait NAME COUNT [ahead HIGHWATER]` step (NAME the semblock's own), a
/// sempost as `post TARGET [blocking]`.
fn sem_step(r: &mut Reader, f: &(String, Vec<Attr>, Range<usize>)) -> Result<String, String> {
    let max = u64::from(crate::flow::MAX_SEM_COUNT);
    let value = match f.1.iter().find(|a| a.name == "value").cloned() {
        Some(a) => r.number(&a, max).filter(|v| *v > 0).ok_or("a value from 1")?,
        None => 1,
    };
    if f.0 == "semblock" {
        let (name, _) = r.attr(&f.1, "name").ok_or("a semblock needs its name (posts name it as their target)")?;
        crate::flow::SetName::new(&name)?;
        let ahead = match f.1.iter().find(|a| a.name == "highwater").cloned() {
            Some(a) => r.number(&a, max).unwrap_or(0),
            None => 0,
        };
        return Ok(match ahead {
            0 => format!("wait {name} {value}"),
            h => format!("wait {name} {value} ahead {h}"),
        });
    }
    if value != 1 {
        return Err(format!("a post of value {value}: ioscope posts one at a time"));
    }
    let (target, _) = r.attr(&f.1, "target").ok_or("a sempost needs the semblock it posts to (target=)")?;
    let blocking = f.1.iter().any(|a| a.name == "blocking");
    Ok(if blocking { format!("post {target} blocking") } else { format!("post {target}") })
}

/// Whether flowop `f` of thread `t` works on a file of its set that the thread holds open
/// (`in NAME`): a transfer or fsync naming a set, on no fd an `openfile` or `createfile` of
/// the thread opens (Filebench opens such a file at its first use and keeps it open).
fn held_by(t: &Thread, f: &(String, Vec<Attr>, Range<usize>)) -> bool {
    let fd = |a: &[Attr]| a.iter().find(|x| x.name == "fd").and_then(|x| x.value.clone()).unwrap_or_else(|| "1".into());
    let transfer = matches!(
        f.0.as_str(),
        "read" | "write" | "aiowrite" | "readwholefile" | "writewholefile" | "appendfile" | "appendfilerand" | "fsync"
    );
    let names_set = f.1.iter().any(|a| matches!(a.name.as_str(), "filesetname" | "filename"));
    let opened = t.flowops.iter().any(|(k, a, _)| matches!(k.as_str(), "openfile" | "createfile") && fd(a) == fd(&f.1));
    transfer && names_set && !opened
}

/// Why a flowop kind has no step, for its message.
fn refused_flowop(kind: &str) -> &'static str {
    match kind {
        "aiowrite" | "aiowait" => "asynchronous I/O: ioscope's flows run one operation at a time per thread",
        "semblock" | "sempost" => "semaphores between threads: ioscope's flows do not wait for each other",
        "hog" => "CPU work between operations: ioscope does not spend CPU for the workload",
        "delay" => "a pause between operations: a flow runs its steps back to back",
        "eventlimit" | "opslimit" | "bwlimit" | "iopslimit" => {
            "a rate from the event generator: a flow runs at no rate"
        }
        "fsyncset" => "fsync of every open file of a set: a flow has one file open",
        "openfile_noclose" | "makedir" | "removedir" | "listdir" => "not a step of ioscope's flows",
        _ => "not a Filebench flowop ioscope knows",
    }
}

impl<'t> Reader<'t> {
    /// The attribute `name` of a list, its variables replaced.
    fn attr(&mut self, attrs: &[Attr], name: &str) -> Option<(String, Range<usize>)> {
        let a = attrs.iter().find(|a| a.name == name)?.clone();
        let v = self.value(&a).unwrap_or_default();
        Some((v, a.span))
    }

    /// One file of a size, read or written by a lone flowop per thread: the flat working set.
    fn flat(&self) -> bool {
        let lone = |t: &Thread| t.flowops.len() == 1 && matches!(t.flowops[0].0.as_str(), "read" | "write");
        matches!(self.filesets.as_slice(), [fs] if fs.single && fs.attrs.iter().any(|a| a.name == "size"))
            && self.processes.iter().all(|p| p.threads.iter().all(lone))
    }

    /// Whether some flowop reads or writes a file of a set with no `openfile` or
    /// `createfile` before it (see [`held_by`]).
    fn held_file(&self) -> bool {
        self.processes.iter().flat_map(|p| &p.threads).any(|t| t.flowops.iter().any(|f| held_by(t, f)))
    }

    /// The iosize of the first flowop that names set `name`, as a size literal.
    fn first_iosize(&self, name: &str) -> Option<String> {
        let value = |a: &Attr| {
            let v = a.value.clone().unwrap_or_default();
            v.strip_prefix('$').and_then(|n| self.vars.get(n).cloned()).unwrap_or(v)
        };
        let flowops = self.processes.iter().flat_map(|p| &p.threads).flat_map(|t| &t.flowops);
        let attrs = flowops
            .map(|(_, a, _)| a)
            .find(|a| a.iter().any(|x| matches!(x.name.as_str(), "filesetname" | "filename") && value(x) == name))?;
        let size = attrs.iter().find(|a| a.name == "iosize").map(value)?;
        parse_size(&size).ok().filter(|b| *b > 0).map(size_literal)
    }

    /// The fileset as a `[dataset]` or `[[fileset]]` table.
    fn dataset(&mut self, fs: &FileSet, table: Table, out: &mut String) {
        let attrs = fs.attrs.clone();
        let entries = match attrs.iter().find(|a| a.name == "entries").cloned() {
            Some(a) => self.number(&a, crate::layout::MAX_DATASET_FILES).unwrap_or(1).max(1),
            None => 1,
        };
        let width = match attrs.iter().find(|a| a.name == "dirwidth").cloned() {
            Some(a) => self.number(&a, u64::MAX).unwrap_or(1).max(1),
            None => entries,
        };
        // A file with no size (Filebench's starts empty and a sequential write makes it
        // grow): here it starts at one transfer's size, and its writes are appends.
        let unsized_file = fs.single && attrs.iter().all(|a| a.name != "size");
        let size = match self.attr(&attrs, "size") {
            None if unsized_file => Some(self.first_iosize(&fs.name).unwrap_or_else(|| "1m".into())),
            Some((v, span)) => size_of(&v).or_else(|| {
                self.problem(
                    span,
                    "size",
                    "a size like 16k, or cvar(type=cvar-gamma,parameters=mean:N;gamma:S)",
                    format!("\"{v}\""),
                );
                None
            }),
            None => {
                self.problem(
                    fs.span.clone(),
                    "size",
                    "size= in the fileset",
                    "the fileset has no size: its files would be empty",
                );
                None
            }
        };
        let prealloc = match attrs.iter().find(|a| a.name == "prealloc").cloned() {
            None => 0,
            Some(Attr { value: None, .. }) => 100,
            Some(a) => self.number(&a, 100).unwrap_or(100),
        };
        // Filebench spreads `entries` files over directories of about `dirwidth`; ioscope
        // puts them in leaves of `dirwidth` files, one level down.
        let (depth, leaves, per_leaf) =
            if entries <= width { (0, 1, entries) } else { (1, entries.div_ceil(width), width.min(entries)) };
        let _ = writeln!(out, "\n# fileset {}: {entries} files of about {width} per directory", fs.name);
        if leaves * per_leaf != entries {
            let _ = writeln!(out, "# ({} files here: {entries} rounded up to whole directories)", leaves * per_leaf);
        }
        if unsized_file {
            let _ = writeln!(out, "# (a file with no size: it starts at one write's size, and grows by each)");
        }
        match table {
            Table::Dataset(None) => {
                let _ = writeln!(out, "[dataset]");
            }
            Table::Dataset(Some(name)) => {
                let _ = writeln!(out, "[dataset]\nname = {}", toml_string(name));
            }
            Table::Fileset(name) => {
                let _ = writeln!(out, "[[fileset]]\nname = {}", toml_string(name));
            }
        }
        let _ = writeln!(out, "depth = {depth}");
        let _ = writeln!(out, "width = {leaves}");
        let _ = writeln!(out, "files = {per_leaf}");
        if let Some(s) = size {
            let _ = writeln!(out, "sizes = {}", toml_string(&s));
        }
        if prealloc < 100 {
            let _ = writeln!(out, "prealloc = {prealloc}");
        }
    }
}

/// Converts a Filebench workload file.
fn convert(text: &str) -> Result<String, Vec<Problem>> {
    let mut r = Reader {
        text,
        vars: HashMap::new(),
        problems: Vec::new(),
        filesets: Vec::new(),
        processes: Vec::new(),
        run_s: None,
        eventgen: None,
        limited: None,
    };
    r.read();
    let mut out = String::from("# Converted from a Filebench workload by `ioscope import filebench`.\n");
    let dir = r.vars.get("dir").cloned().unwrap_or_else(|| "/tmp".into());
    // A fileset's files are in $dir/NAME, as Filebench puts them; a file is $dir/NAME.
    // Several: the first fileset is the dataset there, the others file sets in it.
    let under = match r.filesets.as_slice() {
        [_] if r.flat() => dir.clone(),
        [fs, ..] => format!("{}/{}", dir.trim_end_matches('/'), fs.name),
        [] => dir.clone(),
    };
    let _ = writeln!(out, "dir = {}", toml_string(&under));
    let _ = writeln!(out, "duration = {}", toml_string(&secs_literal(r.run_s.unwrap_or(DEFAULT_RUN_S))));
    convert_body(&mut r, &mut out);
    if r.problems.is_empty() {
        return Ok(out);
    }
    // One problem per place: a value read twice (a bad variable) is reported once.
    let mut seen = std::collections::HashSet::new();
    r.problems.retain(|p| seen.insert(p.span.start));
    Err(r.problems)
}

fn convert_body(r: &mut Reader, out: &mut String) {
    if r.filesets.is_empty() {
        r.problem(0..0, "define fileset", "a fileset or file for the flowops", "the workload defines none");
        return;
    }
    if r.processes.is_empty() {
        let span = r.filesets[0].span.clone();
        r.problem(span, "define process", "a process with threads and flowops", "the workload defines none");
        return;
    }
    if r.flat() {
        let fs = r.filesets.remove(0);
        flat(r, &fs, out);
        return;
    }
    // The first fileset is the [dataset]; with others, each is a [[fileset]] and every set
    // is named as Filebench names it.
    let sets = std::mem::take(&mut r.filesets);
    let names: Vec<String> = sets.iter().map(|f| f.name.clone()).collect();
    for (k, fs) in sets.iter().enumerate() {
        if names.len() > 1 || r.held_file() {
            if let Err(why) = crate::flow::SetName::new(&fs.name) {
                r.problem(fs.span.clone(), "name", crate::flow::SET_NAME_FORM, why);
            }
        }
        let table = match (k, names.len() > 1 || r.held_file()) {
            (0, false) => Table::Dataset(None),
            (0, true) => Table::Dataset(Some(&fs.name)),
            _ => Table::Fileset(&fs.name),
        };
        r.dataset(fs, table, out);
    }
    let processes = std::mem::take(&mut r.processes);
    for p in &processes {
        for t in &p.threads {
            workload(r, p, t, &sets, out);
        }
    }
}

/// Which table a fileset becomes: the dataset (named when steps name it), or a file set.
enum Table<'n> {
    Dataset(Option<&'n str>),
    Fileset(&'n str),
}

/// `define file` and one read or write flowop per thread: a flat working set of one file
/// (the top-level keys for one thread type, else a `[[workload]]` each).
fn flat(r: &mut Reader, fs: &FileSet, out: &mut String) {
    match r.attr(&fs.attrs, "size") {
        Some((v, span)) => match parse_size(&v).ok().filter(|b| *b > 0) {
            Some(size) => {
                let _ = writeln!(out, "# file {}: one file of {}", fs.name, size_literal(size));
                let _ = writeln!(out, "size = {}\nfiles = 1", toml_string(&size_literal(size)));
            }
            None => r.problem(span, "size", "a size like 5g", format!("\"{v}\"")),
        },
        None => {
            let why = "the file has no size: ioscope's writes stay within a file's size (set size=, like 5g)";
            r.problem(fs.span.clone(), "size", "size= in the file", why);
        }
    }
    let processes = std::mem::take(&mut r.processes);
    let kinds: usize = processes.iter().map(|p| p.threads.len()).sum();
    for p in &processes {
        for t in &p.threads {
            let (kind, attrs, _) = &t.flowops[0];
            let bs = r.attr(attrs, "iosize").and_then(|(v, span)| {
                parse_size(&v).ok().filter(|b| *b > 0).or_else(|| {
                    r.problem(span, "iosize", "a size like 8k", format!("\"{v}\""));
                    None
                })
            });
            let random = attrs.iter().any(|a| a.name == "random");
            flowop_checks(r, attrs, false);
            let rw = match (kind.as_str(), random) {
                ("read", false) => "read",
                ("read", true) => "randread",
                ("write", false) => "write",
                _ => "randwrite",
            };
            if kinds > 1 {
                let _ = writeln!(out, "\n[[workload]]");
            }
            let _ = writeln!(out, "name = {}", toml_string(&t.name));
            let _ = writeln!(out, "rw = \"{rw}\"");
            if let Some(bs) = bs {
                let _ = writeln!(out, "bs = {}", toml_string(&size_literal(bs)));
            }
            let _ = writeln!(out, "threads = {}", (p.instances * t.instances).min(4096));
        }
    }
}

/// The attributes of a flowop that change nothing or cannot be said here.
fn flowop_checks(r: &mut Reader, attrs: &[Attr], dsync_ok: bool) {
    for a in attrs {
        let v = r.value(a);
        match a.name.as_str() {
            "name" | "fd" | "srcfd" | "filesetname" | "filename" | "iosize" | "random" | "iters" | "opennext" => {}
            "directio" if v.as_deref().is_none_or(|v| v == "0") && a.value.is_some() => {}
            "workingset" if v.as_deref() == Some("0") => {}
            "directio" => {
                r.problem(a.span.clone(), "directio", "directio=0", "flows open files through the page cache")
            }
            "dsync" if dsync_ok => {}
            "dsync" => r.problem(
                a.span.clone(),
                "dsync",
                "no dsync",
                "flows write without O_DSYNC (an fsync flowop makes data durable)",
            ),
            "workingset" => r.problem(
                a.span.clone(),
                "workingset",
                "workingset=0",
                "a flowop's own working set within a file is not converted",
            ),
            other => {
                let other = other.to_string();
                r.problem(
                    a.span.clone(),
                    &other,
                    "name, fd, filesetname, iosize, random, iters",
                    "an attribute that is not converted",
                )
            }
        }
    }
}

/// One thread type of a process as a `[[workload]]` with its flow.
fn workload(r: &mut Reader, p: &Process, t: &Thread, sets: &[FileSet], out: &mut String) {
    let mut steps: Vec<String> = Vec::new();
    let mut notes: Vec<String> = Vec::new();
    // Rounds of the flow per second from a limit flowop under the event generator.
    let mut rate: Option<(u64, String)> = None;
    for flowop in &t.flowops {
        let (kind, attrs, span) = flowop;
        let held = held_by(t, flowop);
        // The set a step names (`in NAME`): a held file's, or another set than the dataset.
        let mut in_set = None;
        if let Some((set, sspan)) = r.attr(attrs, "filesetname").or_else(|| r.attr(attrs, "filename")) {
            match sets.iter().position(|f| f.name == set) {
                None => {
                    let defined: Vec<&str> = sets.iter().map(|f| f.name.as_str()).collect();
                    let why = format!("no fileset or file {set} is defined (defined: {})", defined.join(", "));
                    r.problem(sspan, "filesetname", "the name of a define fileset or define file", why);
                }
                Some(k) if held || k > 0 => in_set = Some(k),
                Some(_) => {}
            }
        }
        if let Some((fd, fspan)) = r.attr(attrs, "fd").filter(|_| !held) {
            if fd != "1" {
                r.problem(fspan, "fd", "fd=1", "a flow has one file open at a time");
            }
        }
        if matches!(kind.as_str(), "opslimit" | "bwlimit" | "iopslimit" | "eventlimit") {
            match r.eventgen.as_ref().map(|e| e.0).filter(|rate| *rate > 0) {
                None => notes
                    .push(format!("# {kind}: the eventgen rate is 0 or unset, so it limits nothing, as in Filebench")),
                Some(events) => match limit_rate(r, t, flowop, events) {
                    Ok((rounds, why)) => rate = Some((rounds, why)),
                    Err(why) => r.problem(span.clone(), kind, "a limit whose rate a flow can run at", why),
                },
            }
            continue;
        }
        match kind.as_str() {
            "aiowait" => {
                notes.push(
                    "# aiowait: the writes before it were made one at a time, so there is nothing to wait for".into(),
                );
                continue;
            }
            "hog" => {
                notes.push("# hog: CPU work between operations, which ioscope does not spend".into());
                continue;
            }
            "semblock" | "sempost" => {
                match sem_step(r, flowop) {
                    Ok(step) => steps.push(step),
                    Err(why) => r.problem(
                        span.clone(),
                        kind,
                        "a semblock with its name and value, or a sempost of value 1 to one",
                        why,
                    ),
                }
                continue;
            }
            _ => {}
        }
        if kind == "delay" {
            match attrs.iter().find(|a| a.name == "value").cloned().and_then(|a| r.number(&a, 3600)) {
                Some(secs) if secs > 0 => steps.push(format!("delay {}", secs_literal(secs))),
                _ => r.problem(span.clone(), "delay", "delay value=SECONDS (1 to 3600)", "no value"),
            }
            continue;
        }
        let writes = matches!(kind.as_str(), "write" | "aiowrite" | "writewholefile" | "appendfile" | "appendfilerand");
        flowop_checks(r, attrs, writes);
        let iosize = r.attr(attrs, "iosize").and_then(|(v, s)| {
            parse_size(&v).ok().filter(|b| (1..=crate::plan::MAX_FLOW_IO_BYTES).contains(b)).or_else(|| {
                r.problem(s, "iosize", "a size from 1 byte to 64 MiB", format!("\"{v}\""));
                None
            })
        });
        let random = attrs.iter().any(|a| a.name == "random");
        let iters = match attrs.iter().find(|a| a.name == "iters").cloned() {
            Some(a) => r.number(&a, crate::flow::MAX_FLOW_STEPS as u64).unwrap_or(1).max(1),
            None => 1,
        };
        // A sequential write to a file that starts empty makes it grow: appends.
        let unsized_file = in_set.is_some_and(|k| sets[k].single && sets[k].attrs.iter().all(|a| a.name != "size"));
        let kind = match kind.as_str() {
            "write" if held && unsized_file && !random => "appendfile",
            // Asynchronous writes are made one at a time, as its thread's flow runs.
            "aiowrite" => {
                notes.push("# aiowrite: written one at a time (Filebench keeps them in flight until aiowait)".into());
                "write"
            }
            k => k,
        };
        let suffix = in_set.map(|k| format!(" in {}", sets[k].name)).unwrap_or_default();
        if held && attrs.iter().any(|a| a.name == "opennext") {
            notes.push("# opennext: each thread holds one file of the set (Filebench moves on to the next)".into());
        }
        // A dsync write: the write, then an fsync of the same file, each its own operation.
        let dsync = writes && attrs.iter().any(|a| a.name == "dsync");
        if dsync {
            notes
                .push("# dsync: each write is followed by an fsync of its file (durable per write, as O_DSYNC)".into());
        }
        let step = step_of(kind, iosize, random).map(|step| format!("{step}{suffix}"));
        let per = if dsync { 2 } else { 1 };
        match step {
            Ok(step) if steps.len() + per * iters as usize <= crate::flow::MAX_FLOW_STEPS => {
                for _ in 0..iters {
                    steps.push(step.clone());
                    if dsync {
                        steps.push(format!("fsync{suffix}"));
                    }
                }
            }
            Ok(_) => {
                let max = crate::flow::MAX_FLOW_STEPS;
                r.problem(
                    span.clone(),
                    kind,
                    format!("at most {max} steps in a thread's flow"),
                    "more with this flowop",
                );
                break;
            }
            Err(k) if k.ends_with("needs iosize here") => r.problem(span.clone(), kind, "iosize=SIZE", k),
            Err(_) => {
                r.problem(span.clone(), kind, "a flowop with a flow step (see docs/import.md)", refused_flowop(kind))
            }
        }
    }
    let name = if t.name.is_empty() { p.name.clone() } else { t.name.clone() };
    let _ = writeln!(out, "\n[[workload]]\nname = {}", toml_string(&name));
    let _ = writeln!(out, "threads = {}", (p.instances * t.instances).min(4096));
    for n in notes {
        let _ = writeln!(out, "{n}");
    }
    if let Some((rounds, why)) = rate {
        if let Some(other) = r.limited.replace(name.clone()) {
            let why = format!("{other} and {name} share the event generator's events, which ioscope's rates do not");
            let span = r.eventgen.as_ref().map_or(0..0, |e| e.1.clone());
            r.problem(span, "eventgen", "one workload limited by the event generator", why);
        }
        let _ = writeln!(out, "# {why}\nflow_rate = {rounds}");
    }
    let quoted: Vec<String> = steps.iter().map(|s| toml_string(s)).collect();
    let _ = writeln!(out, "flow = [\n  {},\n]", quoted.join(",\n  "));
}

/// Converts a Filebench workload file; every problem as a [`crate::Diagnostic`] pointing
/// at it in the file.
pub fn import(file: &crate::SourceFile) -> Result<String, Vec<crate::Diagnostic>> {
    convert(&file.text).map_err(|problems| {
        let omitted = problems.len().saturating_sub(crate::diagnostic::MAX_DIAGNOSTICS);
        let mut diags: Vec<crate::Diagnostic> = problems
            .into_iter()
            .take(crate::diagnostic::MAX_DIAGNOSTICS)
            .map(|Problem { span, option, expected, why }| {
                // Within the text and on characters (a continued line's offsets are approximate).
                let on_char = |mut b: usize| {
                    b = b.min(file.text.len());
                    while !file.text.is_char_boundary(b) {
                        b -= 1;
                    }
                    b
                };
                let start = on_char(span.start);
                let span = start..on_char(span.end).max(start);
                // The carets show what is written: the headline names the option alone.
                let d = crate::Diagnostic::in_file(&file.path, &file.text, span, option, "", expected, why);
                crate::Diagnostic { foreign: true, ..d }
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

    const FILESERVER: &str = include_str!("../../../examples/filebench/fileserver.f");
    const OLTP: &str = include_str!("../../../examples/filebench/oltp.f");

    #[test]
    fn a_cut_or_garbled_workload_file_is_refused_or_converted_never_a_panic() {
        for text in [FILESERVER, OLTP] {
            let cuts = (0..text.len()).filter(|i| text.is_char_boundary(*i)).step_by(5);
            for cut in cuts {
                let _ = convert(&text[..cut]);
                let garbled = format!("{}é,{{}}\n$\u{2028}{}", &text[..cut], &text[cut..]);
                let file = crate::SourceFile { path: "x.f".into(), text: garbled };
                let _ = import(&file);
            }
        }
    }

    #[test]
    fn cvar_gamma_becomes_gamma_sizes_and_a_plain_size_a_size() {
        assert_eq!(
            size_of("cvar(type=cvar-gamma,parameters=mean:131072;gamma:1.5)").as_deref(),
            Some("gamma:128k:1.5")
        );
        assert_eq!(size_of("16k").as_deref(), Some("16k"));
        assert_eq!(size_of("cvar(type=cvar-lognormal,parameters=mean:1;sigma:2)"), None);
    }
}
