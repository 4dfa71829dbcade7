//! A repository's own packages, where their manifests put them: an npm workspace's
//! `@acme/billing` in `packages/billing/` (its `package.json`'s name), a Cargo
//! workspace's `billing` crate in `crates/billing/`, a Go module `example.com/shop` in
//! `services/shop/` (its `go.mod`), a PHP namespace `Acme\Billing\` in `src/` (its
//! `composer.json`'s PSR-4 autoload); and the directories that are Python packages (an
//! `__init__.py`), where a module's absolute name cannot start. An import names the
//! package, never its directory: without these, `import { toInvoice } from
//! '@acme/billing'` or `use Doctrine\DBAL\Schema\Table;` in `src/Schema/Table.php`
//! leads nowhere, and a name defined in many places is read from the wrong one.
//!
//! Read once per index from the manifests' text; one that does not parse is skipped.

use super::imports::join;
use std::collections::{BTreeMap, HashSet};

/// The files read for where a repository's packages are (Python's `__init__.py`s
/// aside, which are its sources): what a snapshot of a repository's sources keeps
/// beside them (the index bench).
pub const MANIFESTS: [&str; 7] = [
    "package.json",
    "Cargo.toml",
    "go.mod",
    "composer.json",
    "tsconfig.json",
    "tsconfig.base.json",
    "jsconfig.json",
];

/// The packages of one repository, each ecosystem's apart (a name means something else
/// in each).
#[derive(Debug, Default)]
pub(super) struct Packages {
    /// npm package name (`@acme/billing`) to its directory.
    npm: Vec<(String, String)>,
    /// Crate name as code names it (`acme_billing`) to its directory.
    crates: Vec<(String, String)>,
    /// Go module path to its directory.
    go: Vec<(String, String)>,
    /// PHP namespace prefix (`Acme\Billing\`, without its last `\`) to a directory.
    php: Vec<(String, String)>,
    /// The directories holding an `__init__.py`: Python packages.
    python: HashSet<String>,
    /// TypeScript's and JavaScript's path aliases (`tsconfig.json`'s `paths`).
    aliases: Vec<Alias>,
}

/// One `paths` entry of a `tsconfig.json` (or `jsconfig.json`): `"@app/*":
/// ["src/app/*"]`, for the files under the directory of the config that says it (a
/// monorepo's base config, at the root, for all of them).
#[derive(Debug)]
struct Alias {
    scope: String,
    /// The pattern before its `*` and after it (`@app/` and nothing); without a `*`,
    /// the whole specifier.
    pattern: (String, Option<String>),
    /// Each target as a path in the repository, `*` where the matched part goes.
    targets: Vec<String>,
}

impl Packages {
    /// The packages whose manifests are among `files` (path to text).
    pub(super) fn read(files: &BTreeMap<String, String>) -> Packages {
        let mut packages = Packages::default();
        for (path, text) in files {
            let (dir, file) = path.rsplit_once('/').unwrap_or(("", path));
            match file {
                "package.json" => packages.package_json(dir, text),
                "Cargo.toml" => packages.cargo_toml(dir, text),
                "go.mod" => packages.go_mod(dir, text),
                "composer.json" => packages.composer_json(dir, text),
                "tsconfig.json" | "tsconfig.base.json" | "jsconfig.json" => {
                    packages.tsconfig(dir, text)
                }
                "__init__.py" => {
                    packages.python.insert(dir.to_string());
                }
                _ => {}
            }
        }
        packages
    }

    /// The packages of a repository holding `manifests` (path, text).
    #[cfg(test)]
    pub(super) fn of(manifests: &[(&str, &str)]) -> Packages {
        let files = manifests
            .iter()
            .map(|(path, text)| (path.to_string(), text.to_string()))
            .collect();
        Packages::read(&files)
    }

