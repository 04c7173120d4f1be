//! Where values come from: the TOML file walked into its known keys (unknown ones reported
//! with what was meant), the command-line flags resolved to keys, `--set KEY=VALUE` parsed, and
//! the lookup of a key's effective raw value (flag over file) with its location.

use super::*;

/// Resolves the command-line flags to keys: any spelling of a key's flag, or a fio option
/// (a switch that sets a key, a no-op, or a refusal with the reason).
/// `converted` is `fio_flags::convert_flags`'s answer for `given`.
pub(super) fn resolve_flags<'a>(
    given: &'a [(String, String)],
    converted: &'a [Option<(&'static str, String)>],
    diags: &mut Vec<Diagnostic>,
) -> Vec<FlagValue<'a>> {
    let mut out = Vec::new();
    for (i, (name, text)) in given.iter().enumerate() {
        let flag = format!("--{name}");
        if let Some(Some((key, value))) = converted.get(i) {
            out.push(FlagValue { key, text: value.as_str(), flag });
            continue;
        }
        if let Some(key) = keys::by_flag(name) {
            out.push(FlagValue { key: key.name, text: text.as_str(), flag });
            continue;
        }
        let meaning = match keys::by_fio_name(name) {
            Some(keys::FioMatch::Option(o)) => o.meaning,
            // A key without a flag of its own: only `--set` and the file.
            Some(keys::FioMatch::Key(k)) => {
                let expected = format!("--set {}=VALUE (`{}` has no flag of its own)", k.name, k.name);
                diags.push(Diagnostic::at_flag(&flag, "", text, expected, ""));
                continue;
            }
            None => {
                diags.push(Diagnostic::at_flag(&flag, "", text, "a workload flag (see ioscope run --help)", ""));
                continue;
            }
        };
        match meaning {
            FioMeaning::Switch { key, on, off, other } => match text.trim() {
                "" | "1" => out.push(FlagValue { key, text: on, flag }),
                "0" => out.push(FlagValue { key, text: off, flag }),
                _ => diags.push(Diagnostic::at_flag(&flag, "", text, "1 or 0", other)),
            },
            FioMeaning::NoOp(_) => {}
            // A bare flag is fio's `=1`.
            FioMeaning::Only { value, why } if text.trim() != value && !(text.is_empty() && value == "1") => {
                let expected = format!("{flag}={value} (ioscope does not do what fio's {flag}={text} asks)");
                diags.push(Diagnostic::at_flag(&flag, "", text, expected, why));
            }
            FioMeaning::Only { .. } => {}
            FioMeaning::Refused(why) => {
                let expected = format!("a flag ioscope has (fio's {flag} has no equivalent)");
                diags.push(Diagnostic::at_flag(&flag, "", text, expected, why));
            }
            // Its value did not convert: refused by `convert_flags`, naming the flag.
            FioMeaning::Converted { .. } => {}
        }
    }
    out
}

/// A file that is not TOML but reads like fio's ini format: a `.fio` name, or a `[global]`
/// section, or several of fio's own options set without quotes (`ioengine=libaio`, `rw=randread`).
pub(super) fn looks_like_fio_job_file(path: &std::path::Path, text: &str) -> bool {
    if path.extension().is_some_and(|e| e.eq_ignore_ascii_case("fio")) {
        return true;
    }
    let mut fio_options = 0;
    for line in text.lines().take(1000).map(str::trim) {
        if line.eq_ignore_ascii_case("[global]") {
            return true;
        }
        let Some((key, value)) = line.split_once('=') else { continue };
        let value = value.trim();
        if ["ioengine", "rw", "readwrite", "numjobs", "iodepth", "runtime", "filename", "directory", "bs", "size"]
            .contains(&key.trim())
            && !value.is_empty()
            && !value.starts_with(['"', '\'', '[', '{'])
            && value.parse::<f64>().is_err()
        {
            fio_options += 1;
        }
    }
    // One unquoted value is more likely a TOML slip than a fio file.
    fio_options >= 2
}

