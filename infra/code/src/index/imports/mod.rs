//! Where a file says a name comes from: `import { toInvoice } from '../billing/invoice'`,
//! `from shop.billing import to_invoice`, `use crate::store::load_user;`, Go's
//! `store.Load(…)` under `import "…/internal/store"`. A name defined in many places
//! (`parse`, `validate`, `handler`) is then looked up first in the file it is imported
//! from, not in whichever homonym happens to sit nearest: the definition a reviewer
//! needs is the one the code calls.
//!
//! Read from the importing file's text with a few patterns, not parsed: an import a
//! pattern misses (one built at run time, a path alias a bundler resolves) leaves the
//! name to the nearness order. The imports of Python, JavaScript and TypeScript (and
//! components' scripts), Rust, Go, Java, PHP and Ruby, C's and C++'s `#include`s, and
//! C#'s `using`s (a namespace, found where the directories spell it) are read.

mod items;
mod python;
mod ruby;
mod typed;
mod use_tree;

use super::languages::Lang;
use super::packages::Packages;
use regex::Regex;
use std::collections::HashMap;
use std::sync::LazyLock;
use use_tree::{flatten_use, squeeze};

/// Where one file's imported names come from: each name to the modules that may hold
/// it.
#[derive(Debug, Default)]
pub(super) struct Imports {
    from: HashMap<String, Vec<Source>>,
    /// Methods to where the type of the variable they are called on comes from (see
    /// `typed`): they tie that file to the method alone, not to every name.
    methods: HashMap<String, Vec<Source>>,
    /// Java's rule for a type's simple name: a class of the file's own package comes
    /// before one a wildcard import (`import com.acme.billing.*;`) brings, after one
    /// imported by name.
    package_first: bool,
    /// C#'s own namespace and its parents (`Acme.Web.Controllers`, `Acme.Web`): searched
    /// for a simple name before the namespaces the file's `using`s bring, as C# resolves
    /// it (see `Imports::tie`).
    own: Vec<Source>,
}

/// A module a name is imported from, as a path without its extension.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Source {
    /// This file, resolved against the importing one (`./invoice`, `from .billing`).
    File(String),
    /// A file whose path ends with this (`shop/billing`, `store`): a package or crate
    /// root the import does not name.
    Suffix(String),
    /// A Python module by its absolute name (`shop.billing` as `shop/billing`): a
    /// file whose path ends with it where what comes before is a root Python imports
    /// from (`src/`, the repository's), not a package (a directory holding an
    /// `__init__.py`): `import json` is the standard library's, not `app/utils/json.py`,
    /// which is `app.utils.json`.
    Absolute(String),
    /// A file directly in a directory this import path ends with (a Go package).
    Dir(String),
    /// A file in a namespace or package imported whole (C#'s `using Acme.Billing;`,
    /// Java's `import com.acme.billing.*;`), by its segments: a file whose directory
    /// ends with them (`src/Acme.Billing/`, `java/com/acme/billing/`).
    Namespace(Vec<String>),
    /// A file Rails' autoloader finds a top-level constant in (`invoice_item` for
    /// `InvoiceItem`): directly under an autoload root (see `ruby`).
    Autoload(String),
    /// A file Ruby's `require 'shop/mailer'` loads: under a directory on the load path
    /// (see `ruby`), not any file whose path ends so (`require 'csv'` is the standard
    /// library's, not `lib/redmine/export/csv.rb`).
    LoadPath(String),
    /// A file of a package of this repository (see [`Packages`]): under its directory,
    /// in the module a path inside it names (`invoice` in `@acme/billing/invoice`,
    /// `src/invoice.ts` or `src/invoice/total.ts`), or anywhere in it where the import
    /// names the package alone (its entry point re-exports what it holds).
    Within { dir: String, rest: String },
}

impl Imports {
    /// The imports of `text`, the file at `path` in `lang`, in a repository holding
    /// `packages`.
    pub(super) fn read(path: &str, text: &str, lang: Lang, packages: &Packages) -> Imports {
        let mut imports = Imports::default();
        match lang {
            Lang::JavaScript | Lang::TypeScript | Lang::Tsx | Lang::Component => {
                imports.javascript(path, text, packages);
                imports.qualified(text, ".");
            }
            Lang::Python => {
                imports.python(path, text);
                imports.qualified(text, ".");
            }
            Lang::Rust => {
                imports.rust(path, text, packages);
                imports.qualified(text, "::");
            }
            Lang::Go => imports.go(text, packages),
            Lang::Java => {
                imports.java(text);
                imports.qualified(text, ".");
            }
            Lang::Php => {
                imports.php(text, packages);
                imports.qualified(text, "::");
            }
            Lang::CSharp => imports.csharp(text),
            Lang::Ruby => imports.ruby(path, text),
            Lang::C | Lang::Cpp => imports.c(path, text),
        }
        imports.typed(text, lang);
        imports
    }

    /// How an import ties this file to `candidate` (a file's path): 1 where it imports
    /// `name` from it, 2 where it imports something else from it (a method's class:
    /// `order.total()` after `from shop.order import Order`), `None` where nothing. In
    /// C#, 2 is the file's own namespace and its parents, and a namespace only a `using`
    /// brings is 3, as the directory is: the compiler looks in the namespaces the file
    /// is in before those it uses.
    pub(super) fn tie(&self, name: &str, candidate: &str, packages: &Packages) -> Option<u8> {
        let module = Module::of(candidate, packages);
        if self.holds_in(name, &module) {
            Some(1)
        } else if self.own.iter().any(|source| source.is(&module)) {
            Some(2)
        } else if self
            .from
            .values()
            .flatten()
            .any(|source| source.is(&module))
        {
            Some(if self.own.is_empty() { 2 } else { 3 })
        } else {
            None
        }
    }

