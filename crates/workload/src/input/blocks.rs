//! Block sizes as read: a size, a weighted list ("4k:60,64k:40") or `{size, weight}` tables,
//! each entry pointed at where it is written.

use super::*;

/// The largest file of a tree (the gamma mean's limit too).
const MAX_FILE_SIZE: u64 = 64 << 30;

impl<'a> Ctx<'a> {
    /// `for_bs`: a list of block sizes or weighted lists, like `["4k", "64k"]` (flag: "4k 64k").
    pub(super) fn bs_lists(&mut self, key: &str) -> Got<Vec<Vec<BsEntry>>> {
        let Some((raw, loc)) = self.raw(key) else {
            return Got::Absent;
        };
        let expected = "a list of block sizes like [\"4k\", \"64k\"] (each may be a weighted list)";
        let mut out = Vec::new();
        let mut ok = true;
        match raw {
            Raw::Flag(t) => {
                for piece in t.split_whitespace() {
                    match self.bs_list(key, piece, &loc) {
                        Some(e) => out.push(e),
                        None => ok = false,
                    }
                }
            }
            Raw::Toml(item) => match item.as_value() {
                Some(Value::Array(a)) => {
                    for v in a.iter() {
                        let vloc = v.span().map_or(loc.clone(), |s| self.file_loc(s));
                        let entries = match v {
                            Value::String(s) => self.bs_list(key, s.value(), &vloc),
                            Value::Integer(i) => {
                                let bytes = u64::try_from(*i.value()).map_err(|_| UnitError::NegativeSize.into());
                                self.bs_entry(key, bytes, 1, &vloc).map(|e| vec![e])
                            }
                            _ => {
                                self.err(&vloc, key, expected, "");
                                None
                            }
                        };
                        match entries {
                            Some(e) => out.push(e),
                            None => ok = false,
                        }
                    }
                }
                _ => {
                    self.err(&loc, key, expected, "");
                    ok = false;
                }
            },
        }
        if out.is_empty() && ok {
            self.err(&loc, key, expected, "the list is empty");
            ok = false;
        }
        if ok {
            Got::Ok(out, loc)
        } else {
            Got::Bad
        }
    }

    /// Block sizes: "4k", 4096, "4k:60,64k:40", or an array of `{size, weight}` tables.
    pub(super) fn block_sizes(&mut self, key: &str) -> Got<Vec<BsEntry>> {
        let Some((raw, loc)) = self.raw(key) else {
            return Got::Absent;
        };
        let expected = "a size like 4k, a byte count, or a weighted list like \"4k:60,64k:40\" \
                        or [{size = \"4k\", weight = 60}, ...]";
        let entries = match raw {
            Raw::Flag(t) => self.bs_list(key, t, &loc),
            Raw::Toml(Item::ArrayOfTables(arr)) => {
                let tables: Vec<(&dyn TableLike, Loc)> = arr
                    .iter()
                    .map(|t| (t as &dyn TableLike, t.span().map_or(loc.clone(), |s| self.file_loc(s))))
                    .collect();
                self.bs_tables(key, tables, &loc)
            }
            Raw::Toml(item) => match item.as_value() {
                Some(Value::String(s)) => self.bs_list(key, s.value(), &loc),
                Some(Value::Integer(i)) => {
                    let bytes = u64::try_from(*i.value()).ok();
                    self.bs_entry(key, bytes.ok_or(ValueError::Unit(UnitError::NegativeSize)), 1, &loc).map(|e| vec![e])
                }
                Some(Value::Array(a)) => {
                    let mut tables = Vec::new();
                    let mut ok = true;
                    for v in a.iter() {
                        let vloc = v.span().map_or(loc.clone(), |s| self.file_loc(s));
                        match v.as_inline_table() {
                            Some(t) => tables.push((t as &dyn TableLike, vloc)),
                            None => {
                                self.err(&vloc, key, "a table like {size = \"4k\", weight = 60}", "");
                                ok = false;
                            }
                        }
                    }
                    let got = self.bs_tables(key, tables, &loc);
                    got.filter(|_| ok)
                }
                _ => {
                    self.err(&loc, key, expected, "");
                    None
                }
            },
        };
        match entries {
            Some(e) => Got::Ok(e, loc),
            None => Got::Bad,
        }
    }

