//! The key table: every workload key written once, with its command-line flag, the form of
//! its value, its default, its help, the sections it is valid in and fio's spellings of it.
//!
//! The CLI builds its workload flags from [`KEYS`], the TOML walker and `--set` accept its
//! names, `ioscope run --help` and the reference in docs/workload.md are generated from it
//! (see [`crate::reference`]), and fio's option names resolve through [`by_fio_name`].

/// Where a key may be written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Section {
    /// Top-level keys (and their flags).
    Top,
    /// `[dataset]`.
    Dataset,
    /// Each `[[fileset]]`: another tree beside the dataset, for flows.
    Fileset,
    /// Each `[[workload]]`.
    Workload,
    /// Each `[[probe]]`.
    Probe,
    /// Each `[[host]]`.
    Host,
    /// Each `[[check]]`.
    Check,
}

impl Section {
    /// The section's name as in `--set SECTION.KEY`; "" for the top level.
    pub fn name(self) -> &'static str {
        match self {
            Section::Top => "",
            Section::Dataset => "dataset",
            Section::Fileset => "fileset",
            Section::Workload => "workload",
            Section::Probe => "probe",
            Section::Host => "host",
            Section::Check => "check",
        }
    }
    /// Whether the file holds several of it (`[[workload]]`).
    pub fn is_array(self) -> bool {
        matches!(self, Section::Fileset | Section::Workload | Section::Probe | Section::Host | Section::Check)
    }
    /// The sections, in file order.
    pub const ALL: [Section; 7] = [
        Section::Top,
        Section::Dataset,
        Section::Fileset,
        Section::Workload,
        Section::Probe,
        Section::Host,
        Section::Check,
    ];
    /// The sub-tables: every section but the top level.
    pub const TABLES: [Section; 6] =
        [Section::Dataset, Section::Fileset, Section::Workload, Section::Probe, Section::Host, Section::Check];
}

/// A key's default, declared once as a typed value: the reader applies it when the key is
/// absent, and the reference and `--help` show it ([`KeyDefault::to_string`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum KeyDefault {
    /// No default: the key is optional (absent: off, none) or required.
    None,
    /// A whole number.
    Int(u64),
    /// A size in bytes, shown as a size (`4k`).
    Size(u64),
    /// Whole seconds, shown in seconds (`60s`; 0 is `0`).
    Secs(u64),
    Bool(bool),
    /// One of the key's names (`posix`, `randread`).
    Word(&'static str),
    /// A TOML string, shown quoted as in a file (`"1%"`).
    Quoted(&'static str),
    /// Made by a rule from other keys or the context; the text says how (`its rw`).
    Said(&'static str),
}

impl KeyDefault {
    /// Whether there is nothing to show.
    pub fn is_empty(&self) -> bool {
        matches!(self, KeyDefault::None)
    }
    /// The value as a whole number (of an `Int`, `Size` or `Secs` default), else None.
    pub fn number(&self) -> Option<u64> {
        match *self {
            KeyDefault::Int(n) | KeyDefault::Size(n) | KeyDefault::Secs(n) => Some(n),
            _ => None,
        }
    }
    /// The value as text (of a `Word` or `Quoted` default), else None.
    pub fn word(&self) -> Option<&'static str> {
        match *self {
            KeyDefault::Word(w) | KeyDefault::Quoted(w) => Some(w),
            _ => None,
        }
    }
    /// The value as a TOML value, as a file would set it (None for `None` and `Said`).
    pub fn toml(&self) -> Option<String> {
        match *self {
            KeyDefault::Int(n) => Some(n.to_string()),
            KeyDefault::Size(n) => Some(crate::canonical::toml_string(&crate::units::size_literal(n))),
            KeyDefault::Secs(n) => Some(format!("\"{n}s\"")),
            KeyDefault::Bool(b) => Some(b.to_string()),
            KeyDefault::Word(w) | KeyDefault::Quoted(w) => Some(crate::canonical::toml_string(w)),
            KeyDefault::None | KeyDefault::Said(_) => None,
        }
    }
}

impl std::fmt::Display for KeyDefault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            KeyDefault::None => Ok(()),
            KeyDefault::Int(n) => write!(f, "{n}"),
            KeyDefault::Size(n) => f.write_str(&crate::units::size_literal(n)),
            KeyDefault::Secs(0) => f.write_str("0"),
            KeyDefault::Secs(n) => write!(f, "{n}s"),
            KeyDefault::Bool(b) => write!(f, "{b}"),
            KeyDefault::Word(w) | KeyDefault::Said(w) => f.write_str(w),
            KeyDefault::Quoted(w) => write!(f, "\"{w}\""),
        }
    }
}

/// One workload key.
#[derive(Debug)]
pub struct Key {
    /// The TOML key (also the `--set` name, with `SECTION.` inside a section).
    pub name: &'static str,
    /// Where it is valid; one entry per meaning (`files` at the top level and in
    /// `[dataset]` mean different things, so they are two entries).
    pub sections: &'static [Section],
    /// Its own long flag, without dashes (`rwmix-read`); `--rwmix_read` (the TOML spelling)
    /// is accepted too. None: only `--set` and the file.
    pub flag: Option<&'static str>,
    /// Its short flag, if any.
    pub short: Option<char>,
    /// The form of its value on the command line (`SIZE`); "" for a switch (`--direct`,
    /// also `--direct=1` or `--direct=0`).
    pub form: &'static str,
    /// The default: the value the Plan gets without the key, typed (the reader applies it
    /// from here; the reference and `--help` show it).
    pub default: KeyDefault,
    /// One line, for `--help`.
    pub help: &'static str,
    /// Makes the help instead, for a key whose help lists another table's entries (`engine`:
    /// the engine table), so it never goes stale.
    pub help_from: Option<fn() -> String>,
    /// More for the reference in docs/workload.md ("" when the help says it all).
    pub doc: &'static str,
    /// fio's names for it with the same meaning (`numjobs`, and `bs` where fio's name is
    /// the key's own); each is also accepted as a flag.
    pub fio: &'static [&'static str],
    /// fio's values and the value they mean here (`psync` is engine `posix`).
    pub fio_values: &'static [(&'static str, &'static str)],
    /// A valid TOML value, for the reference and the tests.
    pub example: &'static str,
}

impl Key {
    /// The one-line help: made by `help_from` if the key has it, else `help`.
    pub fn help_text(&self) -> String {
        self.help_from.map_or_else(|| self.help.to_string(), |f| f())
    }

    /// Whether the key is valid in `section`.
    pub fn is_in(&self, section: Section) -> bool {
        self.sections.contains(&section)
    }
    /// Whether its flag is a switch (no value, or `=1`/`=0`).
    pub fn is_switch(&self) -> bool {
        self.form.is_empty()
    }
    /// Every command-line spelling, without the leading dashes: its flag, its TOML name when
    /// it differs (`rwmix_read`), fio's names, each with `_` and with `-` (`ramp_time`,
    /// `ramp-time`). None when it has no flag of its own.
    pub fn spellings(&self) -> Vec<String> {
        let Some(flag) = self.flag else { return Vec::new() };
        let mut out: Vec<String> = Vec::new();
        for s in [flag, self.name].into_iter().chain(self.fio.iter().copied()) {
            for v in [s.to_string(), s.replace('_', "-")] {
                if !out.contains(&v) {
                    out.push(v);
                }
            }
        }
        out
    }
    /// The value a fio value means here (`psync` → `posix`), or the value itself.
    pub fn native_value<'v>(&self, value: &'v str) -> &'v str {
        let lc = value.trim().to_ascii_lowercase();
        self.fio_values.iter().find(|(fio, _)| *fio == lc).map_or(value, |(_, native)| native)
    }
}

