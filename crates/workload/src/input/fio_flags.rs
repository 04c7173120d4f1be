//! fio's spellings on the command line whose value is converted, as the fio importer converts
//! the same option in a job file (`--bssplit 4k/60:64k/40` is `--bs 4k:60,64k:40`,
//! `--ioengine=libaio` is `--engine uring`): the converted values, owned, for the flags to
//! borrow, and what differs from fio (notes, printed as warnings).

use super::*;

/// For each given flag (same order): the key and value it converts to, when it is a converted
/// fio option with a valid value. A value that does not convert is an error naming the flag.
pub(super) fn convert_flags(
    given: &[(String, String)],
    diags: &mut Vec<Diagnostic>,
    notes: &mut Vec<String>,
) -> Vec<Option<(&'static str, String)>> {
    given.iter().map(|(name, text)| convert_one(name, text, diags, notes)).collect()
}

fn convert_one(
    name: &str,
    text: &str,
    diags: &mut Vec<Diagnostic>,
    notes: &mut Vec<String>,
) -> Option<(&'static str, String)> {
    let flag = format!("--{name}");
    if let Some(key) = keys::by_flag(name) {
        // fio's own engine names under fio's spelling only: `--engine libaio` stays refused.
        let fio_spelling = key.name == "engine" && name.replace('-', "_") == "ioengine";
        let (engine, note) = crate::fio::engine_of(&text.trim().to_ascii_lowercase()).filter(|_| fio_spelling)?;
        if !note.is_empty() {
            notes.push(format!("{flag}={}: {note}", text.trim()));
        }
        return Some((key.name, engine.to_string()));
    }
    let Some(keys::FioMatch::Option(option)) = keys::by_fio_name(name) else { return None };
    let FioMeaning::Converted { key, conversion, expected } = option.meaning else { return None };
    match crate::fio::convert_option(conversion, text) {
        Some((value, more)) => {
            notes.extend(more.into_iter().map(|n| format!("{flag}={}: {n}", text.trim())));
            Some((key, value))
        }
        None => {
            let why = format!("fio's {flag} is converted as the fio importer converts it");
            diags.push(Diagnostic::at_flag(&flag, "", text, expected, why));
            None
        }
    }
}
