//! The key reference in docs/workload.md and the flag table in README.md, generated from the
//! key table, and the test that fails when the committed documents differ from it.

use crate::keys::{self, FioMeaning, Key, Section};

/// The markers around the generated part of docs/workload.md.
pub const WORKLOAD_MD_MARKERS: (&str, &str) = (
    "<!-- key reference: generated from crates/workload/src/keys.rs, do not edit -->",
    "<!-- end of key reference -->",
);
/// The markers around the generated flag table of README.md.
pub const README_MARKERS: (&str, &str) =
    ("<!-- flag table: generated from crates/workload/src/keys.rs, do not edit -->", "<!-- end of flag table -->");

/// A Markdown table cell: pipes escaped.
fn cell(s: &str) -> String {
    s.replace('|', "\\|")
}

/// `--flag FORM` (or `--flag` for a switch).
fn flag_usage(key: &Key) -> String {
    match (key.flag, key.is_switch()) {
        (None, _) => String::new(),
        (Some(f), true) => format!("--{f}"),
        (Some(f), false) => format!("--{f} {}", key.form),
    }
}

/// What the reference says a key means: its help, then its longer doc.
fn meaning(key: &Key) -> String {
    let help = key.help_text();
    let help = help.trim_end_matches('.');
    match key.doc {
        "" => format!("{help}."),
        doc => format!("{help}; {doc}."),
    }
}

/// The generated part of docs/workload.md: a table per section, then fio's options.
pub fn workload_reference() -> String {
    let mut out = String::new();
    for section in Section::ALL {
        let title = match section {
            Section::Top => "### Top-level keys".to_string(),
            s if s.is_array() => format!("### `[[{}]]` keys", s.name()),
            s => format!("### `[{}]` keys", s.name()),
        };
        out.push_str(&format!("\n{title}\n\n"));
        if section == Section::Top {
            out.push_str("| key | flag | default | meaning |\n|---|---|---|---|\n");
        } else {
            out.push_str("| key | default | meaning |\n|---|---|---|\n");
        }
        for key in keys::in_section(section) {
            let default = if key.default.is_empty() { String::new() } else { format!("`{}`", key.default) };
            let m = meaning(key);
            if section == Section::Top {
                let flag = match flag_usage(key) {
                    f if f.is_empty() => String::new(),
                    f => format!("`{f}`"),
                };
                out.push_str(&format!("| `{}` | {} | {} | {} |\n", key.name, cell(&flag), cell(&default), cell(&m)));
            } else {
                out.push_str(&format!("| `{}` | {} | {} |\n", key.name, cell(&default), cell(&m)));
            }
        }
    }
    out.push_str("\n### fio's options\n\n");
    out.push_str(
        "fio's option names are accepted as flags where they mean what an ioscope key means \
         (with `_` or `-`); in a workload file, keys keep ioscope's names \
         (`ioscope import fio` converts job files).\n\n",
    );
    out.push_str("| fio | ioscope |\n|---|---|\n");
    for key in keys::in_section(Section::Top) {
        for fio in key.fio.iter().filter(|f| **f != key.name) {
            let flag = key.flag.map_or(format!("`{}` (no flag: `--set {}=VALUE`)", key.name, key.name), |f| {
                format!("`--{f}`, key `{}`", key.name)
            });
            out.push_str(&format!("| `--{fio}` | {} |\n", cell(&flag)));
        }
        for (fio, native) in key.fio_values {
            out.push_str(&format!(
                "| `{}={fio}` | `{} = \"{native}\"` |\n",
                key.fio.first().unwrap_or(&key.name),
                key.name
            ));
        }
    }
    for option in keys::FIO_OPTIONS {
        let what = match option.meaning {
            FioMeaning::Switch { key, on, off, other } => {
                format!(
                    "`=1`: `{key} = {}`; `=0`: `{key} = {}`; other values are refused ({other})",
                    quoted(on),
                    quoted(off)
                )
            }
            FioMeaning::NoOp(why) => format!("accepted and ignored: {why}"),
            FioMeaning::Only { value, why } => {
                format!("`={value}` accepted (what ioscope does anyway); other values refused (exit 2): {why}")
            }
            FioMeaning::Refused(why) => format!("refused (exit 2): {why}"),
            FioMeaning::Converted { key, conversion, .. } => converted(key, conversion),
        };
        out.push_str(&format!("| `--{}` | {} |\n", option.name, cell(&what)));
    }
    out
}

/// What a converted fio option sets, as the fio importer converts it.
fn converted(key: &str, conversion: keys::Conversion) -> String {
    let how = match conversion {
        keys::Conversion::BlockSizeSplit => "a weighted list: `--bssplit 4k/60:64k/40` is `--bs 4k:60,64k:40` (a size without a share takes an even part of what is left)",
        keys::Conversion::WriteShare => "100 minus the share of writes: `--rwmixwrite 30` is `--rwmix-read 70`",
        keys::Conversion::FileName => "the file's directory (ioscope keeps its working set in its own files there, with a warning), or the block device itself: `--filename /data/f1` is `--dir /data`, `--filename /dev/sdb` is `--dir /dev/sdb`",
    };
    format!("converted to `{key}` as the fio importer converts it, {how}; a value that does not convert is refused (exit 2)")
}