    /// [`Imports::tie`] for `name` as its line spells it: used bare in Go (`bare`:
    /// `New()`), it is its own package's (the directory of `path`, which the file is in)
    /// or a package's the file dot-imports (`import . "x"`), never another import's. In
    /// Java a type not imported by name is its own package's before a wildcard import's.
    pub(super) fn tie_as(
        &self,
        name: &str,
        bare: bool,
        path: &str,
        candidate: &str,
        packages: &Packages,
    ) -> Option<u8> {
        let own_package = dir_of(candidate) == dir_of(path);
        if self.package_first
            && own_package
            && name.starts_with(|c: char| c.is_ascii_uppercase())
            && !self.names(name)
        {
            return Some(1);
        }
        if !bare {
            return self.tie(name, candidate, packages);
        }
        if own_package {
            return Some(1);
        }
        let module = Module::of(candidate, packages);
        let mut dotted = self.from.get(REQUIRED).into_iter().flatten();
        dotted.any(|source| source.is(&module)).then_some(2)
    }

    /// Whether the file imports `name` by name (from anywhere).
    pub(super) fn names(&self, name: &str) -> bool {
        name != REQUIRED && self.from.contains_key(name)
    }

    /// Whether `name` is imported from `module`, or from a package above it: a
    /// package's entry (`billing/index.ts`, `billing/__init__.py`, `store/mod.rs`)
    /// re-exports what its files define (`export { toInvoice } from './convert'`),
    /// so the name imported from `billing` is defined in `billing/convert.ts`. Only
    /// for the name imported: everything a package holds is not tied to every name.
    fn holds_in(&self, name: &str, module: &Module) -> bool {
        let held = |sources: &Vec<Source>| {
            sources
                .iter()
                .any(|source| source.is(module) || source.is_above(module))
        };
        self.from.get(name).is_some_and(held) || self.methods.get(name).is_some_and(held)
    }

    /// Whether `candidate` is a module `name` is imported from.
    #[cfg(test)]
    fn holds(&self, name: &str, candidate: &str) -> bool {
        self.holds_in(name, &Module::of(candidate, &Packages::default()))
    }

    /// Whether anything is imported from `candidate`.
    #[cfg(test)]
    fn any_from(&self, candidate: &str) -> bool {
        let packages = Packages::default();
        let module = Module::of(candidate, &packages);
        let mut all = self.from.values().flatten().chain(&self.own);
        all.any(|source| source.is(&module))
    }

    fn add(&mut self, name: &str, source: Source) {
        let sources = self.from.entry(name.to_string()).or_default();
        if !sources.contains(&source) {
            sources.push(source);
        }
    }

    /// `import { a, b as c } from './x'`, `import d from '../y'`, `const { e } =
    /// require('./z')`: each local name to its module.
    fn javascript(&mut self, path: &str, text: &str, packages: &Packages) {
        static IMPORT: LazyLock<Regex> = LazyLock::new(|| {
            pattern(
                r#"(?-u:\b)import\s+(?:type\s+)?([A-Za-z0-9_$\s{},*]+?)\s+from\s+['"]([^'"\n]+)['"]"#,
            )
        });
        static REQUIRE: LazyLock<Regex> = LazyLock::new(|| {
            pattern(
                r#"(?-u:\b)(?:const|let|var)\s+(\{[^}]*\}|[A-Za-z0-9_$]+)\s*=\s*require\(\s*['"]([^'"\n]+)['"]\s*\)"#,
            )
        });
        for found in IMPORT
            .captures_iter(text)
            .chain(REQUIRE.captures_iter(text))
        {
            let (names, spec) = (&found[1], &found[2]);
            let mut sources: Vec<Source> = packages.npm(spec).map(within).collect();
            // A path alias (`@app/billing` as `tsconfig.json`'s `paths` say).
            sources.extend(
                packages
                    .aliased(path, spec)
                    .map(|target| Source::File(module_of(&target).to_string())),
            );
            // As a file's path is read (`./Chart.vue`, `./invoice.service`).
            sources.push(match spec.strip_prefix('.') {
                Some(_) => Source::File(module_of(&join(dir_of(path), spec)).to_string()),
                // A path alias (`@/lib/x`, `~/lib/x`): the part after it, wherever it is.
                None => Source::Suffix(
                    module_of(
                        spec.trim_start_matches(['@', '~', '#'])
                            .trim_start_matches('/'),
                    )
                    .to_string(),
                ),
            });
            for name in words(names).filter(|w| !matches!(*w, "as" | "type" | "default")) {
                for source in &sources {
                    self.add(name, source.clone());
                }
            }
        }
    }

    /// `use crate::store::{load_user, save as persist};`, `use super::billing::to_invoice;`:
    /// each name to the module path before it (its last segments: where the crate's root
    /// is is not known, and `super` is read as the segments after it). A name used from
    /// the crate's root (`use crate::Error;`) is defined anywhere in the crate, which
    /// its root re-exports (`pub use error::Error;`): where the snapshot's `Cargo.toml`s
    /// say which crate `path` is in, every file of it. The standard library's names
    /// come from nowhere in the repository.
    fn rust(&mut self, path: &str, text: &str, packages: &Packages) {
        let own_crate = packages.crate_of(path);
        static USE: LazyLock<Regex> = LazyLock::new(|| {
            pattern(r"(?m)^[ \t]*(?:pub(?:\([A-Za-z0-9_\s:]+\))?[ \t]+)?use[ \t]+([^;]+);")
        });
        for found in USE.captures_iter(text) {
            let tree = squeeze(&found[1]);
            let mut leaves = Vec::new();
            flatten_use(&tree, &mut Vec::new(), &mut leaves);
            for (module, name) in leaves {
                // The standard library is no module of the repository's (`use
                // std::sync::Arc;` is not `src/sync/std.rs`).
                if ["std", "core", "alloc"].contains(module.first().unwrap_or(&name)) {
                    continue;
                }
                if let (["crate"], Some(dir)) = (module.as_slice(), own_crate) {
                    self.add(name, within((dir, "")));
                }
                // `use billing::invoice::to_invoice;`: a crate of this workspace.
                let path = match module.is_empty() {
                    true => name.to_string(),
                    false => module.join("/"),
                };
                for found in packages.crates(&path) {
                    self.add(name, within(found));
                }
                let module: Vec<&str> = module
                    .into_iter()
                    .filter(|s| !matches!(*s, "crate" | "self" | "super"))
                    .collect();
                // `use crate::store;` names a module, whose items are reached through it.
                let module = if module.is_empty() {
                    name.to_string()
                } else {
                    module.join("/")
                };
                self.add(name, Source::Suffix(module));
            }
        }
    }