const TOP: &[Section] = &[Section::Top];
const TOP_AND_WORKLOAD: &[Section] = &[Section::Top, Section::Workload];
const DATASET: &[Section] = &[Section::Dataset];
/// The keys of a tree's shape: the dataset's and each fileset's.
const TREE: &[Section] = &[Section::Dataset, Section::Fileset];
const WORKLOAD: &[Section] = &[Section::Workload];
const PROBE: &[Section] = &[Section::Probe];
const HOST: &[Section] = &[Section::Host];
const CHECK: &[Section] = &[Section::Check];

/// A key with no flag, no fio name and no default: most section keys.
const fn plain(name: &'static str, sections: &'static [Section], help: &'static str, example: &'static str) -> Key {
    Key {
        name,
        sections,
        flag: None,
        short: None,
        form: "",
        default: KeyDefault::None,
        help,
        help_from: None,
        doc: "",
        fio: &[],
        fio_values: &[],
        example,
    }
}

/// Every workload key, in canonical order: top level, then `[dataset]`, `[[workload]]`,
/// `[[probe]]`.
pub const KEYS: &[Key] = &[
    plain("description", TOP, "Free text describing the workload.", "\"nightly randread\""),
    Key {
        name: "engine",
        sections: TOP,
        flag: Some("engine"),
        short: None,
        form: "ENGINE",
        default: KeyDefault::Word("posix"),
        help: "",
        help_from: Some(engine_help),
        doc: "nfs needs no mount and has no client cache; `uring` is also spelled `io_uring`; fio's `psync`, `sync`, `pvsync` and `pvsync2` are `posix`; `libaio` is refused (use `uring` for queued asynchronous I/O), but fio's spelling `--ioengine=libaio` (or `posixaio`) is converted to `uring` with a warning, as the fio importer converts it",
        fio: &["ioengine"],
        fio_values: &[("psync", "posix"), ("sync", "posix"), ("pvsync", "posix"), ("pvsync2", "posix")],
        example: "\"null\"",
    },
    Key {
        name: "rw",
        sections: TOP_AND_WORKLOAD,
        flag: Some("rw"),
        short: None,
        form: "PATTERN",
        default: KeyDefault::Word("randread"),
        help: "Access pattern: read, write, rw (sequential mixed), randread, randwrite or randrw.",
        help_from: None,
        doc: "at the top level, the one workload of a file without `[[workload]]`; in a `[[workload]]`, instead of `operation` and `fileio`; fio's `readwrite` is `rw`; fio's offset modifier is taken too: `read:-8k` is `rw = \"read\"` with `seq_skip = \"-8k\"`",
        fio: &["rw", "readwrite"],
        fio_values: &[("readwrite", "rw")],
        example: "\"randrw\"",
    },
    Key {
        name: "rwmix_read",
        sections: TOP_AND_WORKLOAD,
        flag: Some("rwmix-read"),
        short: None,
        form: "PCT",
        default: KeyDefault::Int(50),
        help: "Share of reads in percent, for --rw rw or randrw (in a [[workload]]: operation read or write).",
        help_from: None,
        doc: "",
        fio: &["rwmixread"],
        fio_values: &[],
        example: "70",
    },
    Key {
        name: "bs",
        sections: TOP_AND_WORKLOAD,
        flag: Some("bs"),
        short: None,
        form: "SIZE",
        default: KeyDefault::Size(4096),
        help: "Transfer size (4k), or a weighted list (4k:60,32k:25,512k:10,4m:5).",
        help_from: None,
        doc: "sizes are binary (4k = 4096 bytes)",
        fio: &["bs", "blocksize"],
        fio_values: &[],
        example: "\"4k:60,64k:40\"",
    },
    // Access patterns (crate::access): where in a file the I/Os go, and when they are due.
    Key {
        name: "seq_skip",
        sections: TOP_AND_WORKLOAD,
        flag: Some("seq-skip"),
        short: None,
        form: "SIZE",
        default: KeyDefault::Size(0),
        help: "Sequential: bytes skipped after each I/O (4k leaves 4 KiB holes); negative moves back (-8k with bs 4k reads backwards).",
        help_from: None,
        doc: "fio's `rw=read:4k` and `rw=read:-8k`; the next I/O starts `seq_skip` bytes after the end of the last; a stream that leaves a file goes on at the next file's start (forwards) or the previous file's last block (backwards); a multiple of 512 bytes; only for sequential workloads",
        fio: &[],
        fio_values: &[],
        example: "\"-8k\"",
    },
    Key {
        name: "random_distribution",
        sections: TOP_AND_WORKLOAD,
        flag: Some("random-distribution"),
        short: None,
        form: "DIST",
        default: KeyDefault::Word("random"),
        help: "Random: how offsets are drawn: random (uniform), zipf:THETA, pareto:H, normal:DEV (each with an optional :CENTER), or zones (zoned:60/10:40/90, zoned_abs:60/1g:40/9g).",
        help_from: None,
        doc: "fio's parameters; the hottest blocks are contiguous, from the file's start (or from CENTER, a fraction from 0 to 1), so the skew is a band in the offset heat map, where fio scatters them (see [Access patterns](#access-patterns)); zipf THETA above 0 and at most 10; pareto H between 0 and 1; normal DEV a percentage of the file (the standard deviation), around the middle by default; up to 256 zones, their I/O shares adding up to 100; only for random workloads",
        fio: &["random_distribution"],
        fio_values: &[],
        example: "\"zipf:1.2\"",
    },
    Key {
        name: "percentage_random",
        sections: TOP_AND_WORKLOAD,
        flag: Some("percentage-random"),
        short: None,
        form: "PCT",
        default: KeyDefault::Int(100),
        help: "Random: share of I/Os at a random offset in percent; the others continue a sequential stream.",
        help_from: None,
        doc: "from 0 to 100; the sequential I/Os follow one stream of their own, which the random ones do not move (fio continues from the last random I/O instead; see [Access patterns](#access-patterns)); only for random workloads",
        fio: &["percentage_random"],
        fio_values: &[],
        example: "50",
    },
    Key {
        name: "arrivals",
        sections: TOP_AND_WORKLOAD,
        flag: Some("arrivals"),
        short: None,
        form: "PROCESS",
        default: KeyDefault::Word("uniform"),
        help: "Open loop: I/Os due at even intervals (uniform) or as a Poisson process (poisson), at the same mean rate.",
        help_from: None,
        doc: "fio's `rate_process` (`linear` is `uniform`); latency is still measured from each I/O's intended start; needs a rate (rate_iops or curve)",
        fio: &["rate_process"],
        fio_values: &[("linear", "uniform")],
        example: "\"poisson\"",
    },
    // Data content (crate::content): what the bytes written are. At the top level for the
    // laid-out files and every workload; in a [[workload]], for its writes.
    Key {
        name: "compress_ratio",
        sections: TOP_AND_WORKLOAD,
        flag: Some("compress-ratio"),
        short: None,
        form: "RATIO",
        default: KeyDefault::Int(1),
        help: "Write data that compresses this much (2 = to half): each compress_chunk is random for 1/RATIO of its length, then zeros.",
        help_from: None,
        doc: "a number from 1 to 100, or `N:1`; fio's `buffer_compress_percentage=P` is 100/(100−P), vdbench's `compratio` the same number (see [Data content](#data-content))",
        fio: &[],
        fio_values: &[],
        example: "2",
    },
    Key {
        name: "compress_chunk",
        sections: TOP_AND_WORKLOAD,
        flag: Some("compress-chunk"),
        short: None,
        form: "SIZE",
        default: KeyDefault::Size(4096),
        help: "The unit of compress_ratio: chunks aligned on file offsets, each random then zeros.",
        help_from: None,
        doc: "from 64 bytes to 1 MiB; fio's `buffer_compress_chunk` (whose default, 512, the importer keeps)",
        fio: &["buffer_compress_chunk"],
        fio_values: &[],
        example: "\"512\"",
    },
    Key {
        name: "dedup_ratio",
        sections: TOP_AND_WORKLOAD,
        flag: Some("dedup-ratio"),
        short: None,
        form: "RATIO",
        default: KeyDefault::Int(1),
        help: "Write data that dedups this much (3 = each dedup_unit's content is written three times).",
        help_from: None,
        doc: "a number from 1 to 1000, or `N:1`; a unit's content depends on where it is (a file and the unit's index divided by the ratio), so rewriting a block writes the same bytes again; fio's `dedupe_percentage=P` is 100/(100−P), vdbench's `dedupratio` the same number",
        fio: &[],
        fio_values: &[],
        example: "3",
    },
    Key {
        name: "dedup_unit",
        sections: TOP_AND_WORKLOAD,
        flag: Some("dedup-unit"),
        short: None,
        form: "SIZE",
        default: KeyDefault::Size(4096),
        help: "The unit of dedup_ratio, aligned on file offsets.",
        help_from: None,
        doc: "from 512 bytes to 1 MiB, a multiple of 512; vdbench's `dedupunit`; fio dedups whole buffers, so the importer sets the job's block size",
        fio: &[],
        fio_values: &[],
        example: "\"8k\"",
    },
    Key {
        name: "zero_buffers",
        sections: TOP_AND_WORKLOAD,
        flag: Some("zero-buffers"),
        short: None,
        form: "",
        default: KeyDefault::Bool(false),
        help: "Write zeros (an array that detects zero blocks stores nothing).",
        help_from: None,
        doc: "not with compress_ratio or dedup_ratio; under verify each verify block still has its header",
        fio: &[],
        fio_values: &[],
        example: "true",
    },
    Key {
        name: "size",
        sections: TOP,
        flag: Some("size"),
        short: None,
        form: "SIZE",
        default: KeyDefault::Size(1 << 30),
        help: "Working-set size over all files (256m, 10g); without a [dataset].",
        help_from: None,
        doc: "all threads share this one working set (fio's `size` is per job, each of its numjobs with its own files); on a block device, the device's first `size` bytes, and without `size` the whole device (the run records the size it used)",
        fio: &["size"],
        fio_values: &[],
        example: "\"256m\"",
    },
    Key {
        name: "files",
        sections: TOP,
        flag: Some("files"),
        short: None,
        form: "N",
        default: KeyDefault::Int(1),
        help: "Number of files the working set is split into; without a [dataset].",
        help_from: None,
        doc: "",
        fio: &["nrfiles"],
        fio_values: &[],
        example: "4",
    },
    Key {
        name: "threads",
        sections: TOP_AND_WORKLOAD,
        flag: Some("threads"),
        short: None,
        form: "N",
        default: KeyDefault::Int(1),
        help: "Worker threads (of the one workload; in a [[workload]], of that workload).",
        help_from: None,
        doc: "",
        fio: &["numjobs"],
        fio_values: &[],
        example: "2",
    },
    Key {
        name: "name",
        sections: TOP,
        flag: Some("name"),
        short: None,
        form: "NAME",
        default: KeyDefault::Said("its rw"),
        help: "Name of the one workload of a run without [[workload]].",
        help_from: None,
        doc: "",
        fio: &["name"],
        fio_values: &[],
        example: "\"job1\"",
    },
    Key {
        name: "iodepth",
        sections: TOP_AND_WORKLOAD,
        flag: Some("iodepth"),
        short: None,
        form: "N",
        default: KeyDefault::Int(1),
        help: "I/Os in flight per thread (engines uring, nfs and null; posix is synchronous: 1).",
        help_from: None,
        doc: "each keeps a buffer of the largest bs, so iodepth × largest bs is at most 1 GiB per thread and threads × iodepth × largest bs at most 64 GiB",
        fio: &["iodepth"],
        fio_values: &[],
        example: "8",
    },
    Key {
        name: "sqpoll",
        sections: TOP,
        flag: Some("sqpoll"),
        short: None,
        form: "",
        default: KeyDefault::Bool(false),
        help: "io_uring: let a kernel thread poll the submission queue (engine uring).",
        help_from: None,
        doc: "",
        fio: &["sqthread_poll"],
        fio_values: &[],
        example: "true",
    },
    Key {
        name: "duration",
        sections: TOP,
        flag: Some("duration"),
        short: None,
        form: "DUR",
        default: KeyDefault::Secs(60),
        help: "How long each step measures (30s, 5m, 1h30m; a bare number is seconds).",
        help_from: None,
        doc: "vdbench `elapsed`: whole seconds, at least `1s` (results are recorded once a second); all steps with their warm-ups at most 30 days",
        fio: &["runtime"],
        fio_values: &[],
        example: "\"90s\"",
    },
    Key {
        name: "dir",
        sections: TOP,
        flag: Some("dir"),
        short: None,
        form: "PATH",
        default: KeyDefault::None,
        help: "Directory for the working set; ioscope creates and marks its own files there. A block device (/dev/X, engines posix and uring) is used itself, with --force; so is an existing file (read as it is; written only with --force).",
        help_from: None,
        doc: "a block device is read and written from offset 0 to `size` (at most the device's size; without `size`, all of it; `files` = 1), with `direct` every block size a multiple of its logical block size (else refused, naming it), with nothing else written on it (no marker, no lock file); it is refused without `--force`, since a run that writes destroys its data, and refused even with it while mounted or in use by another run (the run holds it open exclusively, O_EXCL); an existing regular file (not ioscope's, e.g. fio's `filename=/data/f` without a size) is likewise used itself, from offset 0 to `size` (without `size`, all of it; `files` = 1): reading it needs no `--force`, writing into it or preconditioning it does, and `--cleanup` never removes it; also the default dataset anchor; one run at a time (a second run on it is refused, naming the first's pid and results file); its parent must exist: ioscope makes only the last part of the path, and `--cleanup` removes it again",
        fio: &["directory"],
        fio_values: &[],
        example: "\"/mnt/test\"",
    },
    Key {
        name: "target",
        sections: TOP,
        flag: Some("target"),
        short: None,
        form: "URL",
        default: KeyDefault::None,
        help: "Engine nfs: the NFS server, export and directory, nfs://HOST[:PORT]/EXPORT[/DIR][?version=3|4.1&nconnect=N&uid=U&gid=G]. Engine s3: the bucket and prefix, s3://BUCKET[/PREFIX][?endpoint=URL&region=R]. Engine smb: the share and directory, smb://[USER@]HOST[:PORT]/SHARE[/DIR][?timeout=S&encrypt=required|allowed|disabled&sign=required|auto]. Engines posix and uring: a block device /dev/X, as --dir.",
        help_from: None,
        doc: "flat working sets and `[dataset]` file trees both live there (see docs/testing-nfs.md); options `version=3` (the default) or `version=4.1` (NFSv4.1: no portmapper or MOUNT, port 2049 unless given, the path walked from the server's pseudo root; NFSv4.0 and 4.2 are refused; docs/testing-nfs.md), `nconnect=N` (connections per thread, 1 to 64), `uid=U`, `gid=G` (AUTH_SYS), `mountport=P` (else the portmapper on port 111 is asked), `timeout=S` (seconds before a call counts as timed out, 1 to 3600; default 10); an IPv6 address goes in brackets (`nfs://[::1]:2049/export`); a value out of range is refused, never clamped; engine s3 (docs/s3.md): options `endpoint=http[s]://HOST[:PORT]` (the server; default AWS, `https://s3.REGION.amazonaws.com`), `region=R` (else AWS_REGION, AWS_DEFAULT_REGION, us-east-1), `style=path|virtual` (how the bucket is addressed; path with an endpoint, virtual for AWS), `profile=P` (the credentials profile), `timeout=S` (default 30), `part_size=SIZE` (multipart parts, 5m to 5g; default 8m); credentials come from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN) or a profile of ~/.aws/credentials, and are never printed or stored; engine smb (docs/smb.md): `USER@` the account (`DOMAIN;USER`; `guest` when absent), PORT 445 unless given, options `timeout=S` (default 30), `encrypt=required|allowed|disabled` (SMB3 encryption; default allowed: encrypted only if the server asks) and `sign=required|auto` (default auto: signed only if the server requires it); the password comes from IOSCOPE_SMB_PASSWORD or the file named by IOSCOPE_SMB_PASSWORD_FILE, never from the URL, and is never printed or stored",
        fio: &[],
        fio_values: &[],
        example: "\"nfs://server/export/dir?nconnect=4\"",
    },
    Key {
        name: "direct",
        sections: TOP_AND_WORKLOAD,
        flag: Some("direct"),
        short: None,
        form: "",
        default: KeyDefault::Bool(false),
        help: "O_DIRECT: bypass the page cache (--direct, --direct=1; --direct=0 is off).",
        help_from: None,
        doc: "",
        fio: &["direct"],
        fio_values: &[],
        example: "true",
    },
    Key {
        name: "sync",
        sections: TOP_AND_WORKLOAD,
        flag: Some("sync"),
        short: None,
        form: "MODE",
        default: KeyDefault::Word("none"),
        help: "After each write: none, fsync, fdatasync; or dsync (open with O_DSYNC).",
        help_from: None,
        doc: "fsync and fdatasync are recorded as their own operations; fio's `--fsync=1` and `--fdatasync=1` are `fsync` and `fdatasync`",
        fio: &[],
        fio_values: &[],
        example: "\"fdatasync\"",
    },
    Key {
        name: "cache",
        sections: TOP,
        flag: Some("cache"),
        short: None,
        form: "MODE",
        default: KeyDefault::Word("cold"),
        help: "The page cache at the start (preparation, not measured): cold (each file's data synced and its pages dropped, as fio's invalidate=1), warm (each file read once) or as-is.",
        help_from: None,
        doc: "docs/cache.md; `cold` is fio's default (`invalidate=1`): after preparation each file is synced (fdatasync) and its cached pages dropped (`posix_fadvise(POSIX_FADV_DONTNEED)`), so the run starts from the device, whatever preparation or an earlier run left; `warm` reads each file once, whole, through the page cache; `as-is` does nothing. With `direct` it matters less (O_DIRECT reads and writes around the cache) but still applies. Engines nfs, s3 and smb keep no client cache: `cold` drops nothing there (and says so), `warm` is refused. Each host of a many-host run does it for its own files. What was done (files, bytes, time) is recorded in the results and shown in the summary; fio's `invalidate=1` and `invalidate=0` are `cold` and `as-is`",
        fio: &[],
        fio_values: &[],
        example: "\"warm\"",
    },
    Key {
        name: "warmup",
        sections: TOP,
        flag: Some("warmup"),
        short: None,
        form: "DUR|auto",
        default: KeyDefault::Secs(0),
        help: "Unmeasured time before each step (excluded from the summary); 0, whole seconds, or auto (each step's seconds before it became steady).",
        help_from: None,
        doc: "`auto` runs each step for its duration and then marks the seconds before the step became steady (docs/steady-state.md) as warm-up in the results file, so the summary, SQL views and UI leave them out; a step that never becomes steady keeps every second, and the summary says it was not steady",
        fio: &["ramp_time"],
        fio_values: &[],
        example: "\"5s\"",
    },
    Key {
        name: "steady_window",
        sections: TOP,
        flag: Some("steady-window"),
        short: None,
        form: "DUR",
        default: KeyDefault::Secs(10),
        help: "Seconds a step must hold steady throughput and latency to be called steady (docs/steady-state.md).",
        help_from: None,
        doc: "the window of the steady-state rule: over it, the least-squares slope of IOPS, MB/s and p50 latency stays within 2% of the mean per second and their range within 50% of the mean; at least 2s",
        fio: &["ss_dur"],
        fio_values: &[],
        example: "\"20s\"",
    },
    Key {
        name: "until_steady",
        sections: TOP,
        flag: Some("until-steady"),
        short: None,
        form: "DUR",
        default: KeyDefault::None,
        help: "End the run once it has been steady for this window; the duration becomes its maximum.",
        help_from: None,
        doc: "evaluated every second with the steady-state rule over this window (which it sets, in place of `steady_window`); the step's row records the real duration and the summary says it ended early, steady; for a run of one step (no loops or staircase)",
        fio: &[],
        fio_values: &[],
        example: "\"10s\"",
    },
    Key {
        name: "io_size",
        sections: TOP,
        flag: Some("io-size"),
        short: None,
        form: "SIZE",
        default: KeyDefault::None,
        help: "End each workload once it has issued this many bytes (its threads together); the step ends at its duration or when every workload has ended, whichever comes first.",
        help_from: None,
        doc: "an end by amount, as fio's `io_size`: without a `duration` the step runs until the amount is moved (at most 24h); with one, whichever comes first. The summary says what ended the run. For a run of one step, on one host, without a `[dataset]` or a pattern. fio's `io_size` is per job clone, so an imported job's is multiplied by its `numjobs`",
        fio: &["io_size", "io_limit"],
        fio_values: &[],
        example: "\"8g\"",
    },
    Key {
        name: "number_ios",
        sections: TOP,
        flag: Some("number-ios"),
        short: None,
        form: "N",
        default: KeyDefault::None,
        help: "End each workload once it has issued this many I/Os (its threads together).",
        help_from: None,
        doc: "as `io_size`, counted in I/Os (fio's `number_ios`, per job clone there); from 1 to 2^48",
        fio: &["number_ios"],
        fio_values: &[],
        example: "1000000",
    },
    Key {
        name: "passes",
        sections: TOP,
        flag: Some("passes"),
        short: None,
        form: "N",
        default: KeyDefault::None,
        help: "End each workload after this many passes over its working set (passes × the working set's bytes).",
        help_from: None,
        doc: "as `io_size` with passes × size × files bytes (fio's `loops` of a job without `time_based`); a sequential workload covers each block once per pass, a random one moves as many bytes without covering every block; from 1 to 1000",
        fio: &["loops"],
        fio_values: &[],
        example: "2",
    },
    Key {
        name: "precondition",
        sections: TOP,
        flag: Some("precondition"),
        short: None,
        form: "Nx sequential write",
        default: KeyDefault::None,
        help: "Before the run, write the whole working set N times sequentially (128 KiB writes); recorded, not measured.",
        help_from: None,
        doc: "as SNIA's Performance Test Specification preconditions an SSD before steady state (\"2x sequential write\": twice the capacity in 128 KiB sequential writes): after preparation and before the cache step, one thread per file writes it whole N times, at the run's engine, `iodepth` and `direct`, through the measured core; its seconds are not the run's, but its bytes, time, MB/s per second and any error are recorded in the results and shown in the summary (`precondition`); an error fails the run before it measures. With a device, writing needs `--force` as any write does; not with `verify` (the writes carry no verify header), hosts or a `[dataset]`; N from 1 to 16",
        fio: &[],
        fio_values: &[],
        example: "\"2x sequential write\"",
    },
    Key {
        name: "rate_iops",
        sections: TOP_AND_WORKLOAD,
        flag: Some("rate-iops"),
        short: None,
        form: "N",
        default: KeyDefault::Said("max"),
        help: "Open loop: issue this many I/Os per second over all threads; latency counts from the schedule.",
        help_from: None,
        doc: "vdbench `fwdrate`/`iorate`; at the top level over all threads and workloads; in a `[[workload]]`, that workload's own rate (fio's per-job `rate_iops`): then every workload sets one, and the run has no top-level `rate_iops`, `curve` or `skew`",
        fio: &["rate_iops"],
        fio_values: &[],
        example: "2000",
    },
    Key {
        name: "curve",
        sections: TOP,
        flag: None,
        short: None,
        form: "",
        default: KeyDefault::None,
        help: "Rate curve: a first step at max rate, then steps at these percentages of it.",
        help_from: None,
        doc: "e.g. `[10, 50, 90, 100]`; `curve = true` means 10, 20 ... 100",
        fio: &[],
        fio_values: &[],
        example: "[50, 100]",
    },
    Key {
        name: "for_threads",
        sections: TOP,
        flag: None,
        short: None,
        form: "",
        default: KeyDefault::None,
        help: "Steps over thread counts, e.g. [1, 2, 4, 8] (vdbench forthreads).",
        help_from: None,
        doc: "",
        fio: &[],
        fio_values: &[],
        example: "[1, 2]",
    },
    Key {
        name: "for_iodepth",
        sections: TOP,
        flag: None,
        short: None,
        form: "",
        default: KeyDefault::None,
        help: "Steps over queue depths: I/Os in flight per thread of every workload, e.g. [1, 4, 16, 64].",
        help_from: None,
        doc: "a latency-against-depth sweep in one run: each step runs every workload at that depth (in place of `iodepth`, which no workload may then set); the steps come after the thread steps and before the bs steps, labelled `iodepth=N`; each thread opens its engine once, at the deepest; a queueing engine (uring, nfs, s3, smb, null), at most its own depth; not with a `[dataset]`",
        fio: &[],
        fio_values: &[],
        example: "[1, 8, 32]",
    },
    plain("for_bs", TOP, "Steps over transfer sizes, e.g. [\"4k\", \"64k\"] (vdbench forxfersize).", "[\"4k\", \"8k\"]"),
    plain("for_rwmix_read", TOP, "Steps over read shares, e.g. [0, 50, 100] (vdbench forrdpct).", "[0, 100]"),
    Key {
        name: "staircase",
        sections: TOP,
        flag: Some("staircase"),
        short: None,
        form: "RAMP",
        default: KeyDefault::None,
        help: "Step threads up: START-MAX[+ADD]/EVERY, e.g. 1-8/5s (1 to 8 threads, one more every 5 s); hosts:1-4/60s steps hosts up.",
        help_from: None,
        doc: "or `\"2-16+2/10s\"`; the step length is whole seconds, at least `1s`; `\"hosts:1-4/60s\"` (with hosts) runs the first host alone, then one more host every 60 s, the others idling until their step; its last step must use every host, and it takes the place of `for_threads`",
        fio: &[],
        fio_values: &[],
        example: "\"1-2/1s\"",
    },
    Key {
        name: "force",
        sections: TOP,
        flag: Some("force"),
        short: None,
        form: "",
        default: KeyDefault::Bool(false),
        help: "Write into files ioscope did not create, or onto a block device (destroying its data).",
        help_from: None,
        doc: "",
        fio: &[],
        fio_values: &[],
        example: "true",
    },
    Key {
        name: "cleanup",
        sections: TOP,
        flag: Some("cleanup"),
        short: None,
        form: "",
        default: KeyDefault::Bool(false),
        help: "Remove the files ioscope created after the run.",
        help_from: None,
        doc: "",
        fio: &[],
        fio_values: &[],
        example: "true",
    },
    Key {
        name: "max_errors",
        sections: TOP,
        flag: Some("max-errors"),
        short: None,
        form: "N|PCT%",
        default: KeyDefault::Quoted("1%"),
        help: "End the run as failed past N failed I/Os or PCT% of the I/Os (off: never).",
        help_from: None,
        doc: "the run then ends with exit 1 and its results kept; a count (`1000`, `0` = any error), a share of the I/Os attempted (`\"0.1%\"`, judged once 1,000 I/Os were attempted), or `\"off\"`; with any limit but `\"off\"`, a run in which no I/O succeeds for 5 s in a row while I/Os fail ends too (a dead device, a hung server), one in which nothing succeeded at all is failed at its end whatever the count, and so does one in which the file system refuses every write for a whole second (ENOSPC, EDQUOT, EROFS: full or read-only; docs/exit-codes.md)",
        fio: &[],
        fio_values: &[],
        example: "\"off\"",
    },
    Key {
        name: "verify",
        sections: TOP,
        flag: Some("verify"),
        short: None,
        form: "[fail|report]",
        default: KeyDefault::Quoted("off"),
        help: "Stamp a header into every written block and check every block read back: off, fail (any mismatch fails the run, exit 1) or report; the flag alone is fail.",
        help_from: None,
        doc: "each block carries run, file, offset, write number and an XXH3 checksum; reads report corrupt, misplaced, stale and lost blocks with file, offset, expected and found header (docs/verify.md); verification is its own series (op `verify`: blocks checked, the check's time per block) and the summary's `verification` section; `--verify report` counts and shows mismatches without failing the run; covers flat working sets and [dataset] trees (a file a dataset operation replaces is checked again once written); not with hosts, a pattern workload or engine null; fio's `verify=md5|crc32c|xxhash|...` is `fail` (ioscope's own header and checksum are used)",
        fio: &["verify"],
        fio_values: &[
            ("0", "off"),
            ("md5", "fail"),
            ("crc64", "fail"),
            ("crc32c", "fail"),
            ("crc32c-intel", "fail"),
            ("crc32", "fail"),
            ("crc16", "fail"),
            ("crc7", "fail"),
            ("xxhash", "fail"),
            ("sha1", "fail"),
            ("sha256", "fail"),
            ("sha512", "fail"),
            ("meta", "fail"),
        ],
        example: "\"report\"",
    },
    Key {
        name: "verify_block",
        sections: TOP,
        flag: Some("verify-block"),
        short: None,
        form: "SIZE",
        default: KeyDefault::Said("gcd of the block sizes"),
        help: "Bytes each verify header and checksum cover; every block size must be a multiple of it.",
        help_from: None,
        doc: "at least 512 bytes (a sector); the default is the greatest common divisor of every block size the run uses, at least 512; a bigger block needs less memory for the run's per-block state (about 24 bytes per block of the working set)",
        fio: &["verify_interval"],
        fio_values: &[],
        example: "\"4k\"",
    },
    Key {
        name: "breakdown_top",
        sections: TOP,
        flag: Some("breakdown-top"),
        short: None,
        form: "N",
        default: KeyDefault::Int(16),
        help: "Latency, service time, size and offset of the N busiest workers and files each second (0: off).",
        help_from: None,
        doc: "per operation and second, the N workers and the N files with the most I/O get their own distributions and the others are merged into one \"(other)\" row, so the parts add up to the whole (`by=file`, `by=worker` in Analytics); file trees also keep the ops, bytes and errors of their N busiest files (a flat working set counts every file); stated in the results file (meta `breakdown`); 0 turns it off (up to 10,000)",
        fio: &[],
        fio_values: &[],
        example: "32",
    },
    Key {
        name: "repeat",
        sections: TOP,
        flag: Some("repeat"),
        short: None,
        form: "N",
        default: KeyDefault::Int(1),
        help: "Run the steps N times in one results file; the summary gives each step's mean and 95% interval (with --until-ci: at most N).",
        help_from: None,
        doc: "each repeat runs every step again, in the same results file (`step.repeat`), after the files were prepared once; caches are not dropped between repeats; from 1 to 1000; see docs/repeats.md",
        fio: &[],
        fio_values: &[],
        example: "5",
    },
    Key {
        name: "until_ci",
        sections: TOP,
        flag: Some("until-ci"),
        short: None,
        form: "CONF:PCT%",
        default: KeyDefault::None,
        help: "Repeat until each step's CONF% Student t interval of IOPS (and MB/s) is within ±PCT% of the mean, like 95:5%.",
        help_from: None,
        doc: "at least 3 repeats, at most `repeat` (default 10); the interval is over the repeats' means of the step's total IOPS, and of its MB/s when bytes move; the confidence from 50 to 99.9, the half-width above 0 and at most 100%; see docs/repeats.md",
        fio: &[],
        fio_values: &[],
        example: "\"95:5%\"",
    },
    Key {
        name: "hosts",
        sections: TOP,
        flag: Some("hosts"),
        short: None,
        form: "LIST",
        default: KeyDefault::None,
        help: "Run from these client hosts at once, comma-separated: [user@]host[:port], ssh://[user@]host[:port], agent://host:port.",
        help_from: None,
        doc: "in a file, a list of addresses like `[\"h1\", \"ssh://bench@h2:2222\"]`; replaces the file's `[[host]]` tables (see [Hosts](#hosts)); without hosts, the run is local",
        fio: &[],
        fio_values: &[],
        example: "[\"client1\", \"bench@client2:2222\"]",
    },
    Key {
        name: "token_file",
        sections: TOP,
        flag: Some("token-file"),
        short: None,
        form: "FILE",
        default: KeyDefault::None,
        help: "The bearer token of the agent:// hosts that name none of their own (a file).",
        help_from: None,
        doc: "only with agent:// hosts",
        fio: &[],
        fio_values: &[],
        example: "\"/etc/ioscope/token\"",
    },
    Key {
        name: "tls_ca",
        sections: TOP,
        flag: Some("tls-ca"),
        short: None,
        form: "FILE",
        default: KeyDefault::None,
        help: "PEM certificate(s) to trust for the TLS of the agent:// hosts that name none of their own.",
        help_from: None,
        doc: "only with agent:// hosts",
        fio: &[],
        fio_values: &[],
        example: "\"/etc/ioscope/ca.pem\"",
    },
    Key {
        name: "on_host_loss",
        sections: TOP,
        flag: Some("on-host-loss"),
        short: None,
        form: "stop|continue",
        default: KeyDefault::Word("stop"),
        help: "When a host is lost: stop the run (failed, every second received kept), or continue with the others.",
        help_from: None,
        doc: "only with hosts; with `continue` the lost host's gap is marked in the results",
        fio: &[],
        fio_values: &[],
        example: "\"continue\"",
    },
    Key {
        name: "host_timeout",
        sections: TOP,
        flag: Some("host-timeout"),
        short: None,
        form: "DUR",
        default: KeyDefault::Secs(10),
        help: "A host that delivers no finished second for this long is lost; an agent that hears nothing from the coordinator for this long ends its load.",
        help_from: None,
        doc: "only with hosts; from `1s` to `1h`",
        fio: &[],
        fio_values: &[],
        example: "\"30s\"",
    },
    // [dataset]
    plain("dir", DATASET, "The dataset's anchor directory (default: the top-level dir).", "\"/mnt/test/tree\""),
    Key {
        doc: "optional on the dataset, required on each `[[fileset]]` (a fileset is a tree of its own in the directory of that name in the dataset's anchor, with the tree keys `depth`, `width`, `files`, `sizes` and `prealloc`, made, reused or remade as the dataset is); names differ; 1 to 32 letters, digits, `_` or `-`, and not `dNN` (a name of the tree's own directories)",
        ..plain("name", TREE, "The set's name, for flow steps that name it (`in NAME`).", "\"logfiles\"")
    },
    Key { default: KeyDefault::Int(1), ..plain("depth", TREE, "Directory levels below the anchor (0 to 8).", "2") },
    Key { default: KeyDefault::Int(1), ..plain("width", TREE, "Directories per level.", "8") },
    Key { default: KeyDefault::Int(1), ..plain("files", TREE, "Files per leaf directory.", "10") },
    Key {
        default: KeyDefault::Size(64 << 10),
        ..plain("sizes", TREE, "File size distribution, a size or a weighted list like bs.", "\"8k:60,32k:40\"")
    },
    Key {
        default: KeyDefault::Said("100 (all)"),
        form: "PCT",
        doc: "the others are missing at the start, for a flow's `create` (Filebench's `prealloc`); which ones is a hash of the file's number",
        ..plain("prealloc", TREE, "Share of the files preparation creates, in percent.", "80")
    },
    plain("total_size", DATASET, "Stop creating files at this total (vdbench totalsize).", "\"100m\""),
    plain("working_set", DATASET, "Workloads use only the first files up to this size.", "\"10m\""),
    Key {
        default: KeyDefault::Word("reuse"),
        doc: "`reuse`: use a matching tree, else create it; `always`: recreate; `never`: the tree must exist",
        ..plain("format", DATASET, "reuse, always or never.", "\"reuse\"")
    },
    // [[workload]]
    Key { default: KeyDefault::Said("workloadN"), ..plain("name", WORKLOAD, "The workload's name.", "\"seqread\"") },
    Key {
        default: KeyDefault::Word("read"),
        doc: "without a dataset only `read` and `write` apply",
        ..plain(
            "operation",
            WORKLOAD,
            "read, write, create, delete, mkdir, rmdir, open, close, getattr, setattr, copy, move or list (a leaf directory listed).",
            "\"read\"",
        )
    },
    Key {
        default: KeyDefault::Word("random"),
        doc: "with a dataset: `sequential` by default",
        ..plain("fileio", WORKLOAD, "sequential (each file from start to end) or random.", "\"sequential\"")
    },
    Key {
        default: KeyDefault::Word("random"),
        ..plain("fileselect", WORKLOAD, "random, sequential, or \"zipf:1.2\" (skewed, parameter > 0).", "\"zipf:1.2\"")
    },
    plain("skew", WORKLOAD, "Share of the rate in percent (the rest is split evenly).", "50"),
    Key {
        default: KeyDefault::Said("every phase"),
        form: "N",
        doc: "a run's phases run one after another, each with the workloads that name it (and those that name none), as fio's stonewall groups do: a write phase, then a read phase; 1 to 64, with no phase left without a workload; each phase makes the steps of the run's loops, labelled `phase=N`; not with `rate_iops` or `curve` (a rate is shared over all the workloads)",
        ..plain("phase", WORKLOAD, "The phase this workload runs in (1, 2...); phases run one after another.", "2")
    },
    Key {
        default: KeyDefault::Said("none (one operation)"),
        form: "STEPS",
        doc: "each thread runs the steps in order, over and over, on the dataset's files (Filebench's flowops); a step is `OP [SIZE] [random]`: `create`, `open`, `close`, `read SIZE [random]`, `write SIZE [random]`, `read_whole SIZE`, `write_whole SIZE`, `append SIZE [random]`, `fsync`, `delete`, `stat`, `delay DURATION`, `wait NAME COUNT [ahead N]`, `post NAME [blocking]`, each ending `in NAME` to work in a named set; not with `operation`, `rw`, `bs`, `fileio`, `rwmix_read`, `pattern`, `iodepth`, `sync` or `rate_iops` (`flow_rate` paces a flow)",
        ..plain(
            "flow",
            WORKLOAD,
            "Steps each thread runs in order, over and over, like [\"open\", \"read_whole 1m\", \"close\"].",
            "[\"open\", \"read_whole 1m\", \"close\"]",
        )
    },
    Key {
        default: KeyDefault::Said("none (each round when the last ended)"),
        form: "ROUNDS",
        doc: "a flow's rounds per second, its threads together (Filebench's eventgen rate under an eventlimit, or under a bwlimit in MiB/s over the bytes of a round): each thread starts a round every threads/ROUNDS seconds and its first step is timed from then, so a round that starts late shows in the latency; 1 to 10,000,000; only with a `flow`",
        ..plain("flow_rate", WORKLOAD, "A flow's rounds per second, all its threads together.", "384")
    },
    plain(
        "pattern",
        WORKLOAD,
        "Latency art: { text = \"HELLO\", map = \"offset\" or \"size\", column = \"1s\" }.",
        "{ text = \"HI\", map = \"offset\" }",
    ),
    // [[probe]]
    Key {
        default: KeyDefault::Said("its first word"),
        ..plain("name", PROBE, "The probe's name (default: the command's first word).", "\"rsync\"")
    },
    plain("command", PROBE, "The command, run with sh -c.", "\"true\""),
    plain("at", PROBE, "When to start it, from the start of the run, before its end.", "[\"1s\"]"),
    plain("timeout", PROBE, "Kill it after this long.", "\"20m\""),
    // [[check]]
    Key {
        doc: "`SCOPE.FIGURE OPERATOR VALUE`, evaluated from the run's summary after it; a failed check makes the exit code 3 (see [checks.md](checks.md)); `--check EXPR` on the command line adds one",
        ..plain(
            "expr",
            CHECK,
            "Required: a condition on the run's figures, as in \"read.latency.p99 < 2ms\".",
            "\"total.errors == 0\"",
        )
    },
    // [[host]]
    plain(
        "address",
        HOST,
        "Required: [user@]host[:port] or ssh://[user@]host[:port] (ssh), or agent://host:port (an agent started with --listen).",
        "\"ssh://bench@client1:22\"",
    ),
    Key {
        default: KeyDefault::Said("the address's host (:PORT added when two share it)"),
        ..plain("name", HOST, "How the host is shown, and its own directory under a shared dir (unique; no `/`).", "\"client1\"")
    },
    plain("user", HOST, "ssh: the login name (or user@ in the address).", "\"bench\""),
    plain("port", HOST, "The ssh port, or the agent's port (or :PORT in the address).", "2222"),
    plain("identity", HOST, "ssh: the private key file (ssh -i).", "\"~/.ssh/id_ed25519\""),
    Key {
        default: KeyDefault::Said("the top-level dir"),
        ..plain("dir", HOST, "This host's own working directory, in place of the top-level dir.", "\"/mnt/test\"")
    },
    Key {
        default: KeyDefault::Said("the top-level target"),
        ..plain(
            "target",
            HOST,
            "This host's own target, in place of the top-level target (engine nfs).",
            "\"nfs://server/export/client1\"",
        )
    },
    Key {
        default: KeyDefault::Said("a copy of this ioscope"),
        ..plain("bin", HOST, "ssh: the path of ioscope on the host.", "\"/usr/local/bin/ioscope\"")
    },
    Key {
        default: KeyDefault::Said("the top-level token_file"),
        ..plain("token_file", HOST, "agent://: the file holding the agent's bearer token.", "\"/etc/ioscope/token\"")
    },
    Key {
        default: KeyDefault::Said("the top-level tls_ca"),
        ..plain("ca", HOST, "agent://: PEM certificate(s) to trust for the agent's TLS.", "\"/etc/ioscope/ca.pem\"")
    },
];