    /// Checks one size: a transfer's (1 byte to 256 MiB) or a tree file's (to 64 GiB).
    pub(super) fn bs_entry(
        &mut self,
        key: &str,
        bytes: Result<u64, ValueError>,
        weight: u32,
        loc: &Loc,
    ) -> Option<BsEntry> {
        // A tree's file sizes (`sizes` of a [dataset] or [[fileset]]) go to 64 GiB, as
        // gamma's mean does; transfer sizes to 256 MiB.
        let (max, form) = match key.ends_with(".sizes") {
            true => (MAX_FILE_SIZE, "a file size from 1 byte to 64 GiB, like 4k, 1m, 10g"),
            false => (MAX_BS, "a block size from 1 byte to 256 MiB, like 4k, 64k, 1m"),
        };
        match bytes {
            Ok(b) if (1..=max).contains(&b) => Some(BsEntry { bs: BlockSize { bytes: b, weight }, loc: loc.clone() }),
            Ok(b) => {
                let note = if b == 0 {
                    String::new()
                } else {
                    format!("{} is larger than the {} limit", format_size(b), format_size(max))
                };
                self.err(loc, key, form, note);
                None
            }
            Err(note) => {
                self.err(loc, key, SIZE_EXAMPLE, note.to_string());
                None
            }
        }
    }

    /// A location inside the string value at `base`: `range` of its content, when the string is
    /// written plainly (no escapes) so that content offsets map to file offsets.
    pub(super) fn sub_loc(&self, base: &Loc, content: &str, range: Range<usize>) -> Option<Loc> {
        let Loc::File { span, .. } = base else {
            return None;
        };
        let raw = self.text().get(span.clone())?;
        let plain = raw.len() == content.len() + 2
            && (raw.starts_with('"') || raw.starts_with('\''))
            && raw.get(1..raw.len() - 1) == Some(content);
        if !plain {
            return None;
        }
        let start = span.start + 1 + range.start;
        let mut loc = self.file_loc(start..span.start + 1 + range.end);
        if let Loc::File { shown, .. } = &mut loc {
            *shown = format!("\"{}\"", &content[range]);
        }
        Some(loc)
    }

    /// "4k" or "4k:60,32k:25,...". Entries need a weight when there is more than one.
    pub(super) fn bs_list(&mut self, key: &str, s: &str, base: &Loc) -> Option<Vec<BsEntry>> {
        let mut pieces = Vec::new();
        let mut start = 0;
        for (i, c) in s.char_indices().chain(std::iter::once((s.len(), ','))) {
            if c == ',' {
                pieces.push(start..i);
                start = i + 1;
            }
        }
        let multi = pieces.len() > 1;
        let mut out = Vec::new();
        let mut ok = true;
        for piece in pieces {
            let text = &s[piece.clone()];
            let trimmed = trim_range(s, piece.clone());
            // Point at the entry itself when possible; otherwise at the whole value, with a note.
            // (A lone size is the whole value: point at all of it, quotes included.)
            let sub = |ctx: &Self, r: Range<usize>| -> (Loc, String) {
                if !multi && weight_free(s) {
                    return (base.clone(), String::new());
                }
                match ctx.sub_loc(base, s, r) {
                    Some(l) => (l, String::new()),
                    None if multi => (base.clone(), format!("in entry \"{}\"", text.trim())),
                    None => (base.clone(), String::new()),
                }
            };
            if trimmed.is_empty() {
                let (loc, _) = sub(self, piece.clone());
                self.err(
                    &loc,
                    key,
                    "SIZE:WEIGHT entries separated by commas, like \"4k:60,64k:40\"",
                    "an entry is empty (two commas in a row, or one at an end?)",
                );
                ok = false;
                continue;
            }
            let (size_r, weight_r) = match s[trimmed.clone()].find(':') {
                Some(i) => (
                    trim_range(s, trimmed.start..trimmed.start + i),
                    Some(trim_range(s, trimmed.start + i + 1..trimmed.end)),
                ),
                None => (trimmed.clone(), None),
            };
            let weight = match weight_r {
                Some(wr) => {
                    let w = s[wr.clone()].parse::<u32>().ok().filter(|w| *w > 0);
                    if w.is_none() {
                        let (loc, note) = sub(self, wr);
                        self.err(&loc, key, "a weight that is a whole number from 1 to 4294967295, like 4k:60", note);
                    }
                    w
                }
                None if multi => {
                    let (loc, note) = sub(self, trimmed.clone());
                    self.err(&loc, key, "SIZE:WEIGHT, like 4k:60 (each entry of a list needs a weight)", note);
                    None
                }
                None => Some(1),
            };
            let (loc, note) = sub(self, size_r.clone());
            let entry = match parse_size(&s[size_r]) {
                Ok(b) => self.bs_entry(key, Ok(b), weight.unwrap_or(1), &loc),
                Err(e) => {
                    let msg = [note, e.to_string()].into_iter().filter(|n| !n.is_empty()).collect::<Vec<_>>();
                    self.bs_entry(key, Err(ValueError::Hint(msg.join("\n"))), 1, &loc)
                }
            };
            match (entry, weight) {
                (Some(e), Some(_)) => out.push(e),
                _ => ok = false,
            }
        }
        ok.then_some(out)
    }