    /// The directories of the npm packages `spec` names (`@acme/billing/invoice`),
    /// each with the path inside it (`invoice`).
    pub(super) fn npm<'a>(&'a self, spec: &'a str) -> impl Iterator<Item = (&'a str, &'a str)> {
        within(&self.npm, spec, "/")
    }

    /// The directories of the crate a use path starts with (`billing/invoice`, its
    /// segments joined with `/`), each with the module path inside it.
    pub(super) fn crates<'a>(&'a self, path: &'a str) -> impl Iterator<Item = (&'a str, &'a str)> {
        within(&self.crates, path, "/")
    }

    /// The directory of the crate `path` is in: the deepest crate whose directory holds
    /// it. `None` where no `Cargo.toml` of the snapshot is above it.
    pub(super) fn crate_of(&self, path: &str) -> Option<&str> {
        self.crates
            .iter()
            .map(|(_, dir)| dir.as_str())
            .filter(|dir| {
                dir.is_empty() || path.strip_prefix(dir).is_some_and(|r| r.starts_with('/'))
            })
            .max_by_key(|dir| dir.len())
    }

    /// The directories of the Go package `import_path` names, where its module is in
    /// this repository.
    pub(super) fn go<'a>(&'a self, import_path: &'a str) -> impl Iterator<Item = String> + 'a {
        within(&self.go, import_path, "/").map(|(dir, rest)| join(dir, rest))
    }

    /// The files a PHP class (`Acme\Billing\Invoice`) autoloads from by the PSR-4
    /// prefixes, each without its extension.
    pub(super) fn php<'a>(&'a self, class: &'a str) -> impl Iterator<Item = String> + 'a {
        within(&self.php, class, "\\").map(|(dir, rest)| join(dir, &rest.replace('\\', "/")))
    }

    /// Whether `dir` is a Python package (holds an `__init__.py`); the root is not.
    pub(super) fn is_python_package(&self, dir: &str) -> bool {
        !dir.is_empty() && self.python.contains(dir)
    }

    /// The paths a path alias resolves `spec` to, imported from `importer`, each as
    /// its config writes it (an extension or none: the caller reads it as a module).
    pub(super) fn aliased<'a>(
        &'a self,
        importer: &'a str,
        spec: &'a str,
    ) -> impl Iterator<Item = String> + 'a {
        self.aliases
            .iter()
            .filter(move |alias| {
                alias.scope.is_empty() || importer.starts_with(&format!("{}/", alias.scope))
            })
            .filter_map(move |alias| {
                let matched = match &alias.pattern {
                    (exact, None) => (spec == exact).then_some(""),
                    (head, Some(tail)) => spec
                        .strip_prefix(head.as_str())?
                        .strip_suffix(tail.as_str()),
                }?;
                Some(
                    alias
                        .targets
                        .iter()
                        .map(move |target| target.replacen('*', matched, 1)),
                )
            })
            .flatten()
    }

    /// `compilerOptions.paths`, resolved against `baseUrl` (or, without one, the
    /// config's directory, as TypeScript does since 4.1). The config is JSON with
    /// comments and trailing commas. An `extends`'s paths are not merged: the config
    /// extended is read on its own, for the files under its directory.
    fn tsconfig(&mut self, dir: &str, text: &str) {
        let mut text = text.to_string();
        if json_strip_comments::strip(&mut text).is_err() {
            return;
        }
        let Ok(json) = serde_json::from_str::<serde_json::Value>(&text) else {
            return;
        };
        let options = &json["compilerOptions"];
        let Some(paths) = options["paths"].as_object() else {
            return;
        };
        let base = match options["baseUrl"].as_str() {
            Some(base) => join(dir, base),
            None => dir.to_string(),
        };
        for (pattern, targets) in paths {
            let pattern = match pattern.split_once('*') {
                Some((head, tail)) => (head.to_string(), Some(tail.to_string())),
                None => (pattern.clone(), None),
            };
            let targets = targets
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|t| t.as_str())
                .map(|target| join(&base, target))
                .collect();
            self.aliases.push(Alias {
                scope: dir.to_string(),
                pattern,
                targets,
            });
        }
    }

    fn package_json(&mut self, dir: &str, text: &str) {
        let name = serde_json::from_str::<serde_json::Value>(text)
            .ok()
            .and_then(|json| json.get("name")?.as_str().map(str::to_string));
        if let Some(name) = name.filter(|n| !n.is_empty()) {
            self.npm.push((name, dir.to_string()));
        }
    }

    fn cargo_toml(&mut self, dir: &str, text: &str) {
        if let Some(name) = toml_value(text, "package", "name") {
            self.crates.push((name.replace('-', "_"), dir.to_string()));
        }
    }

    fn go_mod(&mut self, dir: &str, text: &str) {
        let module = text
            .lines()
            .find_map(|line| line.trim().strip_prefix("module "))
            .map(|m| m.trim().trim_matches('"'));
        if let Some(module) = module.filter(|m| !m.is_empty()) {
            self.go.push((module.to_string(), dir.to_string()));
        }
    }

    fn composer_json(&mut self, dir: &str, text: &str) {
        let Ok(json) = serde_json::from_str::<serde_json::Value>(text) else {
            return;
        };
        for section in ["autoload", "autoload-dev"] {
            let Some(map) = json
                .get(section)
                .and_then(|a| a.get("psr-4"))
                .and_then(|m| m.as_object())
            else {
                continue;
            };
            for (prefix, dirs) in map {
                let prefix = prefix.trim_matches('\\');
                let dirs: Vec<&str> = match dirs {
                    serde_json::Value::String(one) => vec![one.as_str()],
                    serde_json::Value::Array(many) => {
                        many.iter().filter_map(|d| d.as_str()).collect()
                    }
                    _ => Vec::new(),
                };
                for sub in dirs {
                    self.php.push((prefix.to_string(), join(dir, sub)));
                }
            }
        }
    }
}