/// A value as TOML writes it: booleans bare, names quoted.
fn quoted(v: &str) -> String {
    match v {
        "true" | "false" => v.to_string(),
        v => format!("\"{v}\""),
    }
}

/// The generated flag table of README.md: every workload flag.
pub fn readme_flags() -> String {
    let mut out = String::from("| flag | meaning |\n|---|---|\n");
    for key in keys::in_section(Section::Top).filter(|k| k.flag.is_some()) {
        let mut m = key.help_text().trim_end_matches('.').to_string();
        if !key.default.is_empty() {
            m.push_str(&format!(" (default {})", key.default));
        }
        let fio: Vec<String> =
            key.fio.iter().filter(|f| Some(**f) != key.flag && **f != key.name).map(|f| format!("`--{f}`")).collect();
        if !fio.is_empty() {
            m.push_str(&format!("; fio: {}", fio.join(", ")));
        }
        out.push_str(&format!("| `{}` | {} |\n", cell(&flag_usage(key)), cell(&m)));
    }
    out.push_str("| `--set KEY=VALUE` | any key of [docs/workload.md](docs/workload.md), also inside sections (`--set dataset.files=10`) |\n");
    out
}

/// `doc` with the text between `markers` replaced by `generated`; None without the markers.
pub fn splice(doc: &str, markers: (&str, &str), generated: &str) -> Option<String> {
    let start = doc.find(markers.0)? + markers.0.len();
    let end = start + doc[start..].find(markers.1)?;
    Some(format!("{}\n{}\n{}", &doc[..start], generated.trim_end(), &doc[end..]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    /// The committed document at `rel` (from the workspace root) and what it should hold.
    fn check_generated(rel: &str, markers: (&str, &str), generated: &str) -> Result<(), String> {
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..").join(rel);
        let doc = std::fs::read_to_string(&path).map_err(|e| format!("{rel}: {e}"))?;
        let want =
            splice(&doc, markers, generated).ok_or_else(|| format!("{rel}: the markers {markers:?} are missing"))?;
        if want == doc {
            return Ok(());
        }
        if std::env::var_os("UPDATE_DOCS").is_some() {
            std::fs::write(&path, want).map_err(|e| format!("{rel}: {e}"))?;
            return Ok(());
        }
        Err(format!(
            "{rel} differs from the key table (crates/workload/src/keys.rs); update it with:\n    UPDATE_DOCS=1 cargo test -p ioscope-workload generated_docs"
        ))
    }

    #[test]
    fn generated_docs_match_the_key_table() {
        let results = [
            check_generated("docs/workload.md", WORKLOAD_MD_MARKERS, &workload_reference()),
            check_generated("README.md", README_MARKERS, &readme_flags()),
        ];
        let errors: Vec<String> = results.into_iter().filter_map(Result::err).collect();
        assert!(errors.is_empty(), "{}", errors.join("\n"));
    }

    #[test]
    fn every_key_in_the_key_table_is_in_the_docs_reference() {
        let doc = std::fs::read_to_string(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/workload.md"))
            .expect("docs/workload.md");
        let start = doc.find(WORKLOAD_MD_MARKERS.0).expect("the reference's start marker");
        let reference = &doc[start..];
        for section in Section::ALL {
            let title = match section {
                Section::Top => "### Top-level keys".to_string(),
                s if s.is_array() => format!("### `[[{}]]` keys", s.name()),
                s => format!("### `[{}]` keys", s.name()),
            };
            let at = reference.find(&title).unwrap_or_else(|| panic!("{title} is missing"));
            let table = &reference[at..];
            let table = &table[..table[title.len()..].find("\n### ").map_or(table.len(), |e| e + title.len())];
            for key in keys::in_section(section) {
                assert!(table.contains(&format!("| `{}` |", key.name)), "{} is not under {title}", key.name);
                if let (Some(flag), Section::Top) = (key.flag, section) {
                    assert!(table.contains(&format!("`--{flag}")), "--{flag} is not under {title}");
                }
            }
        }
        for option in keys::FIO_OPTIONS {
            assert!(reference.contains(&format!("| `--{}` |", option.name)), "fio's {} is not listed", option.name);
        }
    }

    #[test]
    fn every_fio_name_in_the_table_resolves_and_no_name_is_two_things() {
        let mut seen: Vec<String> = Vec::new();
        for key in keys::in_section(Section::Top) {
            for s in key.spellings() {
                assert!(!seen.contains(&s), "--{s} is the spelling of two keys");
                assert_eq!(keys::by_flag(&s).map(|k| k.name), Some(key.name), "--{s}");
                seen.push(s);
            }
            for fio in key.fio {
                assert!(keys::by_fio_name(fio).is_some(), "{fio}");
            }
        }
        for option in keys::FIO_OPTIONS {
            for s in keys::fio_spellings(option) {
                assert!(!seen.contains(&s), "--{s} is both a key's flag and a fio option");
                assert!(keys::by_fio_name(&s).is_some(), "{s}");
                seen.push(s);
            }
        }
    }
}