    /// `[{size = "4k", weight = 60}, ...]` or `[[bs]]` tables.
    pub(super) fn bs_tables(
        &mut self,
        key: &str,
        tables: Vec<(&dyn TableLike, Loc)>,
        base: &Loc,
    ) -> Option<Vec<BsEntry>> {
        if tables.is_empty() {
            self.err(base, key, "at least one block size", "");
            return None;
        }
        let multi = tables.len() > 1;
        let mut out = Vec::new();
        let mut ok = true;
        for (t, tloc) in tables {
            let mut misspelt = false;
            for (k, _) in t.iter() {
                if k != "size" && k != "weight" {
                    let kloc = t.key(k).and_then(|k| k.span()).map_or(tloc.clone(), |s| self.file_loc(s));
                    let note = closest(k, &["size", "weight"]).map(|c| format!("did you mean `{c}`?"));
                    self.err(&kloc, &format!("{key}.{k}"), "size or weight", note.unwrap_or_default());
                    ok = false;
                    misspelt = true;
                }
            }
            let weight = match t.get_key_value("weight") {
                Some((k, item)) => {
                    let wloc = self.item_loc(item, k.span());
                    let w = item.as_integer().and_then(|w| u32::try_from(w).ok()).filter(|w| *w > 0);
                    if w.is_none() {
                        self.err(&wloc, key, "a weight that is a whole number from 1 to 4294967295", "");
                    }
                    w
                }
                // (A misspelt key already explains what is missing.)
                None if misspelt => None,
                None if multi => {
                    self.err(&tloc, key, "a weight in each entry, like {size = \"4k\", weight = 60}", "");
                    None
                }
                None => Some(1),
            };
            let entry = match t.get_key_value("size") {
                Some((k, item)) => {
                    let sloc = self.item_loc(item, k.span());
                    let bytes = match item.as_value() {
                        Some(Value::String(s)) => parse_size(s.value()).map_err(ValueError::from),
                        Some(Value::Integer(i)) => {
                            u64::try_from(*i.value()).map_err(|_| UnitError::NegativeSize.into())
                        }
                        _ => Err(ValueError::Form),
                    };
                    self.bs_entry(key, bytes, weight.unwrap_or(1), &sloc)
                }
                None if misspelt => None,
                None => {
                    self.err(&tloc, key, "a size in each entry, like {size = \"4k\", weight = 60}", "");
                    None
                }
            };
            match (entry, weight) {
                (Some(e), Some(_)) => out.push(e),
                _ => ok = false,
            }
        }
        ok.then_some(out)
    }
}

/// A lone size without a weight, e.g. "4k" (not "4k:60").
pub(super) fn weight_free(s: &str) -> bool {
    !s.contains(':')
}

/// `range` of `s` without the whitespace at either end.
pub(super) fn trim_range(s: &str, range: Range<usize>) -> Range<usize> {
    let t = &s[range.clone()];
    let start = range.start + (t.len() - t.trim_start().len());
    let end = range.end - (t.len() - t.trim_end().len());
    start..end.max(start)
}