    /// `store.Load(…)` in a file that imports `"example.com/app/internal/store"` (or
    /// names it, `db "…/store"`): `Load` to the package's directory. A path whose first
    /// element has no dot is the standard library's (`"errors"`, `"net/http"`), as Go
    /// reserves them, unless a module of this repository is named so (`module myapp`):
    /// `errors.New` is not `errors/errors.go`'s.
    fn go(&mut self, text: &str, packages: &Packages) {
        static SPEC: LazyLock<Regex> = LazyLock::new(|| {
            pattern(
                r#"(?m)^[ \t]*(?:import[ \t]+)?(?:([A-Za-z0-9_.]+)[ \t]+)?"([A-Za-z0-9_./-]+)"[ \t]*$"#,
            )
        });
        static QUALIFIED: LazyLock<Regex> =
            LazyLock::new(|| pattern(r"(?-u:\b)([A-Za-z0-9_]+)\.([A-Za-z0-9_]+)"));
        let mut imported: HashMap<&str, &str> = HashMap::new();
        for found in SPEC.captures_iter(text) {
            let path = found.get(2).map_or("", |m| m.as_str());
            let first = path.split('/').next().unwrap_or(path);
            if !first.contains('.') && packages.go(path).next().is_none() {
                continue;
            }
            let name = match found.get(1) {
                Some(alias) => alias.as_str(),
                None => path.rsplit('/').next().unwrap_or(path),
            };
            // `import . "x"`: any bare name may be x's.
            if name == "." {
                self.add(REQUIRED, Source::Dir(path.to_string()));
                for dir in packages.go(path) {
                    self.add(REQUIRED, Source::Dir(dir));
                }
            } else if name != "_" {
                imported.insert(name, path);
            }
        }
        if imported.is_empty() {
            return;
        }
        for found in QUALIFIED.captures_iter(text) {
            if let Some(path) = imported.get(&found[1]) {
                self.add(&found[2], Source::Dir(path.to_string()));
                // Where a module of this repository holds it (`go.mod` not at the root).
                for dir in packages.go(path) {
                    self.add(&found[2], Source::Dir(dir));
                }
            }
        }
    }
    /// `import com.acme.billing.Invoice;` (the class's file), `import static
    /// com.acme.Checks.validate;` (a member of the class's file).
    fn java(&mut self, text: &str) {
        self.package_first = true;
        static IMPORT: LazyLock<Regex> = LazyLock::new(|| {
            pattern(r"(?m)^[ \t]*import[ \t]+(static[ \t]+)?([A-Za-z0-9_$.]+)(\.\*)?[ \t]*;")
        });
        for found in IMPORT.captures_iter(text) {
            let path = &found[2];
            // `import com.acme.billing.*;`: every class of the package.
            if found.get(3).is_some() && found.get(1).is_none() {
                self.add(REQUIRED, namespace(path));
                continue;
            }
            let Some((class_path, last)) = path.rsplit_once('.') else {
                continue;
            };
            let file = if found.get(1).is_some() {
                class_path
            } else {
                path
            };
            self.add(last, Source::Suffix(file.replace('.', "/")));
        }
    }

    /// `using Acme.Billing;`, `global using Acme.Billing;`, `using static
    /// Acme.Rules.Checks;`, `using Bill = Acme.Billing.Invoice;`: every type of the
    /// namespace (a `using` names no type), as the file's own `namespace` makes every
    /// type of its own. The directories a namespace's files sit in are the namespace's
    /// tail by convention, not by rule: a namespace laid out otherwise ranks nothing.
    fn csharp(&mut self, text: &str) {
        static USING: LazyLock<Regex> = LazyLock::new(|| {
            pattern(
                r"(?m)^[ \t]*(?:global[ \t]+)?(?:using[ \t]+(static[ \t]+)?(?:[A-Za-z0-9_]+[ \t]*=[ \t]*)?|namespace[ \t]+)([A-Za-z0-9_.]+)[ \t]*[;{\r\n]",
            )
        });
        for found in USING.captures_iter(text) {
            let path = &found[2];
            // A static import's (and an alias's) last segment is a type: its namespace
            // holds it.
            let whole = found.get(1).is_none() && !found[0].contains('=');
            let namespace_path = match path.rsplit_once('.') {
                Some((parent, _)) if !whole => parent,
                _ => path,
            };
            // The file's own namespace's parents are in scope too (`Acme.Billing` in
            // `Acme.Billing.Invoices`); a root alone (`Acme`) would be every directory.
            if found[0].trim_start().starts_with("namespace") {
                self.own.push(namespace(namespace_path));
                let mut parent = path;
                while let Some((up, _)) = parent.rsplit_once('.') {
                    if up.contains('.') {
                        self.own.push(namespace(up));
                    }
                    parent = up;
                }
            } else {
                self.add(REQUIRED, namespace(namespace_path));
            }
        }
    }

