//! A method called on a variable (`invoices.create(…)`, `self.repo.save(…)`,
//! `st.Load(…)`) is its type's method, where the file says the type: a field, a
//! parameter or a local declared with it (`private final InvoiceService invoices;`,
//! `invoices: InvoiceService`, `repo = InvoiceRepo(db)`, `st *store.Store`, Ruby's
//! `@invoice = Invoice.find(id)`). Such a method is looked up first where the type
//! comes from (its import; in Java and C#, also the file named after the class, as both
//! name their files, and an interface's usual implementation), ahead of the other files
//! defining a method of that name (`create`, `save`, `Load` are defined in many).
//!
//! Read with patterns, per file, not per scope: a name declared with two types in two
//! functions ties its methods to both. A collection's items take its element type (see
//! `items`).

use super::{CHAIN, Imports, Source, pattern};
use crate::index::languages::Lang;
use regex::Regex;
use std::collections::HashMap;
use std::sync::LazyLock;

impl Imports {
    /// The methods called on the variables of `text` whose types it declares, each to
    /// where its type comes from.
    pub(super) fn typed(&mut self, text: &str, lang: Lang) {
        let types = declared_types(text, lang);
        if types.is_empty() {
            return;
        }
        let named_file = matches!(lang, Lang::Java | Lang::CSharp);
        let mut added: Vec<(String, Source)> = Vec::new();
        for chain in CHAIN.find_iter(text) {
            let segments: Vec<&str> = chain.as_str().split('.').collect();
            for pair in segments.windows(2) {
                let Some(&class) = types.get(pair[0]) else {
                    continue;
                };
                let method = pair[1];
                for source in self.from.get(class).into_iter().flatten() {
                    added.push((method.to_string(), source.clone()));
                }
                if named_file {
                    for file in class_files(class) {
                        added.push((method.to_string(), Source::Suffix(file)));
                    }
                }
            }
        }
        // Tied to the method alone (see `Imports::methods`), not to every name: a
        // parameter typed `Extension` is no import of every file named so.
        for (method, source) in added {
            let sources = self.methods.entry(method).or_default();
            if !sources.contains(&source) {
                sources.push(source);
            }
        }
    }
}

/// The files a Java or C# type's methods are in: the type's own, and where it is an
/// interface injected by its name, its implementation's by the usual names
/// (`IInvoiceService` in `InvoiceService.cs`, `InvoiceService` in
/// `InvoiceServiceImpl.java` or `DefaultInvoiceService.java`): the interface declares
/// the method, the implementation holds the body a reviewer needs.
fn class_files(class: &str) -> Vec<String> {
    let mut files = vec![
        class.to_string(),
        format!("{class}Impl"),
        format!("Default{class}"),
    ];
    let mut chars = class.chars();
    if let (Some('I'), Some(next)) = (chars.next(), chars.next())
        && next.is_ascii_uppercase()
    {
        files.push(class[1..].to_string());
    }
    files
}