/// `--set KEY=VALUE` flags: (key, value as a TOML array/table/boolean if it reads as one, text).
pub(super) fn parse_sets(sets: &[String], diags: &mut Vec<Diagnostic>) -> Vec<(String, Option<Item>, String)> {
    let known = keys::settable();
    let mut out = Vec::new();
    for set in sets {
        let Some((key, value)) = set.split_once('=') else {
            diags.push(Diagnostic::at_flag("--set", "", set, "KEY=VALUE, e.g. --set dataset.files=10", ""));
            continue;
        };
        let key = key.trim();
        if !known.iter().any(|k| k == key) {
            let names: Vec<&str> = known.iter().map(String::as_str).collect();
            let note = match keys::by_fio_name(key) {
                Some(keys::FioMatch::Key(k)) => {
                    format!("did you mean `{}`? (`{key}` is spelled `{}` in ioscope)", k.name, k.name)
                }
                _ => closest(key, &names).map(|c| format!("did you mean `{c}`?")).unwrap_or_default(),
            };
            let expected = "a workload key (see docs/workload.md), e.g. threads, dataset.files, workload.threads";
            diags.push(Diagnostic::at_flag("--set", key, set, expected, note));
            continue;
        }
        let item = value
            .trim()
            .parse::<Value>()
            .ok()
            .filter(|v| matches!(v, Value::Array(_) | Value::InlineTable(_) | Value::Boolean(_)))
            .map(Item::Value);
        out.push((key.to_string(), item, value.trim().to_string()));
    }
    out
}

impl<'a> Ctx<'a> {
    /// A file location for bytes `span`, showing the source text there.
    pub(super) fn file_loc(&self, span: Range<usize>) -> Loc {
        let text = self.text();
        let raw = text.get(span.clone()).unwrap_or("");
        let mut shown: String = raw.lines().next().unwrap_or("").to_string();
        if shown.len() < raw.trim_end().len() || shown.chars().count() > 60 {
            shown = shown.chars().take(56).collect::<String>() + " …";
        }
        Loc::File { span, shown }
    }

    /// Location of a file item: its value, or its key when the item has no span of its own.
    pub(super) fn item_loc(&self, item: &Item, key_span: Option<Range<usize>>) -> Loc {
        match item.span().or(key_span) {
            Some(span) => self.file_loc(span),
            None => Loc::Default,
        }
    }

    /// Walks the file: records known keys (top level and sections), reports unknown ones.
    pub(super) fn walk(&mut self, root: &'a toml_edit::Table) {
        for (name, _) in root.iter() {
            let Some((key, item)) = root.get_key_value(name) else {
                continue;
            };
            let key_span = key.span();
            if let Some(section) = Section::TABLES.into_iter().find(|s| s.name() == name) {
                let (sec, array) = (section.name(), section.is_array());
                let header = item.span().or(key_span.clone());
                match (item, array) {
                    (Item::ArrayOfTables(a), true) => {
                        for t in a.iter() {
                            let entries = self.section(section, t);
                            self.arrays.entry(sec).or_default().push((t.span().or(header.clone()), entries));
                        }
                    }
                    (Item::Table(_), true) => {
                        let loc = self.item_loc(item, key_span);
                        self.err(&loc, name, format!("[[{sec}]] (double brackets: there may be several)"), "");
                    }
                    (_, false) if item.is_table_like() => {
                        let entries = self.section(section, item.as_table_like().expect("table"));
                        self.entries.extend(entries);
                    }
                    _ => {
                        let loc = self.item_loc(item, key_span);
                        let form = if array { format!("[[{sec}]] tables") } else { format!("a [{sec}] table") };
                        self.err(&loc, name, form, "");
                    }
                }
                continue;
            }
            if let Some(known) = keys::find(Section::Top, name) {
                self.entries.insert(known.name.to_string(), (key_span, item));
                continue;
            }
            let loc = match key_span.clone() {
                Some(s) => self.file_loc(s),
                None => self.item_loc(item, None),
            };
            let mut notes = Vec::new();
            if item.is_table_like() {
                notes.push(format!(
                    "[{name}] is not a section of a workload file: the sections are [dataset], [[workload]], [[probe]], [[host]] and [[check]]"
                ));
            }
            let names = top_names();
            let fio = keys::by_fio_name(name);
            if let Some(keys::FioMatch::Key(k)) = fio {
                notes.push(format!("did you mean `{}`? (`{name}` is spelled `{}` in ioscope)", k.name, k.name));
            } else if let Some((_, to)) = ALIASES.iter().find(|(from, _)| name.eq_ignore_ascii_case(from)) {
                notes.push(format!("did you mean `{to}`? (`{name}` is spelled `{to}` in ioscope)"));
            } else if let Some(keys::FioMatch::Option(o)) = fio {
                match o.meaning {
                    FioMeaning::Switch { key, .. } | FioMeaning::Converted { key, .. } => {
                        notes.push(format!("`{name}` is fio's: set `{key}` instead"))
                    }
                    FioMeaning::NoOp(why) | FioMeaning::Only { why, .. } | FioMeaning::Refused(why) => {
                        notes.push(format!("`{name}` is fio's: {why}"))
                    }
                }
            } else if let Some(s) = closest(name, &names) {
                notes.push(format!("did you mean `{s}`?"));
            }
            let expected = format!("one of: {}", names.join(", "));
            self.err(&loc, name, expected, notes.join("\n"));
        }
    }

