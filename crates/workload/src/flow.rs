//! Flows: a workload whose threads each run a sequence of file operations in order, over
//! and over, on the files of the run's `[dataset]` (Filebench's flowops: createfile,
//! writewholefile, appendfilerand, openfile, readwholefile, closefile, deletefile,
//! statfile, fsync...). A step is written `OP [SIZE] [random]`, like `"read_whole 1m"` or
//! `"append 16k random"`; the sequence is checked here (a step on an open file needs one
//! open before it, an open needs none), and run by the executor (crates/exec/src/flow.rs).
//!
//! A step may name a file set, `in NAME` (the [dataset]'s `name`, or a [[fileset]]'s):
//! an open, create, delete or stat then picks its file there, and a read, write, append
//! or fsync works on a file of that set the thread holds open for the whole run (opened
//! when the thread starts), as Filebench's flowops that name a fileset with no openfile
//! before them (webserver's log append).

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// At most this many steps in one flow.
pub const MAX_FLOW_STEPS: usize = 256;

/// One kind of flow step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlowOp {
    /// A missing file of the dataset created (exclusively) and opened for writing.
    Create,
    /// An existing file opened.
    Open,
    /// The open file closed.
    Close,
    /// SIZE read from the open file: sequentially from where the last read ended
    /// (from the start again at its end), or at a random offset.
    Read,
    /// SIZE written into the open file, sequentially or at a random offset within it.
    Write,
    /// The whole open file read from its start, SIZE at a time.
    ReadWhole,
    /// The open file written from its start to its dataset size, SIZE at a time.
    WriteWhole,
    /// SIZE appended to the open file (random: 1 byte to SIZE, uniformly).
    Append,
    /// The open file's data made durable (fsync).
    Fsync,
    /// An existing file removed.
    Delete,
    /// An existing file's attributes read (stat).
    Stat,
    /// A pause of DURATION before the next step, no I/O (Filebench's delay).
    Delay,
    /// `wait NAME COUNT [ahead N]`: waits until COUNT posts to NAME have come for this
    /// thread since it last took them, and takes them (Filebench's semblock); `ahead`: a
    /// blocking post may run at most N posts ahead of this thread's waits (its highwater).
    Wait,
    /// `post NAME [blocking]`: one post to NAME for each thread that waits on it
    /// (Filebench's sempost); `blocking`: held while a waiter has no room (see Wait).
    Post,
}

impl FlowOp {
    pub const ALL: [FlowOp; 14] = [
        FlowOp::Create,
        FlowOp::Open,
        FlowOp::Close,
        FlowOp::Read,
        FlowOp::Write,
        FlowOp::ReadWhole,
        FlowOp::WriteWhole,
        FlowOp::Append,
        FlowOp::Fsync,
        FlowOp::Delete,
        FlowOp::Stat,
        FlowOp::Delay,
        FlowOp::Wait,
        FlowOp::Post,
    ];

    pub fn name(self) -> &'static str {
        match self {
            FlowOp::Create => "create",
            FlowOp::Open => "open",
            FlowOp::Close => "close",
            FlowOp::Read => "read",
            FlowOp::Write => "write",
            FlowOp::ReadWhole => "read_whole",
            FlowOp::WriteWhole => "write_whole",
            FlowOp::Append => "append",
            FlowOp::Fsync => "fsync",
            FlowOp::Delete => "delete",
            FlowOp::Stat => "stat",
            FlowOp::Delay => "delay",
            FlowOp::Wait => "wait",
            FlowOp::Post => "post",
        }
    }

    /// Moves data, SIZE at a time (the step names its SIZE).
    pub fn transfers(self) -> bool {
        matches!(self, FlowOp::Read | FlowOp::Write | FlowOp::ReadWhole | FlowOp::WriteWhole | FlowOp::Append)
    }

    /// Works on the thread's open file.
    pub fn needs_open(self) -> bool {
        self.transfers() || matches!(self, FlowOp::Close | FlowOp::Fsync)
    }

    /// Writes into the dataset (creates, changes or removes a file).
    pub fn writes(self) -> bool {
        matches!(self, FlowOp::Create | FlowOp::Write | FlowOp::WriteWhole | FlowOp::Append | FlowOp::Delete)
    }

    /// `random` means something for it (a random offset, or a random append size).
    fn takes_random(self) -> bool {
        matches!(self, FlowOp::Read | FlowOp::Write | FlowOp::Append)
    }
}