    /// `#include "billing/invoice.h"`: the header, and the source file of the same name
    /// beside it (`invoice.c`, `invoice.cc`), where the bodies are. A system header
    /// (`<stdio.h>`) is not the repository's.
    fn c(&mut self, path: &str, text: &str) {
        static INCLUDE: LazyLock<Regex> =
            LazyLock::new(|| pattern(r#"(?m)^[ \t]*#[ \t]*include[ \t]*"([^"\n]+)""#));
        for found in INCLUDE.captures_iter(text) {
            let header = module_of(&found[1]);
            // Beside the including file, or on the include path.
            self.add(
                REQUIRED,
                Source::File(module_of(&join(dir_of(path), header)).to_string()),
            );
            self.add(REQUIRED, Source::Suffix(header.to_string()));
        }
    }

    /// `use App\Models\User;`, `use App\Models\{User, Order as Purchase};`, `use function
    /// App\Support\money;`: each name to its class's file, by the namespace after its
    /// root and the class.
    fn php(&mut self, text: &str, packages: &Packages) {
        static USE: LazyLock<Regex> = LazyLock::new(|| {
            pattern(
                r"(?m)^[ \t]*use[ \t]+(?:function[ \t]+|const[ \t]+)?([A-Za-z0-9_\\]+)(?:\\\{([^}]*)\})?(?:[ \t]+as[ \t]+([A-Za-z0-9_]+))?[ \t]*;",
            )
        });
        for found in USE.captures_iter(text) {
            let namespace = found[1].trim_matches('\\');
            let items: Vec<(String, Option<String>)> = match found.get(2) {
                Some(group) => group
                    .as_str()
                    .split(',')
                    .filter_map(|item| {
                        let mut words = item.split_whitespace();
                        let class = words.next()?.trim_matches('\\');
                        let alias = (words.next() == Some("as")).then(|| words.next()).flatten();
                        Some((format!("{namespace}\\{class}"), alias.map(str::to_string)))
                    })
                    .collect(),
                None => vec![(
                    namespace.to_string(),
                    found.get(3).map(|a| a.as_str().to_string()),
                )],
            };
            for (path, alias) in items {
                let segments: Vec<&str> = path.split('\\').filter(|s| !s.is_empty()).collect();
                let Some(&class) = segments.last() else {
                    continue;
                };
                // The namespace's root is the autoloader's (`App\` in `app/`, `Acme\` in
                // `src/`): the rest is the file's path.
                let tail = &segments[usize::from(segments.len() > 1)..];
                let name = alias.as_deref().unwrap_or(class);
                self.add(name, Source::Suffix(tail.join("/")));
                // Where `composer.json` autoloads the namespace from (`src/`).
                for file in packages.php(&path) {
                    self.add(name, Source::File(file));
                }
            }
        }
    }

    /// A name reached through one imported (`billing.toInvoice` after `import * as
    /// billing`, `mail.send` after `from shop import mail`, `store::load` after `use
    /// crate::store;`): from where that one comes, or from the module it names.
    fn qualified(&mut self, text: &str, separator: &str) {
        static DOT: LazyLock<Regex> =
            LazyLock::new(|| pattern(r"(?-u:\b)([A-Za-z0-9_$]+)\.([A-Za-z0-9_$]+)"));
        static PATH: LazyLock<Regex> =
            LazyLock::new(|| pattern(r"(?-u:\b)([A-Za-z0-9_]+)::([A-Za-z0-9_]+)"));
        let found = if separator == "::" { &PATH } else { &DOT };
        let mut added = Vec::new();
        for pair in found.captures_iter(text) {
            let (qualifier, name) = (&pair[1], &pair[2]);
            let Some(sources) = self.from.get(qualifier) else {
                continue;
            };
            for source in sources {
                added.push((name.to_string(), source.clone()));
                match source {
                    Source::File(module) | Source::Suffix(module) => {
                        let sub = format!("{module}/{qualifier}");
                        added.push((name.to_string(), Source::Suffix(sub)));
                    }
                    Source::Absolute(module) => {
                        let sub = format!("{module}/{qualifier}");
                        added.push((name.to_string(), Source::Absolute(sub)));
                    }
                    _ => {}
                }
            }
        }
        for (name, source) in added {
            self.add(&name, source);
        }
    }
}

/// A file's path as its imports name it, read once for every source it is held against.
struct Module<'a> {
    /// Without its extension (see [`module_of`]).
    stem: &'a str,
    dir: &'a str,
    /// The repository's packages, whose Python packages say where a module's absolute
    /// name starts.
    packages: &'a Packages,
}

impl<'a> Module<'a> {
    fn of(path: &'a str, packages: &'a Packages) -> Self {
        Module {
            stem: module_of(path),
            dir: dir_of(path),
            packages,
        }
    }
}

impl Source {
    /// Whether `module` is this one.
    fn is(&self, module: &Module) -> bool {
        match self {
            Source::File(file) => module.stem == file,
            Source::Suffix(suffix) => ends_with_segments(module.stem, suffix),
            Source::Absolute(name) => from_root(module.stem, name, module.packages),
            // The module's root is not known: the directory is the import path's tail.
            Source::Dir(package) => ends_with_segments(package, module.dir),
            Source::Namespace(segments) => in_namespace(module.dir, segments),
            Source::Autoload(name) => ruby::autoloaded(module.stem, name),
            Source::LoadPath(spec) => ruby::on_load_path(module.stem, spec),
            Source::Within { dir, rest } => {
                let inside = if dir.is_empty() {
                    Some(module.stem)
                } else {
                    module
                        .stem
                        .strip_prefix(dir.as_str())
                        .and_then(|s| s.strip_prefix('/'))
                };
                inside.is_some_and(|inside| {
                    rest.is_empty()
                        || ends_with_segments(inside, rest)
                        || inside.starts_with(&format!("{rest}/"))
                        || inside.contains(&format!("/{rest}/"))
                })
            }
        }
    }

