//! The typed readers of the raw layer: each reads one key (flag over file) into a typed value
//! and its location, reporting a malformed value where it is written.

use super::*;

impl<'a> Ctx<'a> {
    /// A whole number in `min..=max`.
    pub(super) fn int(&mut self, key: &str, min: u64, max: u64) -> Got<u64> {
        let Some((raw, loc)) = self.raw(key) else {
            return Got::Absent;
        };
        let parsed: Result<i128, ValueError> = match raw {
            Raw::Flag(text) => text.trim().parse::<i128>().map_err(|_| ValueError::Form),
            Raw::Toml(item) => match item.as_value() {
                Some(Value::Integer(i)) => Ok(i128::from(*i.value())),
                Some(Value::String(s)) if s.value().trim().parse::<i128>().is_ok() => {
                    Err(ValueError::Hint(format!("numbers are written without quotes: {key} = {}", s.value().trim())))
                }
                _ => Err(ValueError::Form),
            },
        };
        match parsed {
            Ok(v) if v >= i128::from(min) && v <= i128::from(max) => Got::Ok(v as u64, loc),
            Ok(_) | Err(_) => {
                let note = parsed.err().map(|e| e.to_string()).unwrap_or_default();
                self.err(&loc, key, format!("a whole number from {min} to {max}"), note);
                Got::Bad
            }
        }
    }

    /// `true` or `false` in the file; a bare flag means true, and a flag's `=1`/`=0` (fio's
    /// spelling) or `=true`/`=false` says which.
    pub(super) fn boolean(&mut self, key: &str) -> Got<bool> {
        let Some((raw, loc)) = self.raw(key) else {
            return Got::Absent;
        };
        match raw {
            Raw::Flag(text) => match text.trim().to_ascii_lowercase().as_str() {
                "" | "1" | "true" => Got::Ok(true, loc),
                "0" | "false" => Got::Ok(false, loc),
                _ => {
                    self.err(&loc, key, "1 or 0 (true or false); the flag alone means 1", "");
                    Got::Bad
                }
            },
            Raw::Toml(item) => match item.as_value() {
                Some(Value::Boolean(b)) => Got::Ok(*b.value(), loc),
                v => {
                    let note = match v.and_then(Value::as_str) {
                        Some(s @ ("true" | "false")) => {
                            format!("write it without quotes: {key} = {s}")
                        }
                        _ => String::new(),
                    };
                    self.err(&loc, key, "true or false", note);
                    Got::Bad
                }
            },
        }
    }