/// The most bytes in a file set's name.
pub const MAX_SET_NAME: usize = 32;

/// A file set's name as a step names it (`in logfiles`): 1 to 32 of A-Z a-z 0-9 _ -.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct SetName {
    len: u8,
    bytes: [u8; MAX_SET_NAME],
}

/// The expected form of a file set's name, for messages.
pub const SET_NAME_FORM: &str = "a name of 1 to 32 letters, digits, _ or -, like \"logfiles\"";

impl SetName {
    /// Err says what is wrong with `text` as a name.
    pub fn new(text: &str) -> Result<SetName, String> {
        let ok = (1..=MAX_SET_NAME).contains(&text.len())
            && text.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        if !ok {
            return Err(format!("`{text}` is not {SET_NAME_FORM}"));
        }
        let mut bytes = [0; MAX_SET_NAME];
        bytes[..text.len()].copy_from_slice(text.as_bytes());
        Ok(SetName { len: text.len() as u8, bytes })
    }

    pub fn as_str(&self) -> &str {
        std::str::from_utf8(&self.bytes[..usize::from(self.len).min(MAX_SET_NAME)]).unwrap_or("")
    }
}

impl std::fmt::Debug for SetName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.as_str())
    }
}

/// One step of a flow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlowStep {
    pub op: FlowOp,
    /// Bytes per transfer (0 for a step that moves no data).
    pub bytes: u64,
    /// Read and write: at random offsets; append: a random size from 1 byte to `bytes`.
    pub random: bool,
    /// `in NAME`: the file set the step works in (None: the [dataset], or the open file).
    pub set: Option<SetName>,
    /// Delay: how long, in nanoseconds (1 µs to 1 h).
    pub wait_ns: u64,
    /// Wait and post: the name waited on and posted to.
    pub sem: Option<SetName>,
    /// Wait: the posts it takes, and how far posts may run ahead (0: no bound); post: 1 if
    /// blocking.
    pub count: u32,
    pub ahead: u32,
}

/// The most posts a wait takes, or may be ahead.
pub const MAX_SEM_COUNT: u32 = 1_000_000;

/// The longest `delay`.
pub const MAX_DELAY_NS: u64 = 3_600_000_000_000;

/// The expected form of a step, for messages.
pub const STEP_FORM: &str =
    "a step like \"open\", \"read_whole 1m\", \"read 8k random\", \"append 16k random in logfiles\", \"delay 10s\" \
     or \"wait NAME 100\" (create, open, close, read, write, read_whole, write_whole, append, fsync, delete, stat, delay, \
     wait, post; `in NAME` a file set)";