/// The keys of a workload's `pattern` table.
pub const PATTERN_KEYS: [&str; 3] = ["text", "map", "column"];

/// The key `name` in `section`.
pub fn find(section: Section, name: &str) -> Option<&'static Key> {
    KEYS.iter().find(|k| k.name == name && k.is_in(section))
}

/// The keys of `section`, in canonical order.
pub fn in_section(section: Section) -> impl Iterator<Item = &'static Key> {
    KEYS.iter().filter(move |k| k.is_in(section))
}

/// A key as `--set` names it: `threads`, `dataset.files`.
pub fn set_name(section: Section, key: &Key) -> String {
    match section {
        Section::Top => key.name.to_string(),
        s => format!("{}.{}", s.name(), key.name),
    }
}

/// Every key `--set` accepts, in canonical order.
pub fn settable() -> Vec<String> {
    Section::ALL.iter().flat_map(|s| in_section(*s).map(move |k| set_name(*s, k))).collect()
}

/// The top-level key a flag sets (`numjobs` → threads); `flag` is without the dashes.
pub fn by_flag(flag: &str) -> Option<&'static Key> {
    in_section(Section::Top).find(|k| k.spellings().iter().any(|s| s == flag))
}

/// What a fio option that is not a key of the same meaning does here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FioMeaning {
    /// `NAME=1` sets `key` to `on`, `NAME=0` to `off`; another value has no equivalent.
    Switch { key: &'static str, on: &'static str, off: &'static str, other: &'static str },
    /// Accepted and ignored, for this reason.
    NoOp(&'static str),
    /// Accepted with this value only (what ioscope does anyway); any other value is refused
    /// for this reason.
    Only { value: &'static str, why: &'static str },
    /// No equivalent, for this reason (and what to do instead).
    Refused(&'static str),
    /// Its value is converted to `key`'s as the fio importer converts it (`bssplit=4k/60:64k/40`
    /// is `bs = "4k:60,64k:40"`); a value that does not convert is refused, expecting `expected`.
    Converted { key: &'static str, conversion: Conversion, expected: &'static str },
}

/// How a [`FioMeaning::Converted`] option's value becomes its key's (done by the fio importer's
/// own code, [`crate::fio::convert_option`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Conversion {
    /// fio's `bssplit` (size/percent pairs) to a weighted `bs` list.
    BlockSizeSplit,
    /// fio's `rwmixwrite` (the share of writes) to `rwmix_read`, 100 minus it.
    WriteShare,
    /// fio's `filename` (a file or a device) to the directory of the working set, or the device.
    FileName,
}

