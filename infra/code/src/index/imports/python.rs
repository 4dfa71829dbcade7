//! Python's imports: `from x import a`, relative to the file's package or absolute from
//! a root; a module imported whole and the names read through it; `from x import *`.

use super::{CHAIN, Imports, REQUIRED, Source, dir_of, join, pattern, words};
use regex::Regex;
use std::sync::LazyLock;

impl Imports {
    /// `from .billing import to_invoice`, `from shop.billing import (a, b)`: each name to
    /// its module (relative to the file's package, or ending with the dotted path). And
    /// a module imported whole (`import shop.billing`, `import shop.billing as b`, `from
    /// . import billing`): the names read through it (`shop.billing.to_invoice`,
    /// `b.to_invoice`) to it.
    pub(super) fn python(&mut self, path: &str, text: &str) {
        static FROM: LazyLock<Regex> = LazyLock::new(|| {
            pattern(
                r"(?m)^[ \t]*from[ \t]+(\.*)([A-Za-z0-9_.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n#]*)",
            )
        });
        static IMPORT: LazyLock<Regex> =
            LazyLock::new(|| pattern(r"(?m)^[ \t]*import[ \t]+([A-Za-z0-9_., \t]+)"));
        // Each module imported whole, by the dotted name the code reads it through.
        let mut modules: Vec<(String, Source)> = Vec::new();
        for found in FROM.captures_iter(text) {
            let (dots, module, names) = (found[1].len(), &found[2], &found[3]);
            let dotted = module.replace('.', "/");
            let star = names.trim() == "*";
            let source = if dots == 0 {
                Source::Absolute(dotted)
            } else {
                let mut package = dir_of(path).to_string();
                for _ in 1..dots {
                    package = dir_of(&package).to_string();
                }
                // `from . import billing` imports a module, not a definition.
                if dotted.is_empty() && !star {
                    for (module, local) in python_aliases(names) {
                        modules.push((local.to_string(), Source::File(join(&package, module))));
                    }
                    continue;
                }
                Source::File(join(&package, &dotted))
            };
            // `from shop.models import *`: any name the module defines, as Java's
            // `import com.acme.billing.*;`.
            if star {
                self.add(REQUIRED, source);
                continue;
            }
            for name in words(names).filter(|w| *w != "as") {
                self.add(name, source.clone());
            }
        }
        for found in IMPORT.captures_iter(text) {
            for (module, local) in python_aliases(&found[1]) {
                modules.push((
                    local.to_string(),
                    Source::Absolute(module.replace('.', "/")),
                ));
            }
        }
        if modules.is_empty() {
            return;
        }
        for chain in CHAIN.find_iter(text).map(|m| m.as_str()) {
            for (local, source) in &modules {
                let name = chain
                    .strip_prefix(local.as_str())
                    .and_then(|rest| rest.strip_prefix('.'))
                    .and_then(|rest| rest.split('.').next());
                if let Some(name) = name {
                    self.add(name, source.clone());
                }
            }
        }
    }
}

/// The modules of a Python import list (`a.b as c, d`), each with the name the code
/// reads it through (`c`, `d`; `a.b` where it has no alias).
fn python_aliases(list: &str) -> impl Iterator<Item = (&str, &str)> {
    list.trim_matches(|c: char| c == '(' || c == ')' || c.is_whitespace())
        .split(',')
        .filter_map(|item| {
            let mut words = item.split_whitespace();
            let module = words.next()?;
            let local = match (words.next(), words.next()) {
                (Some("as"), Some(alias)) => alias,
                _ => module,
            };
            Some((module, local))
        })
}