/// Each variable of `text` to the type it is declared with (the last one read).
fn declared_types(text: &str, lang: Lang) -> HashMap<&str, &str> {
    static JAVA_LIKE: LazyLock<[Regex; 2]> = LazyLock::new(|| {
        [
            // `InvoiceService invoices;`, `List<Order> orders =`, `(Clock clock,`.
            pattern(
                r"(?-u:\b)([A-Z][A-Za-z0-9_]*)(?:<[^<>;(){}\n]*>)?(?:\[\])?[ \t]+([a-z_][A-Za-z0-9_]*)[ \t]*[;=,)]",
            ),
            // `var invoices = new InvoiceService(`.
            pattern(
                r"(?-u:\b)var[ \t]+([a-z_][A-Za-z0-9_]*)[ \t]*=[ \t]*new[ \t]+([A-Z][A-Za-z0-9_]*)",
            ),
        ]
    });
    static SCRIPT: LazyLock<[Regex; 2]> = LazyLock::new(|| {
        [
            // `invoices: InvoiceService`, `private readonly invoices?: InvoiceService`.
            pattern(r"(?-u:\b)([A-Za-z_$][A-Za-z0-9_$]*)[ \t]*[?!]?:[ \t]*([A-Z][A-Za-z0-9_$]*)"),
            // `const invoices = new InvoiceService(`, `this.invoices = new …`.
            pattern(
                r"(?-u:\b)([A-Za-z_$][A-Za-z0-9_$]*)[ \t]*=[ \t]*new[ \t]+([A-Z][A-Za-z0-9_$]*)",
            ),
        ]
    });
    static PYTHON: LazyLock<[Regex; 2]> = LazyLock::new(|| {
        [
            // `repo: InvoiceRepo`, `repo: Optional[InvoiceRepo]`.
            pattern(
                r"(?-u:\b)([a-z_][A-Za-z0-9_]*)[ \t]*:[ \t]*(?:Optional\[)?([A-Z][A-Za-z0-9_]*)",
            ),
            // `self.repo = InvoiceRepo(db)`, `repo = InvoiceRepo()`.
            pattern(r"(?-u:\b)([a-z_][A-Za-z0-9_]*)[ \t]*=[ \t]*([A-Z][A-Za-z0-9_]*)\("),
        ]
    });
    static RUST: LazyLock<[Regex; 2]> = LazyLock::new(|| {
        [
            // `store: &Store`, `store: &'a mut store::Store`, `store: Arc<Store>`.
            pattern(
                r"(?-u:\b)([a-z_][a-z0-9_]*)[ \t]*:[ \t]*&?(?:'[a-z_]+[ \t]+)?(?:mut[ \t]+)?(?:(?:Arc|Rc|Box)<)?(?:[a-z_][a-z0-9_]*::)*([A-Z][A-Za-z0-9_]*)",
            ),
            // `let store = Store::open(…)`, `let mut cache = cache::Cache::new()`.
            pattern(
                r"(?-u:\b)let[ \t]+(?:mut[ \t]+)?([a-z_][a-z0-9_]*)[ \t]*=[ \t]*(?:[a-z_][a-z0-9_]*::)*([A-Z][A-Za-z0-9_]*)::",
            ),
        ]
    });
    static GO: LazyLock<[Regex; 2]> = LazyLock::new(|| {
        [
            // `st *store.Store`, `db *sql.DB` (a parameter or a field).
            pattern(
                r"(?-u:\b)([a-z_][A-Za-z0-9_]*)[ \t]+(?:\*|\[\])*[a-z_][a-z0-9_]*\.([A-Z][A-Za-z0-9_]*)",
            ),
            // `st := &store.Store{`; and `st := store.NewStore(…)`, by Go's convention a
            // constructor of its package's type, whose methods are in that package: the
            // constructor's name stands for the type (it is what the file imports).
            pattern(
                r"(?-u:\b)([a-z_][A-Za-z0-9_]*)[ \t]*:?=[ \t]*(?:&?[a-z_][a-z0-9_]*\.([A-Z][A-Za-z0-9_]*)\{|[a-z_][a-z0-9_]*\.(New[A-Z0-9_][A-Za-z0-9_]*)\()",
            ),
        ]
    });
    static RUBY: LazyLock<[Regex; 2]> = LazyLock::new(|| {
        [
            // `@invoice = Invoice.find(id)`, `item = Billing::InvoiceItem.new(…)`.
            pattern(
                r"@?(?-u:\b)([a-z_][A-Za-z0-9_]*)[ \t]*=[ \t]*(?:[A-Z][A-Za-z0-9_]*::)*([A-Z][A-Za-z0-9_]*)\.(?:new|find[a-z_]*|create|first|last|take|build)(?-u:\b)",
            ),
            // YARD's `# @param invoice [Invoice]`.
            pattern(
                r"@param[ \t]+([a-z_][A-Za-z0-9_]*)[ \t]+\[(?:[A-Z][A-Za-z0-9_]*::)*([A-Z][A-Za-z0-9_]*)\]",
            ),
        ]
    });
    let patterns = match lang {
        Lang::Java | Lang::CSharp => &*JAVA_LIKE,
        Lang::JavaScript | Lang::TypeScript | Lang::Tsx | Lang::Component => &*SCRIPT,
        Lang::Python => &*PYTHON,
        Lang::Rust => &*RUST,
        Lang::Go => &*GO,
        Lang::Ruby => &*RUBY,
        _ => return HashMap::new(),
    };
    let (first, second) = (&patterns[0], &patterns[1]);
    let mut types = HashMap::new();
    for found in first.captures_iter(text) {
        match lang {
            // `InvoiceService invoices`: the type first.
            Lang::Java | Lang::CSharp => types.insert(found_str(&found, 2), found_str(&found, 1)),
            _ => types.insert(found_str(&found, 1), found_str(&found, 2)),
        };
    }
    for found in second.captures_iter(text) {
        let ty = found
            .get(2)
            .or_else(|| found.get(3))
            .map_or("", |m| m.as_str());
        types.insert(found_str(&found, 1), ty);
    }
    super::items::type_items(text, lang, &mut types);
    types
}

fn found_str<'t>(found: &regex::Captures<'t>, group: usize) -> &'t str {
    found.get(group).map_or("", |m| m.as_str())
}

#[cfg(test)]
mod tests {
    use super::super::Packages;
    use super::*;

