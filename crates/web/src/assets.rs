//! The UI's files (crates/web/assets/, embedded at build time), and their bundling into
//! one classic script for the self-contained HTML report.
//!
//! The modules follow two rules so that bundling is a line-by-line rewrite: imports are
//! `import { a, b as c } from './x.js';` on one line, and exports are
//! `export function|async function|const|class NAME`. app.js names the modules in
//! dependency order on a line `// modules: a.js b.js ... app.js`.

include!(concat!(env!("OUT_DIR"), "/assets_table.rs"));

/// An embedded file: (content type, bytes).
pub fn get(name: &str) -> Option<(&'static str, &'static [u8])> {
    ASSETS.iter().find(|(n, _, _)| *n == name).map(|(_, mime, bytes)| (*mime, *bytes))
}

/// What is wrong with the embedded UI files (a build that went wrong).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum AssetError {
    #[error("asset {0} is missing")]
    Missing(String),
    #[error("asset {0} is not UTF-8")]
    NotUtf8(String),
    #[error("{0}")]
    Malformed(&'static str),
    /// A module line the bundler cannot rewrite: `module:line: what is expected`.
    #[error("{0}")]
    Bundle(String),
}

pub fn text(name: &str) -> Result<&'static str, AssetError> {
    let (_, bytes) = get(name).ok_or_else(|| AssetError::Missing(name.to_string()))?;
    std::str::from_utf8(bytes).map_err(|_| AssetError::NotUtf8(name.to_string()))
}

/// The modules of the UI in dependency order, from app.js's `// modules:` line.
pub fn module_order() -> Result<Vec<&'static str>, AssetError> {
    let app = text("app.js")?;
    let line = app
        .lines()
        .find_map(|l| l.trim().strip_prefix("// modules:"))
        .ok_or(AssetError::Malformed("app.js has no `// modules:` line"))?;
    Ok(line.split_whitespace().collect())
}

/// All modules rewritten into one classic script (no imports, no network, file:// safe).
pub fn bundle() -> Result<String, AssetError> {
    let mut out = String::from("\"use strict\";\nconst __ioscope = {};\n");
    for name in module_order()? {
        let (body, exports) = rewrite_module(name, text(name)?)?;
        out.push_str(&format!(
            "__ioscope[{name:?}] = (function () {{\n{body}\nreturn {{ {} }};\n}})();\n",
            exports.join(", ")
        ));
    }
    Ok(out)
}

/// One module's body with imports turned into reads of earlier modules and `export`
/// dropped, and the names it exported.
pub fn rewrite_module(name: &str, source: &str) -> Result<(String, Vec<String>), AssetError> {
    let mut body = String::new();
    let mut exports = Vec::new();
    for (n, line) in source.lines().enumerate() {
        let trimmed = line.trim_start();
        let at = || format!("{name}:{}", n + 1);
        if let Some(rest) = trimmed.strip_prefix("import ") {
            let (names, from) = rest
                .split_once(" from ")
                .ok_or_else(|| AssetError::Bundle(format!("{}: expected `import {{ a, b }} from './x.js';`", at())))?;
            let names = names.trim().strip_prefix('{').and_then(|s| s.strip_suffix('}')).ok_or_else(|| {
                AssetError::Bundle(format!(
                    "{}: only named imports are bundled (`import {{ a, b }} from './x.js';`)",
                    at()
                ))
            })?;
            let from = from.trim().trim_end_matches(';').trim_matches(|c| c == '\'' || c == '"');
            let module = from
                .strip_prefix("./")
                .ok_or_else(|| AssetError::Bundle(format!("{}: only relative imports ('./x.js') are bundled", at())))?;
            let names: Vec<String> = names
                .split(',')
                .map(|s| s.trim())
                .filter(|s| !s.is_empty())
                .map(|s| match s.split_once(" as ") {
                    Some((a, b)) => format!("{}: {}", a.trim(), b.trim()),
                    None => s.to_string(),
                })
                .collect();
            body.push_str(&format!("const {{ {} }} = __ioscope[{module:?}];\n", names.join(", ")));
            continue;
        }
        if let Some(rest) = trimmed.strip_prefix("export ") {
            let decl = rest.trim_start();
            let name_part = ["async function ", "function ", "const ", "class "]
                .iter()
                .find_map(|k| decl.strip_prefix(k))
                .ok_or_else(|| {
                    AssetError::Bundle(format!(
                        "{}: only `export function|async function|const|class` are bundled",
                        at()
                    ))
                })?;
            let ident: String =
                name_part.trim_start().chars().take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '$').collect();
            if ident.is_empty() {
                return Err(AssetError::Bundle(format!("{}: cannot read the exported name", at())));
            }
            exports.push(ident);
            let indent = &line[..line.len() - trimmed.len()];
            body.push_str(indent);
            body.push_str(decl);
            body.push('\n');
            continue;
        }
        body.push_str(line);
        body.push('\n');
    }
    Ok((body, exports))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn imports_and_exports_are_rewritten() {
        let src = "import { a, b as c } from './x.js';\nexport function f(x) { return a(x) + c; }\nexport const K = 3;\nconst hidden = 1;\n";
        let (body, exports) = rewrite_module("y.js", src).unwrap();
        assert!(body.starts_with("const { a, b: c } = __ioscope[\"x.js\"];\n"), "{body}");
        assert!(body.contains("\nfunction f(x)") && body.contains("\nconst K = 3;"), "{body}");
        assert_eq!(exports, ["f", "K"]);
    }

    #[test]
    fn unsupported_forms_name_module_and_line() {
        let err = rewrite_module("z.js", "\nexport default 3;\n").unwrap_err().to_string();
        assert!(err.starts_with("z.js:2:"), "{err}");
        let err = rewrite_module("z.js", "import * as m from './m.js';\n").unwrap_err().to_string();
        assert!(err.starts_with("z.js:1:"), "{err}");
    }

    #[test]
    fn the_embedded_ui_bundles() {
        let order = module_order().unwrap();
        assert_eq!(order.last(), Some(&"app.js"), "app.js is loaded last");
        for name in &order {
            assert!(get(name).is_some(), "{name} is listed in app.js but not embedded");
        }
        let js = bundle().unwrap();
        assert!(!js.contains("\nimport ") && !js.contains("\nexport "), "module syntax left in the bundle");
    }
}