/// A fio option handled by [`FIO_OPTIONS`].
#[derive(Debug)]
pub struct FioOption {
    pub name: &'static str,
    pub meaning: FioMeaning,
}

const fn refused(name: &'static str, why: &'static str) -> FioOption {
    FioOption { name, meaning: FioMeaning::Refused(why) }
}

const fn off_only(name: &'static str, why: &'static str) -> FioOption {
    FioOption { name, meaning: FioMeaning::Only { value: "0", why } }
}

const PHASES: &str = "flags make one run of workloads together; jobs one after another are phases of a workload file (`phase = N` in each [[workload]]), which `ioscope import fio` writes for a job file's stonewall groups";
const ONE_JOB: &str = "ioscope runs its workloads together; steps (for_threads, for_bs, staircase) or separate runs take the place of jobs one after another";
const RESULTS: &str =
    "ioscope records every I/O into per-second histograms in its results file (--out FILE); --json prints the summary as JSON";

/// fio options that are not a key of the same meaning: switches that map to a key's value,
/// options accepted as no-ops, and options refused with the reason. fio's options that are
/// keys (`numjobs`, `bs`...) are in [`KEYS`].
pub const FIO_OPTIONS: &[FioOption] = &[
    FioOption {
        name: "time_based",
        meaning: FioMeaning::NoOp("ioscope is always time based: it runs for --duration (fio's --runtime)"),
    },
    FioOption {
        name: "group_reporting",
        meaning: FioMeaning::NoOp("ioscope always reports per workload and in all, with every thread merged"),
    },
    FioOption { name: "thread", meaning: FioMeaning::NoOp("ioscope's workers are always threads") },
    FioOption {
        name: "norandommap",
        meaning: FioMeaning::NoOp("ioscope draws every random offset independently, as fio does with norandommap"),
    },
    FioOption {
        name: "fixedbufs",
        meaning: FioMeaning::NoOp("ioscope's uring engine registers its buffers with the ring when the kernel allows it"),
    },
    FioOption {
        name: "registerfiles",
        meaning: FioMeaning::NoOp("ioscope's uring engine registers its files with the ring when the kernel allows it"),
    },
    FioOption {
        name: "randrepeat",
        meaning: FioMeaning::Only {
            value: "1",
            why: "ioscope's random offsets repeat from run to run (each thread has a fixed seed)",
        },
    },
    FioOption {
        name: "fsync",
        meaning: FioMeaning::Switch {
            key: "sync",
            on: "fsync",
            off: "none",
            other: "ioscope syncs after every write (--sync fsync, fio's --fsync=1) or not at all",
        },
    },
    FioOption {
        name: "fdatasync",
        meaning: FioMeaning::Switch {
            key: "sync",
            on: "fdatasync",
            off: "none",
            other: "ioscope syncs after every write (--sync fdatasync, fio's --fdatasync=1) or not at all",
        },
    },
    FioOption {
        name: "buffered",
        meaning: FioMeaning::Switch { key: "direct", on: "false", off: "true", other: "1 or 0" },
    },
    FioOption { name: "unlink", meaning: FioMeaning::Switch { key: "cleanup", on: "true", off: "false", other: "1 or 0" } },
    FioOption {
        name: "filename",
        meaning: FioMeaning::Converted {
            key: "dir",
            conversion: Conversion::FileName,
            expected: "a file or a device, e.g. /data/f1 or /dev/sdb (names joined by `:` in one directory)",
        },
    },
    FioOption {
        name: "bssplit",
        meaning: FioMeaning::Converted {
            key: "bs",
            conversion: Conversion::BlockSizeSplit,
            expected: "size/percent pairs joined by colons, e.g. 4k/60:64k/40 (--bs 4k:60,64k:40)",
        },
    },
    FioOption {
        name: "rwmixwrite",
        meaning: FioMeaning::Converted {
            key: "rwmix_read",
            conversion: Conversion::WriteShare,
            expected: "a percentage from 0 to 100 (the share of writes; --rwmix-read is 100 minus it)",
        },
    },
    refused("rate", "ioscope's rate is in I/Os per second: --rate-iops N"),
    refused("thinktime", "ioscope has no think time between I/Os: --rate-iops N sets a fixed rate"),
    refused("startdelay", "ioscope starts every workload at once: --warmup runs unmeasured before each step"),
    refused("offset", "ioscope uses each working-set file from its start to its end"),
    refused("stonewall", PHASES),
    refused("wait_for_previous", PHASES),
    refused("new_group", ONE_JOB),
    refused("readonly", "ioscope has no read-only guard (it writes its working set when it prepares it)"),
    FioOption {
        name: "do_verify",
        meaning: FioMeaning::NoOp("with --verify, ioscope checks every block it reads while the workload runs (no separate verify pass)"),
    },
    off_only("buffer_compress_percentage", "ioscope takes the ratio: --compress-ratio R, where fio's P% is 100/(100-P) (50% is 2)"),
    off_only("dedupe_percentage", "ioscope takes the ratio: --dedup-ratio R, where fio's P% is 100/(100-P) (50% is 2)"),
    FioOption {
        name: "invalidate",
        meaning: FioMeaning::Switch {
            key: "cache",
            on: "cold",
            off: "as-is",
            other: "fio's invalidate=1 drops each file's pages before the job (ioscope's --cache cold), invalidate=0 leaves them (--cache as-is)",
        },
    },
    refused("cpus_allowed", "ioscope does not pin its threads to CPUs"),
    refused("numa_cpu_nodes", "ioscope does not pin its threads to CPUs"),
    off_only("end_fsync", "ioscope syncs after each write (--sync fsync) or not at all"),
    off_only("fsync_on_close", "ioscope syncs after each write (--sync fsync) or not at all"),
    refused(
        "output",
        "fio's --output writes its text report to a file; ioscope prints its report on stdout (redirect it: > FILE) and writes the results file with every measurement to --out FILE (ioscope show FILE prints the report again)",
    ),
    refused("output_format", RESULTS),
    refused("write_lat_log", RESULTS),
    refused("write_bw_log", RESULTS),
    refused("write_iops_log", RESULTS),
];