    /// For each language: a method called on a typed variable is tied to where its type
    /// comes from; the same method name on an untyped receiver is not.
    #[test]
    fn a_method_is_read_where_its_receivers_type_comes_from() {
        let cases = [
            (
                "src/main/java/com/acme/api/Orders.java",
                "import com.acme.billing.InvoiceService;\nclass Orders {\n  private final InvoiceService invoices;\n  void f(Clock clock) { invoices.create(clock.now()); other.save(); }\n}\n",
                Lang::Java,
                (
                    "create",
                    "src/main/java/com/acme/billing/InvoiceService.java",
                ),
                ("now", "src/main/java/com/acme/time/Clock.java"),
                ("save", "src/main/java/com/acme/billing/InvoiceService.java"),
            ),
            (
                "src/Api/Orders.cs",
                "using Acme.Billing;\nclass Orders {\n  private readonly IInvoiceService _invoices;\n  void F() { var repo = new OrderRepo(); _invoices.Create(repo.Load()); other.Save(); }\n}\n",
                Lang::CSharp,
                ("Create", "src/Billing/IInvoiceService.cs"),
                ("Load", "src/Data/OrderRepo.cs"),
                ("Save", "src/Billing/IInvoiceService.cs"),
            ),
            (
                "src/api/orders.ts",
                "import { InvoiceService } from '../billing/invoices'\nexport class Orders {\n  constructor(private readonly invoices: InvoiceService) {}\n  run() { this.invoices.create(1); other.save() }\n}\n",
                Lang::TypeScript,
                ("create", "src/billing/invoices.ts"),
                ("create", "src/billing/invoices.ts"),
                ("save", "src/billing/invoices.ts"),
            ),
            (
                "app/api/orders.py",
                "from app.billing.repo import InvoiceRepo\n\nclass Orders:\n    def __init__(self, db):\n        self.repo = InvoiceRepo(db)\n\n    def run(self, other):\n        self.repo.save(1)\n        other.delete()\n",
                Lang::Python,
                ("save", "app/billing/repo.py"),
                ("save", "app/billing/repo.py"),
                ("delete", "app/billing/repo.py"),
            ),
            (
                "src/api.rs",
                "use crate::store::Store;\nfn f(store: &Store, other: &Other) { store.load(1); other.keep(); }\n",
                Lang::Rust,
                ("load", "src/store.rs"),
                ("load", "src/store.rs"),
                ("keep", "src/store.rs"),
            ),
            (
                "api/show.go",
                "package api\nimport \"example.com/shop/internal/store\"\nfunc Show(st *store.Store, o Other) { st.Load(1); o.Keep() }\n",
                Lang::Go,
                ("Load", "internal/store/store.go"),
                ("Load", "internal/store/store.go"),
                ("Keep", "internal/store/store.go"),
            ),
        ];
        let packages = Packages::default();
        for (path, text, lang, (method, file), (also, also_file), (untyped, not_file)) in cases {
            let imports = Imports::read(path, text, lang, &packages);
            assert_eq!(
                imports.tie(method, file, &packages),
                Some(1),
                "{path}: {method}"
            );
            assert_eq!(
                imports.tie(also, also_file, &packages),
                Some(1),
                "{path}: {also}"
            );
            assert_ne!(
                imports.tie(untyped, not_file, &packages),
                Some(1),
                "{path}: {untyped}"
            );
        }
        // An interface injected by its name: its implementation's file holds the body.
        let csharp = "class Orders {\n  private readonly IInvoiceService _invoices;\n  void F() { _invoices.Create(); }\n}\n";
        let imports = Imports::read("src/Api/Orders.cs", csharp, Lang::CSharp, &packages);
        for file in [
            "src/Billing/IInvoiceService.cs",
            "src/Billing/InvoiceService.cs",
        ] {
            assert_eq!(imports.tie("Create", file, &packages), Some(1), "{file}");
        }
        // Go: a constructor by convention (`store.NewStore`) gives its package's type.
        let go = "package api\nimport \"example.com/shop/internal/store\"\nfunc Show() {\n\tst := store.NewStore(db)\n\tst.Load(1)\n\tother := cache.Get()\n\tother.Keep()\n}\n";
        let imports = Imports::read("api/show.go", go, Lang::Go, &packages);
        let file = "internal/store/store.go";
        assert_eq!(imports.tie("Load", file, &packages), Some(1));
        assert_ne!(imports.tie("Keep", file, &packages), Some(1));
        let java = "class Orders {\n  private final InvoiceService invoices;\n  void f() { invoices.create(); }\n}\n";
        let imports = Imports::read("src/Orders.java", java, Lang::Java, &packages);
        for file in [
            "src/b/InvoiceServiceImpl.java",
            "src/b/DefaultInvoiceService.java",
        ] {
            assert_eq!(imports.tie("create", file, &packages), Some(1), "{file}");
        }
        assert_eq!(imports.tie("create", "src/b/Invoice.java", &packages), None);
        // The class's file is tied to its methods, not to every name the file uses.
        let text = "class A extends Extension {\n  static A of(java.security.cert.Extension ext) { return ext.getValue(); }\n}\n";
        let imports = Imports::read("sun/x509/A.java", text, Lang::Java, &packages);
        let tie = |name: &str| imports.tie(name, "java/cert/Extension.java", &packages);
        assert_eq!((tie("getValue"), tie("Extension")), (Some(1), None));
    }
}