impl FlowStep {
    /// Reads `OP [SIZE] [random]`; Err says what is wrong.
    pub fn parse(text: &str) -> Result<FlowStep, String> {
        let mut words: Vec<&str> = text.split_whitespace().collect();
        let set = match words.len() {
            n if n >= 2 && words[n - 2] == "in" => {
                let set = SetName::new(words[n - 1])?;
                words.truncate(n - 2);
                Some(set)
            }
            _ => None,
        };
        let mut words = words.into_iter();
        let name = words.next().ok_or("the step is empty")?;
        let op = FlowOp::ALL.into_iter().find(|o| o.name() == name).ok_or_else(|| format!("no step `{name}`"))?;
        if op == FlowOp::Close && set.is_some() {
            return Err("close takes no set: it closes the file the flow opened".into());
        }
        let mut step = FlowStep { op, bytes: 0, random: false, set, wait_ns: 0, sem: None, count: 0, ahead: 0 };
        if matches!(op, FlowOp::Wait | FlowOp::Post) {
            let rest: Vec<&str> = words.collect();
            let form = "\"wait NAME COUNT [ahead N]\" or \"post NAME [blocking]\", in no set";
            let count = |w: &str| w.parse::<u32>().ok().filter(|n| (1..=MAX_SEM_COUNT).contains(n));
            let (sem, count, ahead) = match (op, rest.as_slice()) {
                (_, _) if set.is_some() => return Err(form.into()),
                (FlowOp::Wait, [name, n]) => (name, count(n), Some(0)),
                (FlowOp::Wait, [name, n, "ahead", a]) => (name, count(n), count(a)),
                (FlowOp::Post, [name]) => (name, Some(0), Some(0)),
                (FlowOp::Post, [name, "blocking"]) => (name, Some(1), Some(0)),
                _ => return Err(format!("{form} (COUNT and N from 1 to {MAX_SEM_COUNT})")),
            };
            let (Some(count), Some(ahead)) = (count, ahead) else {
                return Err(format!("{form} (COUNT and N from 1 to {MAX_SEM_COUNT})"));
            };
            (step.sem, step.count, step.ahead) = (Some(SetName::new(sem)?), count, ahead);
            return Ok(step);
        }
        if op == FlowOp::Delay {
            let rest: Vec<&str> = words.collect();
            let d = match rest.as_slice() {
                [d] => crate::units::parse_duration(d).map_err(|e| format!("`{d}`: {e}"))?,
                _ => return Err("delay takes one duration: \"delay 10s\"".into()),
            };
            let ns = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
            if !(1_000..=MAX_DELAY_NS).contains(&ns) || set.is_some() {
                return Err("a delay from 1us to 1h, in no set: \"delay 10s\"".into());
            }
            step.wait_ns = ns;
            return Ok(step);
        }
        for w in words {
            if w == "in" {
                return Err("`in NAME` comes last, once".into());
            } else if w == "random" {
                if !op.takes_random() {
                    return Err(format!("`random` applies to read, write and append, not {name}"));
                }
                step.random = true;
            } else if step.bytes == 0 && op.transfers() {
                let b = crate::units::parse_size(w).map_err(|e| format!("`{w}`: {e}"))?;
                if !(1..=crate::plan::MAX_FLOW_IO_BYTES).contains(&b) {
                    return Err(format!("`{w}`: a size from 1 byte to 64 MiB"));
                }
                step.bytes = b;
            } else if op.transfers() {
                return Err(format!("`{w}`: one SIZE, then optionally `random`"));
            } else {
                return Err(format!("{name} takes no size (`{w}`)"));
            }
        }
        if op.transfers() && step.bytes == 0 {
            return Err(format!("{name} needs its size: \"{name} 1m\""));
        }
        Ok(step)
    }

    /// Its text, as [`FlowStep::parse`] reads it.
    pub fn text(&self) -> String {
        let mut s = self.op.name().to_string();
        if self.op == FlowOp::Delay {
            s.push(' ');
            s.push_str(&crate::units::duration_literal(std::time::Duration::from_nanos(self.wait_ns)));
        }
        if let Some(sem) = &self.sem {
            s.push(' ');
            s.push_str(sem.as_str());
            match self.op {
                FlowOp::Wait if self.ahead > 0 => s.push_str(&format!(" {} ahead {}", self.count, self.ahead)),
                FlowOp::Wait => s.push_str(&format!(" {}", self.count)),
                _ if self.count > 0 => s.push_str(" blocking"),
                _ => {}
            }
        }
        if self.bytes > 0 {
            s.push(' ');
            s.push_str(&crate::units::size_literal(self.bytes));
        }
        if self.random {
            s.push_str(" random");
        }
        if let Some(set) = &self.set {
            s.push_str(" in ");
            s.push_str(set.as_str());
        }
        s
    }

    /// Works on a file of its set the thread holds open for the run (a transfer or fsync
    /// that names a set), not on the file the flow opened.
    pub fn holds(&self) -> bool {
        self.set.is_some() && self.op.needs_open()
    }
}

impl Serialize for FlowStep {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text())
    }
}