    /// A string, as text; None (after reporting) for another TOML type, or a string with a
    /// NUL character (which no path, name or command can hold).
    pub(super) fn string(&mut self, key: &str, raw: Raw<'a>, loc: &Loc, expected: &str) -> Option<&'a str> {
        let text = match raw {
            Raw::Flag(t) => t,
            Raw::Toml(item) => match item.as_value() {
                Some(Value::String(s)) => s.value().as_str(),
                _ => {
                    self.err(loc, key, expected, "");
                    return None;
                }
            },
        };
        if text.contains('\0') {
            self.err(loc, key, expected, "it contains a NUL character (\\u0000)");
            return None;
        }
        Some(text)
    }

    /// `verify`: off, fail or report; the flag alone (`--verify`) is fail.
    pub(super) fn verify_mode(&mut self) -> Got<VerifyMode> {
        if let Some((Raw::Flag(t), loc)) = self.raw("verify") {
            if t.trim().is_empty() {
                return Got::Ok(VerifyMode::Fail, loc);
            }
        }
        self.choice("verify", VERIFY_MODES)
    }

    /// One of a fixed set of names (case-insensitive).
    pub(super) fn choice<T: Copy>(&mut self, key: &str, choices: &[(&str, T)]) -> Got<T> {
        let Some((raw, loc)) = self.raw(key) else {
            return Got::Absent;
        };
        let names: Vec<&str> = choices.iter().map(|(n, _)| *n).collect();
        let expected = format!("one of: {}", names.join(", "));
        let Some(s) = self.string(key, raw, &loc, &expected) else {
            return Got::Bad;
        };
        let t = s.trim().to_ascii_lowercase();
        // fio's values of the same meaning (`--ioengine psync`).
        let t = table_key(key).map_or(t.as_str(), |k| k.native_value(&t)).to_string();
        if let Some((_, v)) = choices.iter().find(|(n, _)| *n == t) {
            return Got::Ok(*v, loc);
        }
        let note = if key == "engine" && t == "libaio" {
            "libaio is not an ioscope engine: use uring for queued asynchronous I/O".to_string()
        } else if let Some(c) = closest(&t, &names) {
            format!("did you mean `{c}`?")
        } else {
            String::new()
        };
        self.err(&loc, key, expected, note);
        Got::Bad
    }

    /// A size in bytes: a size string or an integer byte count; above zero.
    pub(super) fn size(&mut self, key: &str) -> Got<u64> {
        let Some((raw, loc)) = self.raw(key) else {
            return Got::Absent;
        };
        let expected = "a size like 1g, 512m, 10g (or a byte count), above 0";
        let parsed = match raw {
            Raw::Flag(t) => parse_size(t).map_err(ValueError::from),
            Raw::Toml(item) => match item.as_value() {
                Some(Value::String(s)) => parse_size(s.value()).map_err(ValueError::from),
                Some(Value::Integer(i)) if *i.value() >= 0 => Ok(*i.value() as u64),
                Some(Value::Integer(_)) => Err(UnitError::NegativeSize.into()),
                _ => Err(ValueError::Form),
            },
        };
        match parsed {
            Ok(0) => {
                self.err(&loc, key, expected, "");
                Got::Bad
            }
            Ok(v) => Got::Ok(v, loc),
            Err(note) => {
                self.err(&loc, key, expected, note.to_string());
                Got::Bad
            }
        }
    }

    /// A duration: a duration string, or a number of seconds; above zero, at most 30 days.
    pub(super) fn duration(&mut self, key: &str) -> Got<Duration> {
        let Some((raw, loc)) = self.raw(key) else {
            return Got::Absent;
        };
        let expected = "a duration like 90s, 1m30s, 2h (a bare number is seconds), above 0 and at most 30d";
        match raw_duration(raw) {
            Ok(d) if !d.is_zero() && d <= MAX_DURATION => Got::Ok(d, loc),
            Ok(_) => {
                self.err(&loc, key, expected, "");
                Got::Bad
            }
            Err(note) => {
                self.err(&loc, key, expected, note.to_string());
                Got::Bad
            }
        }
    }

    /// A step's measured time or warm-up: whole seconds (results are recorded per second,
    /// so a step must fill whole seconds), at least `min_s` seconds, at most 30 days.
    pub(super) fn step_time(&mut self, key: &str, min_s: u64) -> Got<Duration> {
        let Some((raw, loc)) = self.raw(key) else {
            return Got::Absent;
        };
        let expected = if min_s == 0 {
            "0 or a whole number of seconds up to 30d, like 10s, 1m (a bare number is seconds)".to_string()
        } else {
            format!("a whole number of seconds from {min_s}s to 30d, like 90s, 1m30s, 2h (a bare number is seconds)")
        };
        let note = match raw_duration(raw) {
            Ok(d) if d.as_secs() >= min_s && d.subsec_nanos() == 0 && d <= MAX_DURATION => return Got::Ok(d, loc),
            Ok(d) if d.subsec_nanos() != 0 => {
                format!(
                    "ioscope records results once a second: {} is not a whole number of seconds",
                    duration_literal(d)
                )
            }
            Ok(d) if d > MAX_DURATION => String::new(),
            Ok(_) if min_s > 0 => format!("a run of less than {min_s}s measures nothing"),
            Ok(_) => String::new(),
            Err(note) => note.to_string(),
        };
        self.err(&loc, key, expected, note);
        Got::Bad
    }

    /// `warmup`: a step time, or `auto` (each step's seconds before it became steady).
    pub(super) fn warmup(&mut self) -> (Got<Duration>, bool) {
        let auto = match self.raw("warmup") {
            Some((Raw::Flag(t), _)) => t.trim() == "auto",
            Some((Raw::Toml(item), _)) => item.as_str() == Some("auto"),
            None => false,
        };
        if auto {
            return (Got::Absent, true);
        }
        let before = self.diags.len();
        let got = self.step_time("warmup", 0);
        if let Some(d) = self.diags.get_mut(before) {
            d.expected = format!("auto, or {}", d.expected);
        }
        (got, false)
    }

    /// `max_errors`: a count (a TOML integer or its text), a share like "1%", or "off".
    pub(super) fn max_errors(&mut self) -> Got<MaxErrors> {
        let Some((raw, loc)) = self.raw("max_errors") else {
            return Got::Absent;
        };
        let expected = "a count of failed I/Os (like 1000), a share of the I/Os (like \"1%\" or \"0.1%\"), or \"off\"";
        let parsed = match raw {
            Raw::Flag(t) => MaxErrors::parse(t).map_err(|e| ValueError::Hint(e.to_string())),
            Raw::Toml(item) => match item.as_value() {
                Some(Value::Integer(i)) => {
                    u64::try_from(*i.value()).map(MaxErrors::Count).map_err(|_| ValueError::Form)
                }
                Some(Value::String(s)) => MaxErrors::parse(s.value()).map_err(|e| ValueError::Hint(e.to_string())),
                _ => Err(ValueError::Form),
            },
        };
        match parsed {
            Ok(m) => Got::Ok(m, loc),
            Err(note) => {
                self.err(&loc, "max_errors", expected, note.to_string());
                Got::Bad
            }
        }
    }

    /// `until_ci = "95:5%"`: the confidence and the half-width of the interval.
    pub(super) fn until_ci(&mut self) -> Got<UntilCi> {
        let Some((raw, loc)) = self.raw("until_ci") else {
            return Got::Absent;
        };
        let expected = "CONFIDENCE:HALF_WIDTH%, like \"95:5%\" (a 95% interval within ±5% of the mean): \
                        the confidence from 50 to 99.9, the half-width above 0 and at most 100%";
        let Some(text) = self.string("until_ci", raw, &loc, expected) else {
            return Got::Bad;
        };
        match UntilCi::parse(text) {
            Some(u) => Got::Ok(u, loc),
            None => {
                self.err(&loc, "until_ci", expected, "");
                Got::Bad
            }
        }
    }

    /// A directory path (non-empty).
    pub(super) fn dir(&mut self, key: &str) -> Got<PathBuf> {
        let Some((raw, loc)) = self.raw(key) else {
            return Got::Absent;
        };
        match self.string(key, raw, &loc, DIR_EXPECTED) {
            // Linux's limits (PATH_MAX, NAME_MAX), checked here rather than after preparing.
            Some(s) if s.len() >= 4096 || s.split('/').any(|c| c.len() > 255) => {
                let note = format!(
                    "the path has {} bytes; a path has at most 4095 bytes and each name in it at most 255",
                    s.len()
                );
                self.err(&loc, key, DIR_EXPECTED, note);
                Got::Bad
            }
            Some(s) if !s.trim().is_empty() => Got::Ok(PathBuf::from(s), loc),
            Some(_) => {
                self.err(&loc, key, DIR_EXPECTED, "");
                Got::Bad
            }
            None => Got::Bad,
        }
    }

    /// Free text (a name, a command); not empty.
    pub(super) fn text_value(&mut self, key: &str, expected: &str) -> Got<String> {
        let Some((raw, loc)) = self.raw(key) else {
            return Got::Absent;
        };
        match self.string(key, raw, &loc, expected) {
            Some(s) if !s.trim().is_empty() => Got::Ok(s.to_string(), loc),
            Some(_) => {
                self.err(&loc, key, expected, "it is empty");
                Got::Bad
            }
            None => Got::Bad,
        }
    }

    /// The items of a list value: a TOML array (each item with its location), a flag's
    /// comma-separated text, or (when `single_ok`) a lone value.
    pub(super) fn list_items(
        &mut self,
        key: &str,
        expected: &str,
        single_ok: bool,
    ) -> Option<(Vec<(ListItem<'a>, Loc)>, Loc)> {
        let (raw, loc) = self.raw(key)?;
        let items = match raw {
            Raw::Flag(t) => t.split(',').map(|p| (ListItem::Text(p.trim()), loc.clone())).collect(),
            Raw::Toml(item) => match item.as_value() {
                Some(Value::Array(a)) => {
                    a.iter().map(|v| (ListItem::Toml(v), v.span().map_or(loc.clone(), |s| self.file_loc(s)))).collect()
                }
                Some(v) if single_ok => vec![(ListItem::Toml(v), loc.clone())],
                _ => {
                    self.err(&loc, key, expected, "");
                    return Some((Vec::new(), loc));
                }
            },
        };
        Some((items, loc))
    }

    /// A list of whole numbers in `min..=max`, like `[1, 2, 4]` (flag: "1,2,4").
    pub(super) fn int_list(&mut self, key: &str, min: u64, max: u64) -> Got<Vec<u64>> {
        let expected = format!("a list of whole numbers from {min} to {max}, like [1, 2, 4]");
        let Some((items, loc)) = self.list_items(key, &expected, false) else {
            return Got::Absent;
        };
        let mut out = Vec::new();
        for (item, iloc) in &items {
            let v = match item {
                ListItem::Text(t) => t.parse::<i64>().ok(),
                ListItem::Toml(v) => v.as_integer(),
            };
            match v.filter(|v| *v >= min as i64 && *v <= max as i64) {
                Some(v) => out.push(v as u64),
                None => self.err(iloc, key, expected.as_str(), ""),
            }
        }
        if items.is_empty() || out.len() != items.len() {
            if items.is_empty() {
                self.err(&loc, key, expected.as_str(), "the list is empty");
            }
            return Got::Bad;
        }
        Got::Ok(out, loc)
    }

    /// A list of durations, like `["30m", "60m"]`, or one duration.
    pub(super) fn duration_list(&mut self, key: &str) -> Got<Vec<Duration>> {
        let expected = "durations from the start of the run, like [\"30m\", \"60m\"]";
        let Some((items, loc)) = self.list_items(key, expected, true) else {
            return Got::Absent;
        };
        let mut out = Vec::new();
        for (item, iloc) in &items {
            let d = match item {
                ListItem::Text(t) => parse_duration(t).map_err(ValueError::from),
                ListItem::Toml(v) => duration_value(v),
            };
            match d {
                Ok(d) if d <= MAX_DURATION => out.push(d),
                Ok(_) => self.err(iloc, key, expected, "at most 30d"),
                Err(note) => self.err(iloc, key, expected, note.to_string()),
            }
        }
        if items.is_empty() {
            self.err(&loc, key, expected, "the list is empty");
            return Got::Bad;
        }
        if out.len() != items.len() {
            return Got::Bad;
        }
        Got::Ok(out, loc)
    }

    /// `curve = true` (10, 20 ... 100) or a list of percentages of the max rate.
    pub(super) fn curve(&mut self) -> Got<Vec<u8>> {
        if let Some((Raw::Toml(item), loc)) = self.raw("curve") {
            if let Some(b) = item.as_bool() {
                return Got::Ok(if b { (1..=10).map(|i| i * 10).collect() } else { Vec::new() }, loc);
            }
        }
        match self.int_list("curve", 1, 100) {
            Got::Ok(v, loc) => Got::Ok(v.into_iter().map(|p| p as u8).collect(), loc),
            Got::Absent => Got::Absent,
            Got::Bad => Got::Bad,
        }
    }

    /// `staircase = "1-8/5s"` or `"2-16+2/10s"` (threads), or `"hosts:1-4/60s"` (hosts).
    pub(super) fn staircase(&mut self) -> Got<Staircase> {
        let Some((raw, loc)) = self.raw("staircase") else {
            return Got::Absent;
        };
        let expected = "START-MAX/EVERY or START-MAX+ADD/EVERY, like \"1-8/5s\" (1 to 8 threads, one more every 5 s), \
                        or hosts:START-MAX[+ADD]/EVERY, like \"hosts:1-4/60s\" (one more host every 60 s)";
        let Some(text) = self.string("staircase", raw, &loc, expected) else {
            return Got::Bad;
        };
        let t = text.trim();
        let (of, t, most) = match t.split_once(':') {
            Some((unit, rest)) if unit.trim().eq_ignore_ascii_case("hosts") => {
                (StaircaseOf::Hosts, rest, MAX_HOSTS as u32)
            }
            Some((unit, rest)) if unit.trim().eq_ignore_ascii_case("threads") => (StaircaseOf::Threads, rest, 4096),
            _ => (StaircaseOf::Threads, t, 4096),
        };
        let parsed =
            (|| {
                let (range, every) = t.split_once('/')?;
                let (range, add) = match range.split_once('+') {
                    Some((r, a)) => (r, a.trim().parse::<u32>().ok()?),
                    None => (range, 1),
                };
                let (start, max) = range.split_once('-')?;
                let (start, max) = (start.trim().parse::<u32>().ok()?, max.trim().parse::<u32>().ok()?);
                let every = parse_duration(every).ok()?;
                // Each step fills whole seconds: results are recorded once a second.
                let every_ok = every.as_secs() >= 1 && every.subsec_nanos() == 0 && every <= MAX_DURATION;
                (start >= 1 && max >= start && max <= most && (1..=most).contains(&add) && every_ok)
                    .then_some(Staircase { start, add, max, every, of })
            })();
        match parsed {
            Some(s) => Got::Ok(s, loc),
            None => {
                let what = if of == StaircaseOf::Hosts { "hosts" } else { "threads" };
                let note = format!(
                    "{what} from 1 to {most}, START at most MAX, ADD from 1 to {most}; \
                     EVERY a whole number of seconds from 1s to 30d"
                );
                self.err(&loc, "staircase", expected, note);
                Got::Bad
            }
        }
    }

    /// `fileselect`: random, sequential, or "zipf:THETA".
    pub(super) fn fileselect(&mut self, key: &str) -> Got<FileSelect> {
        let Some((raw, loc)) = self.raw(key) else {
            return Got::Absent;
        };
        let expected = "random, sequential, or zipf:THETA (THETA above 0, like zipf:1.2)";
        let Some(text) = self.string(key, raw, &loc, expected) else {
            return Got::Bad;
        };
        let t = text.trim().to_ascii_lowercase();
        let parsed = match t.as_str() {
            "random" => Some(FileSelect::Random),
            "sequential" | "seq" => Some(FileSelect::Sequential),
            "zipf" => Some(FileSelect::Zipf(1.0)),
            z => z
                .strip_prefix("zipf:")
                .and_then(|x| x.trim().parse::<f64>().ok())
                .filter(|x| x.is_finite() && *x > 0.0 && *x <= 10.0)
                .map(FileSelect::Zipf),
        };
        match parsed {
            Some(f) => Got::Ok(f, loc),
            None => {
                self.err(&loc, key, expected, "");
                Got::Bad
            }
        }
    }

    /// A percentage above 0 and at most 100 (an integer or a float).
    pub(super) fn percent(&mut self, key: &str) -> Got<f64> {
        let Some((raw, loc)) = self.raw(key) else {
            return Got::Absent;
        };
        let v = match raw {
            Raw::Flag(t) => t.trim().parse::<f64>().ok(),
            Raw::Toml(item) => item.as_float().or_else(|| item.as_integer().map(|i| i as f64)),
        };
        match v.filter(|v| *v > 0.0 && *v <= 100.0) {
            Some(v) => Got::Ok(v, loc),
            None => {
                self.err(&loc, key, "a percentage above 0 and at most 100, like 50", "");
                Got::Bad
            }
        }
    }

    /// `pattern = { text = "HELLO", map = "offset", column = "1s" }`.
    pub(super) fn pattern(&mut self, key: &str) -> Got<Pattern> {
        let Some((raw, loc)) = self.raw(key) else {
            return Got::Absent;
        };
        let expected = "a table like { text = \"HELLO\", map = \"offset\" } (map: offset or size; column: time per font column, default 1s)";
        let table = match raw {
            Raw::Toml(item) => item.as_table_like(),
            Raw::Flag(_) => None,
        };
        let Some(t) = table else {
            self.err(&loc, key, expected, "");
            return Got::Bad;
        };
        let mut ok = true;
        for (k, _) in t.iter() {
            if !PATTERN_KEYS.contains(&k) {
                let kloc = t.key(k).and_then(|k| k.span()).map_or(loc.clone(), |s| self.file_loc(s));
                let note = closest(k, &PATTERN_KEYS).map(|c| format!("did you mean `{c}`?")).unwrap_or_default();
                self.err(&kloc, &format!("{key}.{k}"), "text, map or column", note);
                ok = false;
            }
        }
        // Each value is pointed at where it is written, under its own key (`workload.pattern.map`).
        let at = |ctx: &Self, name: &str| t.get_key_value(name).map(|(k, item)| (item, ctx.item_loc(item, k.span())));
        let text = match at(self, "text") {
            None => {
                self.err(&loc, key, expected, "`text` is missing");
                None
            }
            Some((item, tloc)) => {
                let tkey = format!("{key}.text");
                match item.as_str() {
                    Some(s) if s.trim().is_empty() || s.chars().count() > 64 => {
                        self.err(&tloc, &tkey, "a text of 1 to 64 characters", "");
                        None
                    }
                    Some(s) => match crate::font::render(s) {
                        Ok(_) => Some(s.to_string()),
                        Err(c) => {
                            let note = format!("'{c}' has no glyph; the font has {}", crate::font::SUPPORTED);
                            self.err(&tloc, &tkey, "text the 5×7 font can draw", note);
                            None
                        }
                    },
                    None => {
                        self.err(&tloc, &tkey, "a text of 1 to 64 characters, like \"HELLO\"", "");
                        None
                    }
                }
            }
        };
        let map = match at(self, "map") {
            None => Some(PatternMap::Offset),
            Some((item, mloc)) => match item.as_str() {
                Some("offset") => Some(PatternMap::Offset),
                Some("size") => Some(PatternMap::Size),
                _ => {
                    self.err(&mloc, &format!("{key}.map"), "\"offset\" or \"size\"", "");
                    None
                }
            },
        };
        let column = match at(self, "column") {
            None => Some(Duration::from_secs(1)),
            Some((item, cloc)) => match item.as_value().map(duration_value) {
                Some(Ok(d)) if d >= Duration::from_millis(100) && d <= Duration::from_secs(3600) => Some(d),
                _ => {
                    self.err(&cloc, &format!("{key}.column"), "a duration from 100ms to 1h, like \"1s\"", "");
                    None
                }
            },
        };
        match (ok, text, map, column) {
            (true, Some(text), Some(map), Some(column)) => Got::Ok(Pattern { text, map, column }, loc),
            _ => Got::Bad,
        }
    }
}

/// A duration from a TOML value: a string like "90s", or a number of seconds.
pub(super) fn duration_value(v: &Value) -> Result<Duration, ValueError> {
    match v {
        Value::String(s) => Ok(parse_duration(s.value())?),
        Value::Integer(i) if *i.value() >= 0 => Ok(Duration::from_secs(*i.value() as u64)),
        Value::Float(x) if x.value().is_finite() && *x.value() >= 0.0 => {
            Duration::try_from_secs_f64(*x.value()).map_err(|e| ValueError::Hint(e.to_string()))
        }
        Value::Integer(_) | Value::Float(_) => Err(UnitError::NegativeDuration.into()),
        _ => Err(ValueError::Form),
    }
}

/// A duration from a flag's text or a file value.
pub(super) fn raw_duration(raw: Raw) -> Result<Duration, ValueError> {
    match raw {
        Raw::Flag(t) => Ok(parse_duration(t)?),
        Raw::Toml(item) => item.as_value().map_or(Err(ValueError::Form), duration_value),
    }
}