    /// The keys of one section table, as "section.key"; unknown keys are reported.
    pub(super) fn section(&mut self, section: Section, t: &'a dyn TableLike) -> Entries<'a> {
        let sec = section.name();
        let keys: Vec<&str> = keys::in_section(section).map(|k| k.name).collect();
        let mut out = Entries::new();
        for (k, item) in t.iter() {
            let key_span = t.key(k).and_then(|k| k.span());
            if keys.contains(&k) {
                out.insert(format!("{sec}.{k}"), (key_span, item));
                continue;
            }
            let loc = match key_span {
                Some(s) => self.file_loc(s),
                None => self.item_loc(item, None),
            };
            let note = match SECTION_ALIASES.iter().find(|(from, to)| k.eq_ignore_ascii_case(from) && keys.contains(to))
            {
                Some((_, to)) => format!("did you mean `{to}`? (`{k}` is spelled `{to}` in ioscope)"),
                None => closest(k, &keys).map(|c| format!("did you mean `{c}`?")).unwrap_or_default(),
            };
            self.err(&loc, &format!("{sec}.{k}"), format!("in [{sec}], one of: {}", keys.join(", ")), note);
        }
        out
    }

    /// The effective raw input for `key` (flag over file) and its location. Keys of an
    /// array section ("workload.threads") are read from the entry being parsed.
    pub(super) fn raw(&self, key: &str) -> Option<(Raw<'a>, Loc)> {
        if let Some((_, item, text)) = self.sets.iter().rev().find(|(k, _, _)| *k == key) {
            let loc = Loc::Flag { flag: "--set".into(), text: format!("{key}={text}") };
            return Some((item.map_or(Raw::Flag(text), Raw::Toml), loc));
        }
        if let Some(f) = self.flags.iter().rev().find(|f| f.key == key) {
            let loc = Loc::Flag { flag: f.flag.clone(), text: f.text.to_string() };
            return Some((Raw::Flag(f.text), loc));
        }
        let (key_span, item) = match (key.split_once('.'), self.current) {
            (Some((sec, _)), Some((cur, i))) if sec == cur => self.arrays.get(cur)?.get(i)?.1.get(key)?,
            _ => self.entries.get(key)?,
        };
        Some((Raw::Toml(item), self.item_loc(item, key_span.clone())))
    }

    /// The location of the character at `column` (1-based) of a string value written at
    /// `loc` (a quoted string with no escapes before it); the whole value otherwise.
    pub(super) fn inside_string(&self, loc: &Loc, value: &str, column: usize) -> Loc {
        let Loc::File { span, .. } = loc else { return loc.clone() };
        let written = self.text().get(span.clone()).unwrap_or("");
        let offset = value.char_indices().nth(column.saturating_sub(1)).map_or(value.len(), |(i, _)| i);
        let plain = written.len() >= 2 && written.get(1..written.len() - 1) == Some(value);
        if !plain {
            return loc.clone();
        }
        let start = span.start + 1 + offset;
        let end = (start + 1).min(span.end - 1).max(start);
        self.file_loc(start..end)
    }
}