    /// Whether this is a package `module` is in (at any depth).
    fn is_above(&self, module: &Module) -> bool {
        let mut above = std::iter::successors(Some(module.dir), |dir| {
            (!dir.is_empty()).then(|| dir_of(dir))
        })
        .filter(|dir| !dir.is_empty());
        match self {
            Source::File(file) => above.any(|dir| dir == file),
            Source::Suffix(suffix) => above.any(|dir| ends_with_segments(dir, suffix)),
            Source::Absolute(name) => above.any(|dir| from_root(dir, name, module.packages)),
            Source::LoadPath(spec) => above.any(|dir| ruby::on_load_path(dir, spec)),
            Source::Dir(_) | Source::Namespace(_) | Source::Within { .. } | Source::Autoload(_) => {
                false
            }
        }
    }
}

/// Whether `path` is the Python module `name` (`shop/billing`) by its absolute name:
/// it ends with it, and what comes before is no package (see [`Source::Absolute`]).
fn from_root(path: &str, name: &str, packages: &Packages) -> bool {
    ends_with_segments(path, name) && {
        let root = &path[..path.len() - name.len()];
        !packages.is_python_package(root.trim_end_matches('/'))
    }
}

/// A package's directory and the module path inside it as a source.
fn within((dir, rest): (&str, &str)) -> Source {
    Source::Within {
        dir: dir.to_string(),
        rest: module_of(rest).to_string(),
    }
}

/// `Acme.Billing` (or `com.acme.billing`) as the segments of a namespace.
fn namespace(dotted: &str) -> Source {
    Source::Namespace(
        dotted
            .split('.')
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect(),
    )
}

/// Whether files in `dir` are in the namespace `segments`: the directory's segments
/// (split at dots too: `src/Acme.Billing/Invoices`) and the namespace's end alike, in
/// the whole namespace, in two segments or more, or in the whole directory (a project
/// at the repository's root leaves the namespace's root out of its paths). One shared
/// segment (`Models`) alone says nothing.
fn in_namespace(dir: &str, segments: &[String]) -> bool {
    let dir: Vec<&str> = dir.split(['/', '.']).filter(|s| !s.is_empty()).collect();
    let shared = dir
        .iter()
        .rev()
        .zip(segments.iter().rev())
        .take_while(|(a, b)| a.eq_ignore_ascii_case(b))
        .count();
    shared > 0 && (shared >= 2 || shared == segments.len() || shared == dir.len())
}

/// Where a file required whole (Ruby's `require`) is kept: under no name a tag has, so
/// that it ranks what it defines through `any_from` and no name through `holds`.
const REQUIRED: &str = "";

/// A dotted chain of names (`shop.rules.validate`, `this.invoices.create`): what a
/// module imported whole or a typed variable is read through.
static CHAIN: LazyLock<Regex> =
    LazyLock::new(|| pattern(r"(?-u:\b)[A-Za-z_$][A-Za-z0-9_$]*(?:\.[A-Za-z_$][A-Za-z0-9_$]*)+"));

fn pattern(source: &str) -> Regex {
    // The patterns are constants, checked by the unit tests.
    Regex::new(source).unwrap_or_else(|e| panic!("import pattern {source}: {e}"))
}

/// The identifiers in `text` (`{ a, b as c }`, `(x,\n y)`).
fn words(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '$'))
        .filter(|w| w.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_' || c == '$'))
}

fn dir_of(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(dir, _)| dir)
}

/// `relative` (`./a`, `../b/c`) resolved against `dir`.
pub(super) fn join(dir: &str, relative: &str) -> String {
    let mut parts: Vec<&str> = dir.split('/').filter(|p| !p.is_empty()).collect();
    for part in relative.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            part => parts.push(part),
        }
    }
    parts.join("/")
}

/// A file's path as a module: without its extension, and a package's index file
/// (`index.ts`, `__init__.py`, `mod.rs`) as its directory.
fn module_of(path: &str) -> &str {
    let file_start = path.rfind('/').map_or(0, |at| at + 1);
    let stem = match path[file_start..].find('.') {
        Some(dot) => &path[..file_start + dot],
        None => path,
    };
    for index in ["/index", "/__init__", "/mod"] {
        if let Some(dir) = stem.strip_suffix(index) {
            return dir;
        }
    }
    stem
}

