//! Reading the data-content keys (`compress_ratio`, `compress_chunk`, `dedup_ratio`,
//! `dedup_unit`, `zero_buffers`; see [`crate::content`]): at the top level for the laid-out
//! files and every workload, in a `[[workload]]` for its own writes. A flag wins over both,
//! as flags win over every key of a file.

use super::{Ctx, Got, Loc, Raw};
use crate::content::{self, Content};
use toml_edit::Value;

impl<'a> Ctx<'a> {
    /// The run's content (top-level keys and flags); None when a key is wrong.
    pub(super) fn top_content(&mut self) -> Option<Content> {
        self.content_of(&|k: &str| k.to_string(), None)
    }

    /// The content of [[workload]] `i` (its keys over `base`, the top level's; a flag over
    /// both); `writes`: whether the workload writes. None when a key is wrong.
    pub(super) fn workload_content(&mut self, i: usize, base: &Content, writes: bool) -> Option<Content> {
        self.current = Some(("workload", i));
        let own = content::KEYS.iter().find_map(|k| self.raw(&format!("workload.{k}")).map(|(_, loc)| (k, loc)));
        let c = self.content_of(&|k: &str| format!("workload.{k}"), Some(base));
        // Only a key that would change something is refused: it would change nothing here.
        if let (Some((key, loc)), false, true) = (own, writes, c.is_some_and(|c| c != *base)) {
            let note = "a workload that only reads gets what the files hold: set the content at the top level, where it shapes the laid-out files";
            self.err(&loc, &format!("workload.{key}"), "content keys only in a workload that writes", note);
        }
        self.current = None;
        c
    }

    /// Reads the keys named by `name`; absent ones take `base`'s value (or the default).
    fn content_of(&mut self, name: &dyn Fn(&str) -> String, base: Option<&Content>) -> Option<Content> {
        let def = base.copied().unwrap_or_default();
        // A flag (a top-level key) overrides a workload's own key.
        let key = |this: &Self, k: &str| -> String {
            let flagged = base.is_some() && matches!(this.raw(k), Some((_, Loc::Flag { .. })));
            if flagged {
                k.to_string()
            } else {
                name(k)
            }
        };
        let (kr, kc, kd, ku, kz) = (
            key(self, "compress_ratio"),
            key(self, "compress_chunk"),
            key(self, "dedup_ratio"),
            key(self, "dedup_unit"),
            key(self, "zero_buffers"),
        );
        let ratio_g = self.ratio(&kr, content::MAX_COMPRESS_RATIO);
        let chunk_g = self.bounded_size(&kc, content::MIN_CHUNK, 1);
        let dedup_g = self.ratio(&kd, content::MAX_DEDUP_RATIO);
        let unit_g = self.bounded_size(&ku, content::MIN_UNIT, content::MIN_UNIT);
        let zeros_g = self.boolean(&kz);
        let c = Content {
            compress_ratio: ratio_g.or(def.compress_ratio)?,
            compress_chunk_bytes: chunk_g.or(u64::from(def.compress_chunk_bytes))? as u32,
            dedup_ratio: dedup_g.or(def.dedup_ratio)?,
            dedup_unit_bytes: unit_g.or(u64::from(def.dedup_unit_bytes))? as u32,
            zeros: zeros_g.or(def.zeros)?,
        };
        if let (Got::Ok(true, loc), true) = (&zeros_g, c.compress_ratio != 1.0 || c.dedup_ratio != 1.0) {
            let note = "zeros compress and dedup without limit; a ratio asks for data that reduces by a set amount";
            self.err(loc, &kz, "zero_buffers without compress_ratio or dedup_ratio", note);
            return None;
        }
        Some(c)
    }

    /// A ratio: a number from 1 to `max` or a string `N:1`.
    fn ratio(&mut self, key: &str, max: f64) -> Got<f64> {
        let Some((raw, loc)) = self.raw(key) else {
            return Got::Absent;
        };
        let parsed = match raw {
            Raw::Flag(t) => content::parse_ratio(t, max),
            Raw::Toml(item) => match item.as_value() {
                Some(Value::Integer(i)) => content::check_ratio(*i.value() as f64, max),
                Some(Value::Float(f)) => content::check_ratio(*f.value(), max),
                Some(Value::String(s)) => content::parse_ratio(s.value(), max),
                _ => Err(String::new()),
            },
        };
        match parsed {
            Ok(v) => Got::Ok(v, loc),
            Err(note) => {
                let expected = format!("{}, at most {}", content::RATIO_EXPECTED, content::ratio_literal(max));
                self.err(&loc, key, expected, note);
                Got::Bad
            }
        }
    }

    /// A size from `min` to 1 MiB, a multiple of `multiple`.
    fn bounded_size(&mut self, key: &str, min: u64, multiple: u64) -> Got<u64> {
        let got = self.size(key);
        if let Got::Ok(v, loc) = &got {
            let max = content::MAX_CHUNK_OR_UNIT;
            if *v < min || *v > max || v % multiple != 0 {
                let of = if multiple > 1 { format!(", a multiple of {multiple}") } else { String::new() };
                self.err(loc, key, format!("a size from {min} bytes to 1m{of}"), "");
                return Got::Bad;
            }
        }
        got
    }
}