impl<'de> Deserialize<'de> for FlowStep {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<FlowStep, D::Error> {
        let text = String::deserialize(d)?;
        FlowStep::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// Checks the order of a flow's steps, which repeat: a step on the open file needs one
/// opened (or created) before it, and an open or a create needs none open (the last step
/// may leave a file open for the next round's steps, as a reader that opens once does).
/// Err: (the step's index, what is wrong).
pub fn check_order(steps: &[FlowStep]) -> Result<(), (usize, String)> {
    // Two rounds: the second starts as the first ended.
    let mut open = false;
    for round in 0..2 {
        for (i, s) in steps.iter().enumerate() {
            match s.op {
                FlowOp::Create | FlowOp::Open if open => {
                    let why = if round == 0 {
                        format!("{} while a file is open: close it first", s.op.name())
                    } else {
                        format!(
                            "{} while the file the flow's last steps left open is open: end the flow with close",
                            s.op.name()
                        )
                    };
                    return Err((i, why));
                }
                FlowOp::Create | FlowOp::Open => open = true,
                FlowOp::Close if !open => return Err((i, "close with no file open".into())),
                FlowOp::Close => open = false,
                _ if s.holds() => {}
                op if op.needs_open() && !open => {
                    return Err((i, format!("{} needs an open file: put open or create before it", op.name())))
                }
                _ => {}
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flow(steps: &[&str]) -> Vec<FlowStep> {
        steps.iter().map(|s| FlowStep::parse(s).unwrap()).collect()
    }

    #[test]
    fn a_step_reads_back_from_its_text() {
        for text in [
            "create",
            "read_whole 1m",
            "append 16k random",
            "read 8k random",
            "write 4k",
            "stat",
            "fsync",
            "open in logs",
            "delay 10s",
            "delay 250ms",
            "wait lg-block 3200 ahead 1000",
            "wait w 10",
            "post lg-block blocking",
            "post w",
        ] {
            assert_eq!(FlowStep::parse(text).unwrap().text(), text);
        }
        let s = FlowStep::parse("append 16k random").unwrap();
        assert_eq!(
            s,
            FlowStep {
                op: FlowOp::Append,
                bytes: 16384,
                random: true,
                set: None,
                wait_ns: 0,
                sem: None,
                count: 0,
                ahead: 0
            }
        );
        let s = FlowStep::parse("append 16k random in log-files_2").unwrap();
        assert_eq!((s.set.unwrap().as_str(), s.holds()), ("log-files_2", true));
    }

    #[test]
    fn a_step_says_what_is_wrong_with_it() {
        let err = |t: &str| FlowStep::parse(t).unwrap_err();
        assert_eq!(err("readwhole 1m"), "no step `readwhole`");
        assert_eq!(err("read"), "read needs its size: \"read 1m\"");
        assert_eq!(err("close 4k"), "close takes no size (`4k`)");
        assert_eq!(err("read_whole 1m random"), "`random` applies to read, write and append, not read_whole");
        assert!(err("read 1g").contains("64 MiB"), "{}", err("read 1g"));
        assert_eq!(err(""), "the step is empty");
        assert!(err("read 8k in a/b").contains("not a name of 1 to 32"), "{}", err("read 8k in a/b"));
        assert_eq!(err("close in logs"), "close takes no set: it closes the file the flow opened");
        assert_eq!(err("read in logs 8k"), "`in NAME` comes last, once");
    }

    #[test]
    fn the_order_of_steps_is_checked_over_two_rounds() {
        // Filebench's fileserver: fine.
        let fileserver = flow(&[
            "create",
            "write_whole 1m",
            "close",
            "open",
            "append 16k random",
            "close",
            "open",
            "read_whole 1m",
            "close",
            "delete",
            "stat",
        ]);
        assert_eq!(check_order(&fileserver), Ok(()));
        // A reader that opens once and keeps reading is not: the second round opens again.
        let err = check_order(&flow(&["open", "read 8k"])).unwrap_err();
        assert_eq!(err.0, 0);
        assert!(err.1.contains("end the flow with close"), "{}", err.1);
        assert_eq!(check_order(&flow(&["read_whole 1m"])).unwrap_err().0, 0);
        assert_eq!(check_order(&flow(&["open", "close", "close"])).unwrap_err(), (2, "close with no file open".into()));
        // Webserver: a log append on a held file of its own set, with no file open.
        assert_eq!(check_order(&flow(&["open", "read_whole 1m", "close", "append 16k random in logs"])), Ok(()));
        assert_eq!(check_order(&flow(&["append 1m in big"])), Ok(()));
    }
}