/// Whether `path` is `suffix` or ends with `/suffix`.
fn ends_with_segments(path: &str, suffix: &str) -> bool {
    !suffix.is_empty()
        && path
            .strip_suffix(suffix)
            .is_some_and(|head| head.is_empty() || head.ends_with('/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The imports of a file in a repository of no packages.
    fn read(path: &str, text: &str, lang: Lang) -> Imports {
        Imports::read(path, text, lang, &Packages::default())
    }

    /// For each `(name, candidate, expected)`: whether the file at `path` imports `name`
    /// from `candidate`. The cases that answer otherwise.
    fn wrong<'a>(
        (path, text, lang): (&str, &str, Lang),
        cases: &[(&'a str, &'a str, bool)],
    ) -> Vec<(&'a str, &'a str)> {
        let imports = read(path, text, lang);
        cases
            .iter()
            .filter(|(name, candidate, expected)| imports.holds(name, candidate) != *expected)
            .map(|(name, candidate, _)| (*name, *candidate))
            .collect()
    }

    #[test]
    fn javascript_imports_and_requires() {
        let text = "import { toInvoice, sum as add } from '../billing/invoice'\nimport type {\n  Order,\n} from \"./types\"\nimport Chart from '@/components/Chart.vue'\nconst { listUsers } = require('./handlers')\nconst db = require('../db')\nimport * as billing from './billing'\nbilling.charge(row)\n";
        let cases = [
            ("toInvoice", "src/billing/invoice.ts", true),
            ("toInvoice", "src/billing/invoice/index.js", true),
            ("toInvoice", "lib/billing/invoice.ts", false),
            ("toInvoice", "src/billing/invoices.ts", false),
            ("add", "src/billing/invoice.ts", true),
            ("Order", "src/reports/types.d.ts", true),
            ("Chart", "web/src/components/Chart.vue", true),
            ("listUsers", "src/reports/handlers.js", true),
            ("db", "src/db/index.js", true),
            ("render", "src/billing/invoice.ts", false),
            ("charge", "src/reports/billing.ts", true),
        ];
        let file = ("src/reports/index.ts", text, Lang::TypeScript);
        assert_eq!(wrong(file, &cases), []);
    }

    /// The candidates whose being a module the file imports anything from is not as
    /// expected.
    fn not_from<'a>(imports: &Imports, from: &'a [(&'a str, bool)]) -> Vec<&'a (&'a str, bool)> {
        from.iter()
            .filter(|(candidate, expected)| imports.any_from(candidate) != *expected)
            .collect()
    }

    #[test]
    fn python_from_imports() {
        let text = "from .billing import to_invoice\nfrom ..core.rules import (\n    check,\n    limit as cap,\n)\nfrom shop.mail import send  # noqa\nfrom . import utils\nfrom shop import post\n\npost.deliver(order)\n";
        let cases = [
            ("to_invoice", "app/shop/billing.py", true),
            ("to_invoice", "app/shop/billing/__init__.py", true),
            ("to_invoice", "app/billing.py", false),
            ("check", "app/core/rules.py", true),
            ("cap", "app/core/rules.py", true),
            ("send", "src/shop/mail.py", true),
            ("send", "src/workshop/mail.py", false),
            ("noqa", "src/shop/mail.py", false),
            ("utils", "app/shop/utils.py", false),
            ("deliver", "src/shop/post.py", true),
            ("deliver", "src/post.py", false),
        ];
        assert_eq!(
            wrong(("app/shop/reports.py", text, Lang::Python), &cases),
            []
        );
    }

    #[test]
    fn python_modules_imported_whole() {
        let text = "import os, shop.billing
import shop.rules as rules_v2
from . import (utils, mail as post)

def f(order):
    shop.billing.to_invoice(order)
    rules_v2.check(order)
    utils.helper(os.path.join(post.send()))
    shop.billingx.total()
";
        let cases = [
            ("to_invoice", "src/shop/billing.py", true),
            ("to_invoice", "src/shop/billing/__init__.py", true),
            ("to_invoice", "src/billing.py", false),
            ("check", "lib/shop/rules.py", true),
            ("check", "lib/shop/rules_v2.py", false),
            ("helper", "app/shop/utils.py", true),
            ("helper", "app/utils.py", false),
            ("send", "app/shop/mail.py", true),
            ("total", "src/shop/billing.py", false),
            ("path", "lib/os.py", true),
        ];
        assert_eq!(
            wrong(("app/shop/reports.py", text, Lang::Python), &cases),
            []
        );
    }

    /// `from x import *` brings every name `x` defines: its module ranks any name
    /// (second, as Java's wildcard), names none as imported by name.
    #[test]
    fn python_star_imports() {
        let text =
            "from shop.models import *\nfrom .rules import *\nfrom . import *\n\ncheck(Order())\n";
        let imports = read("app/shop/views.py", text, Lang::Python);
        let from = [
            ("src/shop/models.py", true),
            ("src/shop/models/__init__.py", true),
            ("app/shop/rules.py", true),
            ("app/shop/__init__.py", true),
            ("app/other/rules.py", false),
            ("src/shop/views.py", false),
        ];
        assert_eq!(not_from(&imports, &from), Vec::<&(&str, bool)>::new());
        assert!(!imports.names("Order") && !imports.holds("check", "app/shop/rules.py"));
    }

    /// An absolute import names a module from a root Python imports from, never one
    /// inside a package.
    #[test]
    fn python_absolute_names_start_at_a_root() {
        let packages = Packages::of(&[
            ("app/__init__.py", ""),
            ("app/utils/__init__.py", ""),
            ("src/shop/__init__.py", ""),
        ]);
        let text = "import json\nfrom shop.rules import check\n\njson.dumps(check(1))\n";
        let imports = Imports::read("src/shop/api.py", text, Lang::Python, &packages);
        let holds =
            |name: &str, candidate: &str| imports.tie(name, candidate, &packages) == Some(1);
        assert!(holds("check", "src/shop/rules.py"));
        assert!(holds("check", "shop/rules.py"));
        assert!(!holds("check", "app/shop/rules.py"));
        assert!(holds("dumps", "json.py"));
        assert!(!holds("dumps", "app/utils/json.py"));
        assert!(holds("dumps", "tools/json.py"));
    }

    /// A name imported from a package is defined in one of its files, which the
    /// package's entry re-exports; nothing else imported ties the package's files.
    #[test]
    fn a_name_imported_from_a_package_may_be_defined_in_its_files() {
        let packages = Packages::of(&[("app/__init__.py", "")]);
        let cases = [
            (
                "src/web/page.ts",
                "import { toInvoice } from '../billing'\nimport { Cache } from './cache'\n",
                Lang::TypeScript,
                "toInvoice",
                "src/billing/convert/index.ts",
                "src/billings/convert.ts",
            ),
            (
                "src/api.py",
                "from shop.billing import to_invoice\n",
                Lang::Python,
                "to_invoice",
                "src/shop/billing/convert.py",
                "app/shop/billing/convert.py",
            ),
            (
                "src/api.rs",
                "use crate::store::Cache;\n",
                Lang::Rust,
                "Cache",
                "src/store/lru/mod.rs",
                "src/storage/lru.rs",
            ),
        ];
        for (path, text, lang, name, below, elsewhere) in cases {
            let imports = Imports::read(path, text, lang, &packages);
            assert_eq!(imports.tie(name, below, &packages), Some(1), "{below}");
            assert_eq!(imports.tie(name, elsewhere, &packages), None, "{elsewhere}");
            assert_eq!(imports.tie("other", below, &packages), None, "{below}");
        }
    }

    #[test]
    fn rust_use_trees() {
        let text = "use crate::store::{\n    load_user,\n    billing::{to_invoice, Total, save as persist},\n};\npub(crate) use super::rules::check;\nuse std::collections::HashMap;\nuse std::sync::{Arc, Mutex};\nuse std::thread;\nuse crate::mail::*;\nuse crate::cache;\nfn f() { cache::load(1); Arc::clone(&a); }\n";
        let cases = [
            ("load_user", "src/store.rs", true),
            ("load_user", "src/store/mod.rs", true),
            ("to_invoice", "crates/shop/src/store/billing.rs", true),
            ("Total", "src/store/billing.rs", true),
            ("Total", "src/billing.rs", false),
            ("persist", "src/store/billing.rs", true),
            ("check", "src/rules.rs", true),
            ("HashMap", "src/store.rs", false),
            ("load", "src/cache/mod.rs", true),
            ("load", "src/store.rs", false),
            ("clone", "src/sync/std.rs", false),
            ("Mutex", "src/std.rs", false),
        ];
        assert_eq!(wrong(("src/api.rs", text, Lang::Rust), &cases), []);
        let imports = read("src/api.rs", text, Lang::Rust);
        assert!(!imports.any_from("src/sync/std.rs"));
    }

    #[test]
    fn go_qualified_names() {
        let text = "package api\n\nimport (\n\t\"errors\"\n\t\"fmt\"\n\tdb \"example.com/shop/internal/store\"\n\t\"example.com/shop/billing\"\n)\n\nfunc Show() {\n\tu := db.Load(1)\n\tfmt.Println(billing.Total(u), errors.New(\"x\"))\n}\n";
        let cases = [
            ("New", "errors/errors.go", false),
            ("Println", "fmt/print.go", false),
            ("Load", "internal/store/load.go", true),
            ("Load", "internal/store/cache/load.go", false),
            ("Total", "shop/billing/total.go", true),
            ("Total", "report/total.go", false),
        ];
        assert_eq!(wrong(("api/show.go", text, Lang::Go), &cases), []);
        let single =
            "package main\nimport \"example.com/app/store\"\nfunc main() { store.Open() }\n";
        let file = ("main.go", single, Lang::Go);
        assert_eq!(wrong(file, &[("Open", "store/open.go", true)]), []);
        // A module named without a dot is this repository's, not the standard library.
        let packages = Packages::of(&[("go.mod", "module myapp\n")]);
        let local = "package main\nimport \"myapp/store\"\nfunc main() { store.Open() }\n";
        let imports = Imports::read("main.go", local, Lang::Go, &packages);
        assert!(imports.holds("Open", "store/open.go"));
    }

    #[test]
    fn java_imports() {
        let text = "package com.acme.api;\nimport com.acme.billing.Invoice;\nimport static com.acme.rules.Checks.validate;\nimport java.util.*;\nclass A { void f() { Invoice.create(validate(1)); } }\n";
        let cases = [
            (
                "Invoice",
                "src/main/java/com/acme/billing/Invoice.java",
                true,
            ),
            ("Invoice", "src/main/java/com/acme/dto/Invoice.java", false),
            ("validate", "src/main/java/com/acme/rules/Checks.java", true),
            (
                "create",
                "src/main/java/com/acme/billing/Invoice.java",
                true,
            ),
        ];
        assert_eq!(wrong(("A.java", text, Lang::Java), &cases), []);
        let wildcard = read("A.java", text, Lang::Java);
        assert!(!wildcard.any_from("src/main/java/com/acme/dto/Invoice.java"));
        let text = "import com.acme.dto.*;\nclass B {}\n";
        let wildcard = read("B.java", text, Lang::Java);
        assert!(wildcard.any_from("src/main/java/com/acme/dto/Invoice.java"));
        assert!(!wildcard.any_from("src/main/java/com/acme/dto/v2/Invoice.java"));
        assert!(!wildcard.holds("Invoice", "src/main/java/com/acme/dto/Invoice.java"));
    }

    #[test]
    fn csharp_usings_and_namespaces() {
        let text = "using System;\nglobal using Acme.Billing;\nusing static Acme.Rules.Checks;\nusing Bill = Acme.Orders.Invoice;\n\nnamespace Acme.Web.Controllers\n{\n    class C { void F() { using var s = Open(); } }\n}\n";
        let imports = read("src/Acme.Web/Controllers/C.cs", text, Lang::CSharp);
        let from = [
            ("src/Acme.Billing/Invoice.cs", true),
            ("Acme/Billing/Invoice.cs", true),
            ("Billing/Invoice.cs", true),
            ("src/Acme.Billing/Legacy/Invoice.cs", false),
            ("src/Other/Billing/Invoice.cs", false),
            ("src/Acme.Rules/Checks.cs", true),
            ("src/Acme.Orders/Invoice.cs", true),
            ("src/Acme.Web/Controllers/HomeController.cs", true),
            ("src/Acme.Web/Views/Home.cs", false),
            ("src/Acme.Web/Startup.cs", true),
            ("src/Acme/Startup.cs", false),
            ("src/Legacy/Models/Invoice.cs", false),
            ("src/var/Invoice.cs", false),
        ];
        assert_eq!(not_from(&imports, &from), Vec::<&(&str, bool)>::new());
        assert!(!imports.holds("Invoice", "src/Acme.Billing/Invoice.cs"));
    }

    #[test]
    fn php_use_statements() {
        let text = "<?php\nnamespace App\\Http;\nuse PHPUnit\\Framework\\Constraint\\Constraint;\nuse App\\Models\\User;\nuse App\\Billing\\{Invoice, Order as Purchase};\nuse function App\\Support\\money;\nclass C { function f() { return User::find(1); } }\n";
        let cases = [
            ("User", "app/Models/User.php", true),
            ("User", "app/Http/User.php", false),
            ("Invoice", "src/Billing/Invoice.php", true),
            ("Purchase", "src/Billing/Order.php", true),
            ("money", "app/Support/money.php", true),
            ("find", "app/Models/User.php", true),
            ("Constraint", "src/Semver/Constraint/Constraint.php", false),
        ];
        assert_eq!(wrong(("app/Http/C.php", text, Lang::Php), &cases), []);
    }

    #[test]
    fn ruby_requires_and_constants() {
        let text = "require_relative '../billing/invoice'\nrequire 'shop/mailer'\nclass Orders\n  def show\n    Billing::InvoiceItem.create(params)\n  end\nend\n";
        let imports = read("app/controllers/orders.rb", text, Lang::Ruby);
        assert!(imports.any_from("app/billing/invoice.rb"));
        assert!(imports.any_from("lib/shop/mailer.rb"));
        assert!(imports.any_from("gems/shop/lib/shop/mailer.rb"));
        assert!(!imports.any_from("lib/shop/mailers.rb"));
        // `require 'csv'` is the standard library's: not a file of that name elsewhere.
        let stdlib = read(
            "app/models/report.rb",
            "require 'csv'
require 'test_helper'
",
            Lang::Ruby,
        );
        assert!(!stdlib.any_from("lib/redmine/export/csv.rb"));
        assert!(stdlib.any_from("lib/csv.rb"));
        assert!(stdlib.any_from("test/test_helper.rb"));
        let cases = [
            ("InvoiceItem", "app/models/billing/invoice_item.rb", true),
            ("InvoiceItem", "app/models/invoice_item.rb", false),
            ("Invoice", "app/billing/invoice.rb", false),
        ];
        let file = ("app/controllers/orders.rb", text, Lang::Ruby);
        assert_eq!(wrong(file, &cases), []);
    }

    #[test]
    fn c_includes() {
        let text = "#include <stdio.h>\n#include \"billing/invoice.h\"\n# include \"util.h\"\nint main(void) { return total(); }\n";
        let imports = read("src/main.c", text, Lang::C);
        assert!(imports.any_from("include/billing/invoice.h"));
        assert!(imports.any_from("src/billing/invoice.c"));
        assert!(imports.any_from("src/util.c"));
        assert!(!imports.any_from("src/stdio.c"));
        assert!(!imports.any_from("src/billing/receipt.c"));
        assert!(!imports.holds("total", "src/billing/invoice.c"));
    }

    #[test]
    fn imports_of_the_repositorys_own_packages() {
        let packages = Packages::of(&[
            (
                "packages/billing/package.json",
                r#"{"name": "@acme/billing"}"#,
            ),
            (
                "crates/acme-store/Cargo.toml",
                "[package]\nname = \"acme-store\"\n",
            ),
            ("services/shop/go.mod", "module example.com/shop\n"),
            (
                "lib/dbal/composer.json",
                r#"{"autoload": {"psr-4": {"Doctrine\\DBAL\\": "src/"}}}"#,
            ),
            (
                "tsconfig.base.json",
                r#"{"compilerOptions": {"paths": {"@shared/*": ["libs/common/src/*"], "@acme/rules": ["libs/rules/src/index.ts"]}}}"#,
            ),
        ]);
        let holds = |(path, text, lang): (&str, &str, Lang), name: &str, candidate: &str| {
            Imports::read(path, text, lang, &packages).holds(name, candidate)
        };
        let js = (
            "apps/web/src/page.ts",
            "import { toInvoice } from '@acme/billing'\nimport { total } from '@acme/billing/sum'\n",
            Lang::TypeScript,
        );
        assert!(holds(
            js,
            "toInvoice",
            "packages/billing/src/invoice/convert.ts"
        ));
        assert!(!holds(js, "toInvoice", "apps/web/src/billing/convert.ts"));
        assert!(holds(js, "total", "packages/billing/src/sum.ts"));
        assert!(!holds(js, "total", "packages/billing/src/tax.ts"));
        let aliased = (
            "apps/web/src/page.ts",
            "import { money } from '@shared/format'\nimport { validate } from '@acme/rules'\n",
            Lang::TypeScript,
        );
        assert!(holds(aliased, "money", "libs/common/src/format.ts"));
        assert!(!holds(aliased, "money", "apps/web/src/format.ts"));
        assert!(holds(aliased, "validate", "libs/rules/src/payment/card.ts"));
        assert!(!holds(aliased, "validate", "apps/web/src/rules/card.ts"));
        let rust = (
            "crates/api/src/lib.rs",
            "use acme_store::{cache::Cache, load};\n",
            Lang::Rust,
        );
        assert!(holds(rust, "Cache", "crates/acme-store/src/cache.rs"));
        assert!(holds(rust, "Cache", "crates/acme-store/src/cache/lru.rs"));
        assert!(!holds(rust, "Cache", "crates/acme-store/src/disk.rs"));
        assert!(holds(rust, "load", "crates/acme-store/src/disk.rs"));
        let go = (
            "services/shop/api/show.go",
            "package api\nimport \"example.com/shop/internal/store\"\nfunc f() { store.Load() }\n",
            Lang::Go,
        );
        assert!(holds(go, "Load", "services/shop/internal/store/load.go"));
        assert!(!holds(
            go,
            "Load",
            "services/shop/internal/store/v2/load.go"
        ));
        let php = (
            "lib/dbal/src/Connection.php",
            "<?php\nuse Doctrine\\DBAL\\Schema\\Table;\n",
            Lang::Php,
        );
        assert!(holds(php, "Table", "lib/dbal/src/Schema/Table.php"));
        assert!(!holds(php, "Table", "lib/dbal/src/Platforms/Table.php"));
    }

    #[test]
    fn broken_imports_are_read_without_a_panic() {
        let broken = [
            "import {",
            "from . import",
            "use crate::{a, {b};",
            "import (\n\"x",
            "use ;",
            "using ;\nnamespace",
            "import a.b.*",
            "import ,",
        ];
        for text in broken {
            for lang in [
                Lang::TypeScript,
                Lang::Python,
                Lang::Rust,
                Lang::Go,
                Lang::Java,
                Lang::Php,
                Lang::CSharp,
            ] {
                let _ = read("x/y", text, lang);
            }
        }
    }
}