/// The packages of `list` that `spec` names or starts with (followed by `separator`),
/// each with what follows it.
fn within<'a>(
    list: &'a [(String, String)],
    spec: &'a str,
    separator: &'a str,
) -> impl Iterator<Item = (&'a str, &'a str)> {
    list.iter().filter_map(move |(name, dir)| {
        let rest = spec.strip_prefix(name.as_str())?;
        let rest = if rest.is_empty() || name.is_empty() {
            rest
        } else {
            rest.strip_prefix(separator)?
        };
        Some((dir.as_str(), rest))
    })
}

/// `key = "value"` in the `[table]` of a TOML file: the one value a manifest is read
/// for here, so a line reader, not a TOML parser the workers would carry.
fn toml_value(text: &str, table: &str, key: &str) -> Option<String> {
    let mut in_table = false;
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_table = line.trim_start_matches('[').trim_end_matches(']').trim() == table;
            continue;
        }
        if !in_table {
            continue;
        }
        let Some((k, value)) = line.split_once('=') else {
            continue;
        };
        if k.trim() == key {
            let value = value.trim();
            let quote = value.chars().next().filter(|c| matches!(c, '"' | '\''))?;
            return value[1..].split(quote).next().map(str::to_string);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_manifest_names_its_package_where_it_is() {
        let read = Packages::of(&[
            ("package.json", r#"{"name": "shop", "private": true}"#),
            (
                "packages/billing/package.json",
                r#"{"name": "@acme/billing"}"#,
            ),
            (
                "packages/billing-core/package.json",
                r#"{"name": "@acme/billing-core"}"#,
            ),
            (
                "crates/acme-store/Cargo.toml",
                "[package]\nname = \"acme-store\" # the store\nversion = \"0.1.0\"\n\n[dependencies]\nname = \"not-this\"\n",
            ),
            ("crates/mail/Cargo.toml", "[package]\nname = 'acme-mail'\n"),
            ("Cargo.toml", "[workspace]\nmembers = [\"crates/*\"]\n"),
            (
                "services/shop/go.mod",
                "module example.com/shop\n\ngo 1.22\n",
            ),
            (
                "composer.json",
                r#"{"autoload": {"psr-4": {"Acme\\Billing\\": "src/", "Acme\\Tools\\": ["tools/", "lib/tools"]}}, "autoload-dev": {"psr-4": {"Acme\\Tests\\": "tests/"}}}"#,
            ),
        ]);
        let npm: Vec<_> = read.npm("@acme/billing/invoice").collect();
        assert_eq!(npm, [("packages/billing", "invoice")]);
        assert_eq!(
            read.npm("@acme/billing").collect::<Vec<_>>(),
            [("packages/billing", "")]
        );
        assert_eq!(read.npm("lodash").count(), 0);
        assert_eq!(read.npm("shop/x").collect::<Vec<_>>(), [("", "x")]);
        let crates: Vec<_> = read.crates("acme_store/cache").collect();
        assert_eq!(crates, [("crates/acme-store", "cache")]);
        assert_eq!(read.crates("not_this").count(), 0);
        assert_eq!(
            read.crates("acme_mail").collect::<Vec<_>>(),
            [("crates/mail", "")]
        );
        // The root's manifest is a workspace's, no crate: a file outside the members is
        // in none.
        assert_eq!(
            read.crate_of("crates/mail/src/send.rs"),
            Some("crates/mail")
        );
        assert_eq!(read.crate_of("crates/mailer/src/lib.rs"), None);
        assert_eq!(read.crate_of("tools/x.rs"), None);
        let go: Vec<_> = read.go("example.com/shop/internal/store").collect();
        assert_eq!(go, ["services/shop/internal/store"]);
        assert_eq!(read.go("example.com/shopping").count(), 0);
        let php: Vec<_> = read.php("Acme\\Billing\\Schema\\Table").collect();
        assert_eq!(php, ["src/Schema/Table"]);
        let php: Vec<_> = read.php("Acme\\Tools\\Fmt").collect();
        assert_eq!(php, ["tools/Fmt", "lib/tools/Fmt"]);
        assert_eq!(read.php("Acme\\Tests\\T").collect::<Vec<_>>(), ["tests/T"]);
    }

    #[test]
    fn path_aliases_resolve_for_the_files_under_their_config() {
        let base = "{\n  // Nx's base config\n  \"compilerOptions\": {\n    \"baseUrl\": \".\",\n    \"paths\": {\n      \"@acme/rules\": [\"libs/rules/src/index.ts\"],\n      \"@shared/*\": [\"libs/common/src/*\", \"libs/legacy/*\"], /* two */\n    },\n  },\n}\n";
        let app = r#"{"extends": "../../tsconfig.base.json", "compilerOptions": {"paths": {"~/*": ["./src/*"]}}}"#;
        let read = Packages::of(&[
            ("tsconfig.base.json", base),
            ("apps/web/tsconfig.json", app),
            (
                "apps/admin/jsconfig.json",
                "{\"compilerOptions\": {\"baseUrl\": \"src\", \"paths\": {\"#lib/*\": [\"lib/*\"]}}}",
            ),
        ]);
        let aliased = |importer: &str, spec: &str| read.aliased(importer, spec).collect::<Vec<_>>();
        assert_eq!(
            aliased("apps/web/src/a.ts", "@acme/rules"),
            ["libs/rules/src/index.ts"]
        );
        assert_eq!(
            aliased("apps/web/src/a.ts", "@acme/rules/x"),
            Vec::<String>::new()
        );
        assert_eq!(
            aliased("apps/admin/src/a.ts", "@shared/money/format"),
            ["libs/common/src/money/format", "libs/legacy/money/format"]
        );
        assert_eq!(
            aliased("apps/web/src/pages/a.ts", "~/store"),
            ["apps/web/src/store"]
        );
        assert_eq!(
            aliased("apps/admin/src/a.ts", "~/store"),
            Vec::<String>::new()
        );
        assert_eq!(
            aliased("apps/admin/src/a.js", "#lib/db"),
            ["apps/admin/src/lib/db"]
        );
        assert_eq!(aliased("apps/web/src/a.ts", "react"), Vec::<String>::new());
    }

    #[test]
    fn a_manifest_that_does_not_parse_names_nothing() {
        let read = Packages::of(&[
            ("a/package.json", "{\"name\": "),
            ("b/package.json", "[1, 2]"),
            ("c/package.json", "{\"name\": 7}"),
            ("d/composer.json", "{\"autoload\": {\"psr-4\": [\"src/\"]}}"),
            ("e/composer.json", "not json"),
            ("f/Cargo.toml", "[package]\nname = unquoted\n"),
            ("g/go.mod", "go 1.22\n"),
            (
                "h/tsconfig.json",
                "{\"compilerOptions\": {\"paths\": {\"@h/*\": \"not a list\"}}}",
            ),
            ("i/tsconfig.json", "{\"compilerOptions\": /* unclosed"),
        ]);
        assert_eq!(read.aliased("h/a.ts", "@h/x").count(), 0);
        assert_eq!(read.aliased("i/a.ts", "@i/x").count(), 0);
        assert_eq!(read.npm("a").count() + read.npm("7").count(), 0);
        assert_eq!(read.crates("unquoted").count(), 0);
        assert_eq!(read.php("Anything\\X").count(), 0);
        assert_eq!(read.go("go").count(), 0);
    }
}