/// What a fio option is here.
#[derive(Clone, Copy, Debug)]
pub enum FioMatch {
    /// A key of the same meaning (fio's values are read with [`Key::native_value`]).
    Key(&'static Key),
    /// A switch, a no-op or a refusal.
    Option(&'static FioOption),
}

/// The key or handling of a fio option (`numjobs`, `ramp_time`, `time-based`): fio's
/// spellings with `-` or `_` both resolve. None: fio has no such option that ioscope knows.
pub fn by_fio_name(name: &str) -> Option<FioMatch> {
    let name = name.trim().to_ascii_lowercase().replace('-', "_");
    let key = in_section(Section::Top).find(|k| k.fio.contains(&name.as_str()));
    if let Some(k) = key {
        return Some(FioMatch::Key(k));
    }
    FIO_OPTIONS.iter().find(|o| o.name == name).map(FioMatch::Option)
}

/// The command-line spellings of a fio option: its name, and with `-` for `_`.
pub fn fio_spellings(option: &FioOption) -> Vec<String> {
    let mut out = vec![option.name.to_string()];
    let dashed = option.name.replace('_', "-");
    if dashed != option.name {
        out.push(dashed);
    }
    out
}

/// The engine key's help: every engine of the engine table, with its description.
fn engine_help() -> String {
    ioscope_engine_table::engine_help() + "."
}
