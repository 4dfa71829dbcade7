//! A collection's items have its element type: a loop's variable (`for (Order o :
//! orders)`, `for order in orders:`, `for _, o := range orders`, `invoices.each do
//! |invoice|`) or a lambda's parameter over it (`orders.forEach(o -> …)`,
//! `orders.iter().map(|o| …)`, `map(lambda o: …, orders)`), where the file declares the
//! collection with its element type (`List<Order> orders`, `orders: list[Order]`,
//! `orders: &[Order]`, `byID map[string]*store.Order`, `@invoices = Invoice.where(…)`).
//! Without this, `order.total()` in a loop names no type, and the first `total` in path
//! order is read for it.
//!
//! Read with patterns, per file as the declared types are (see `typed`); an item named
//! like a variable declared with another type takes the last one read.

use super::pattern;
use crate::index::languages::Lang;
use regex::Regex;
use std::collections::HashMap;
use std::sync::LazyLock;

/// One language's patterns: collections declared with their element type (`var`,
/// `ty`), items bound from a collection (`item`, `coll`) or with their own type written
/// (`item`, `ty`: `for (Order o : found())`), and items typed by the class a query starts
/// from (`Invoice.where(…).each do |invoice|`: `ty`, `item`).
struct Patterns {
    collections: Vec<Regex>,
    items: Vec<Regex>,
    queried: Vec<Regex>,
}

/// Adds to `types` (each variable's type) the items of the collections `text`
/// declares with their element type.
pub(super) fn type_items<'t>(text: &'t str, lang: Lang, types: &mut HashMap<&'t str, &'t str>) {
    let Some(patterns) = patterns(lang) else {
        return;
    };
    let mut elements: HashMap<&str, &str> = HashMap::new();
    for collection in &patterns.collections {
        for found in collection.captures_iter(text) {
            if let (Some(var), Some(ty)) = (found.name("var"), found.name("ty")) {
                elements.insert(var.as_str(), ty.as_str());
            }
        }
    }
    for bound in &patterns.items {
        for found in bound.captures_iter(text) {
            let Some(item) = found.name("item") else {
                continue;
            };
            let written = found.name("ty").map(|ty| ty.as_str());
            let element = found
                .name("coll")
                .and_then(|coll| elements.get(coll.as_str()).copied());
            if let Some(ty) = written.or(element) {
                types.insert(item.as_str(), ty);
            }
        }
    }
    for query in &patterns.queried {
        for found in query.captures_iter(text) {
            if let (Some(item), Some(ty)) = (found.name("item"), found.name("ty")) {
                types.insert(item.as_str(), ty.as_str());
            }
        }
    }
}

fn patterns(lang: Lang) -> Option<&'static Patterns> {
    static JAVA: LazyLock<Patterns> = LazyLock::new(|| Patterns {
        collections: vec![
            // `List<Order> orders;`, `Stream<Order> orders =`, `(Set<Order> orders,`.
            pattern(
                r"(?-u:\b)(?:List|ArrayList|LinkedList|Set|HashSet|TreeSet|SortedSet|Collection|Iterable|Stream|Queue|Deque)<(?P<ty>[A-Z][A-Za-z0-9_]*)>[ \t]+(?P<var>[a-z_][A-Za-z0-9_]*)[ \t]*[;=,)]",
            ),
            ARRAY.clone(),
        ],
        items: vec![
            // `for (Order o : found())`: the item's type written.
            pattern(
                r"(?-u:\b)for[ \t]*\([ \t]*(?:final[ \t]+)?(?P<ty>[A-Z][A-Za-z0-9_]*)(?:<[^<>;(){}\n]*>)?[ \t]+(?P<item>[a-z_][A-Za-z0-9_]*)[ \t]*:",
            ),
            // `for (var o : orders)`, `for (final var o : this.orders)`.
            pattern(
                r"(?-u:\b)for[ \t]*\([ \t]*(?:final[ \t]+)?var[ \t]+(?P<item>[a-z_][A-Za-z0-9_]*)[ \t]*:[ \t]*(?:this\.)?(?P<coll>[a-z_][A-Za-z0-9_]*)[ \t]*\)",
            ),
            // `orders.forEach(o -> …)`, `orders.stream().map(o -> …)`.
            lambda(
                "forEach|map|filter|anyMatch|allMatch|noneMatch|flatMap|peek|removeIf",
                "->",
            ),
        ],
        queried: Vec::new(),
    });
    static CSHARP: LazyLock<Patterns> = LazyLock::new(|| Patterns {
        collections: vec![
            // `List<Order> orders;`, `IEnumerable<Order> orders)`, `IReadOnlyList<Order> _orders`.
            pattern(
                r"(?-u:\b)(?:List|HashSet|SortedSet|Queue|IEnumerable|IList|ICollection|IReadOnlyList|IReadOnlyCollection|IQueryable|ISet)<(?P<ty>[A-Z][A-Za-z0-9_]*)>[ \t]+(?P<var>[a-z_][A-Za-z0-9_]*)[ \t]*[;=,)]",
            ),
            ARRAY.clone(),
        ],
        items: vec![
            // `foreach (Order order in Load())`: the item's type written.
            pattern(
                r"(?-u:\b)foreach[ \t]*\([ \t]*(?P<ty>[A-Z][A-Za-z0-9_]*)(?:<[^<>;(){}\n]*>)?[ \t]+(?P<item>[a-z_][A-Za-z0-9_]*)[ \t]+in(?-u:\b)",
            ),
            // `foreach (var order in orders)`, `foreach (var order in this._orders)`.
            pattern(
                r"(?-u:\b)foreach[ \t]*\([ \t]*var[ \t]+(?P<item>[a-z_][A-Za-z0-9_]*)[ \t]+in[ \t]+(?:this\.)?(?P<coll>[a-z_][A-Za-z0-9_]*)[ \t]*\)",
            ),
            // `orders.ForEach(o => …)`, `orders.Where(o => …)`.
            lambda(
                "ForEach|Select|SelectMany|Where|Any|All|First|FirstOrDefault|Single|SingleOrDefault|OrderBy|OrderByDescending|Sum|Count",
                "=>",
            ),
        ],
        queried: Vec::new(),
    });
    static SCRIPT: LazyLock<Patterns> = LazyLock::new(|| Patterns {
        collections: vec![
            // `orders: Order[]`, `readonly orders: readonly Order[]`.
            pattern(
                r"(?-u:\b)(?P<var>[A-Za-z_$][A-Za-z0-9_$]*)[ \t]*[?!]?:[ \t]*(?:readonly[ \t]+)?(?P<ty>[A-Z][A-Za-z0-9_$]*)\[\]",
            ),
            // `orders: Array<Order>`, `seen: Set<Order>`.
            pattern(
                r"(?-u:\b)(?P<var>[A-Za-z_$][A-Za-z0-9_$]*)[ \t]*[?!]?:[ \t]*(?:Array|ReadonlyArray|Set|ReadonlySet|Iterable)<(?P<ty>[A-Z][A-Za-z0-9_$]*)>",
            ),
        ],
        items: vec![
            // `for (const order of orders)`, `for (let o of this.orders)`.
            pattern(
                r"(?-u:\b)for[ \t]*\([ \t]*(?:const|let|var)[ \t]+(?P<item>[A-Za-z_$][A-Za-z0-9_$]*)[ \t]+of[ \t]+(?:this\.)?(?P<coll>[A-Za-z_$][A-Za-z0-9_$]*)[ \t]*\)",
            ),
            // `orders.forEach((o) => …)`, `orders.map(async o => …)`.
            lambda("forEach|map|filter|find|findLast|some|every|flatMap", "=>"),
        ],
        queried: Vec::new(),
    });
    static PYTHON: LazyLock<Patterns> = LazyLock::new(|| Patterns {
        collections: vec![
            // `orders: list[Order]`, `orders: Sequence[Order]`, `t: tuple[Order, ...]`.
            pattern(
                r"(?-u:\b)(?P<var>[a-z_][A-Za-z0-9_]*)[ \t]*:[ \t]*(?:typing\.)?(?:list|List|set|Set|frozenset|FrozenSet|tuple|Tuple|Sequence|MutableSequence|Iterable|Iterator|Collection)\[(?P<ty>[A-Z][A-Za-z0-9_]*)[\],]",
            ),
        ],
        items: vec![
            // `for order in orders:`, `[o.total() for o in self.orders]`.
            pattern(
                r"(?-u:\b)for[ \t]+(?P<item>[a-z_][A-Za-z0-9_]*)[ \t]+in[ \t]+(?:self\.)?(?P<coll>[a-z_][A-Za-z0-9_]*)(?-u:\b)",
            ),
            // `map(lambda o: o.total(), orders)`, `filter(lambda o: o.paid, self.orders)`:
            // the collection last, after a body of one line (a call's commas held in its
            // parentheses).
            pattern(
                r"(?-u:\b)(?:map|filter)\([ \t]*lambda[ \t]+(?P<item>[a-z_][A-Za-z0-9_]*)[ \t]*:[^,\n]*(?:\([^()\n]*\)[^,\n]*)*,[ \t]*(?:self\.)?(?P<coll>[a-z_][A-Za-z0-9_]*)[ \t]*\)",
            ),
            // `sorted(orders, key=lambda o: o.total())`, `max(self.orders, key=lambda o: …)`.
            pattern(
                r"(?-u:\b)(?:sorted|max|min)\([ \t]*(?:self\.)?(?P<coll>[a-z_][A-Za-z0-9_]*)[ \t]*,[ \t]*key[ \t]*=[ \t]*lambda[ \t]+(?P<item>[a-z_][A-Za-z0-9_]*)",
            ),
        ],
        queried: Vec::new(),
    });
    static RUST: LazyLock<Patterns> = LazyLock::new(|| Patterns {
        collections: vec![
            // `orders: Vec<Order>`, `orders: &[store::Order]`, `seen: &mut HashSet<Order>`.
            pattern(
                r"(?-u:\b)(?P<var>[a-z_][a-z0-9_]*)[ \t]*:[ \t]*&?(?:'[a-z_]+[ \t]+)?(?:mut[ \t]+)?(?:(?:Vec|VecDeque|HashSet|BTreeSet)<|\[)(?:[a-z_][a-z0-9_]*::)*(?P<ty>[A-Z][A-Za-z0-9_]*)",
            ),
        ],
        items: vec![
            // `for order in &orders`, `for o in self.orders.iter()`.
            pattern(
                r"(?-u:\b)for[ \t]+(?:&[ \t]*)?(?:mut[ \t]+)?(?P<item>[a-z_][a-z0-9_]*)[ \t]+in[ \t]+&?(?:mut[ \t]+)?(?:self\.)?(?P<coll>[a-z_][a-z0-9_]*)(?-u:\b)",
            ),
            // `orders.iter().map(|o| …)`, `orders.retain(|o| …)`.
            pattern(
                r"(?-u:\b)(?:self\.)?(?P<coll>[a-z_][a-z0-9_]*)(?:\.[a-z_]+\(\))*\.(?:map|filter|for_each|any|all|find|filter_map|flat_map|inspect|position|max_by_key|min_by_key|retain|sort_by_key|take_while|skip_while)\([ \t]*(?:move[ \t]+)?\|[ \t]*&*(?:mut[ \t]+)?(?P<item>[a-z_][a-z0-9_]*)",
            ),
        ],
        queried: Vec::new(),
    });
    static GO: LazyLock<Patterns> = LazyLock::new(|| Patterns {
        collections: vec![
            // `orders []*store.Order`, `var orders []store.Order`; a map's values,
            // `byID map[string]*store.Order`.
            pattern(
                r"(?-u:\b)(?P<var>[a-z_][A-Za-z0-9_]*)[ \t]+(?:\[\]|map\[[^\]\n]+\])\*?[a-z_][a-z0-9_]*\.(?P<ty>[A-Z][A-Za-z0-9_]*)",
            ),
        ],
        items: vec![
            // `for _, o := range orders`.
            pattern(
                r"(?-u:\b)for[ \t]+[a-z_][A-Za-z0-9_]*[ \t]*,[ \t]*(?P<item>[a-z_][A-Za-z0-9_]*)[ \t]*:?=[ \t]*range[ \t]+(?P<coll>[a-z_][A-Za-z0-9_]*)",
            ),
        ],
        queried: Vec::new(),
    });
    static RUBY: LazyLock<Patterns> = LazyLock::new(|| Patterns {
        collections: vec![
            // `@invoices = Invoice.where(paid: true)`, `items = Billing::Item.all`.
            pattern(
                r"@?(?-u:\b)(?P<var>[a-z_][A-Za-z0-9_]*)[ \t]*=[ \t]*(?:[A-Z][A-Za-z0-9_]*::)*(?P<ty>[A-Z][A-Za-z0-9_]*)\.(?:all|where|order|includes|joins|preload|eager_load|limit)(?-u:\b)",
            ),
        ],
        items: vec![
            // `@invoices.each do |invoice|`, `invoices.map { |i| … }`.
            pattern(&format!(
                r"@?(?-u:\b)(?P<coll>[a-z_][A-Za-z0-9_]*)\.(?:{RUBY_ITERATORS})(?:\([^()\n]*\))?[ \t]*(?:do|\{{)[ \t]*\|[ \t]*(?P<item>[a-z_][A-Za-z0-9_]*)"
            )),
        ],
        queried: vec![
            // `Invoice.where(paid: true).each do |invoice|`, `Invoice.find_each do |i|`.
            pattern(&format!(
                r"(?-u:\b)(?P<ty>[A-Z][A-Za-z0-9_]*)\.(?:(?:all|where|order|includes|joins|preload|eager_load|limit)(?:\([^()\n]*\))?\.)*(?:{RUBY_ITERATORS})(?:\([^()\n]*\))?[ \t]*(?:do|\{{)[ \t]*\|[ \t]*(?P<item>[a-z_][A-Za-z0-9_]*)"
            )),
        ],
    });
    Some(match lang {
        Lang::Java => &*JAVA,
        Lang::CSharp => &*CSHARP,
        Lang::JavaScript | Lang::TypeScript | Lang::Tsx | Lang::Component => &*SCRIPT,
        Lang::Python => &*PYTHON,
        Lang::Rust => &*RUST,
        Lang::Go => &*GO,
        Lang::Ruby => &*RUBY,
        _ => return None,
    })
}

/// Ruby's methods that give a block each item of a collection.
const RUBY_ITERATORS: &str = "each|map|select|reject|find|detect|each_with_index|flat_map|sum|sort_by|group_by|filter_map|find_each|each_with_object|any\\?|all\\?";

/// Java's and C#'s arrays: `Order[] orders`.
static ARRAY: LazyLock<Regex> = LazyLock::new(|| {
    pattern(r"(?-u:\b)(?P<ty>[A-Z][A-Za-z0-9_]*)\[\][ \t]+(?P<var>[a-z_][A-Za-z0-9_]*)[ \t]*[;=,)]")
});

/// A lambda's parameter over a collection, through `methods` (`orders.forEach(o -> …)`,
/// `orders.stream().map((o) -> …)`; the item's written type, if any, is skipped).
fn lambda(methods: &str, arrow: &str) -> Regex {
    pattern(&format!(
        r"(?-u:\b)(?:this\.)?(?P<coll>[A-Za-z_$][A-Za-z0-9_$]*)(?:\.[A-Za-z]+\(\))*\.(?:{methods})\([ \t]*(?:async[ \t]+)?\(?[ \t]*(?P<item>[A-Za-z_$][A-Za-z0-9_$]*)(?:[ \t]*:[ \t]*[A-Za-z_$][A-Za-z0-9_$<>\[\]]*)?[ \t]*\)?[ \t]*{arrow}"
    ))
}

#[cfg(test)]
mod tests {
    use super::super::{Imports, Packages};
    use super::*;

    /// For each language: a method called on a collection's item (a loop's variable, a
    /// lambda's parameter) is tied to where the element type comes from; the same on a
    /// variable that is no item is not.
    #[test]
    fn an_items_method_is_read_where_its_collections_element_type_comes_from() {
        let cases = [
            (
                "src/main/java/com/acme/api/Orders.java",
                "import com.acme.billing.Invoice;\nclass Orders {\n  private List<Invoice> invoices;\n  void f(Object other) {\n    for (var i : invoices) { i.total(); }\n    invoices.stream().map(x -> x.settle());\n    other.refund();\n  }\n}\n",
                Lang::Java,
                "src/main/java/com/acme/billing/Invoice.java",
            ),
            (
                "src/Api/Orders.cs",
                "using Acme.Billing;\nclass Orders {\n  private readonly IReadOnlyList<Invoice> _invoices;\n  void F(object other) {\n    foreach (var i in _invoices) { i.total(); }\n    _invoices.Where(x => x.settle());\n    other.refund();\n  }\n}\n",
                Lang::CSharp,
                "src/Billing/Invoice.cs",
            ),
            (
                "src/api/orders.ts",
                "import { Invoice } from '../billing/invoice'\nexport function f(invoices: Invoice[], other) {\n  for (const i of invoices) i.total()\n  invoices.forEach((x) => x.settle())\n  other.refund()\n}\n",
                Lang::TypeScript,
                "src/billing/invoice.ts",
            ),
            (
                "app/api/orders.py",
                "from app.billing.invoice import Invoice\n\ndef f(invoices: list[Invoice], other):\n    for i in invoices:\n        i.total()\n    return [x.settle() for x in invoices] + other.refund()\n",
                Lang::Python,
                "app/billing/invoice.py",
            ),
            (
                "src/api.rs",
                "use crate::billing::Invoice;\nfn f(invoices: &[Invoice], other: u8) {\n    for i in invoices { i.total(); }\n    invoices.iter().map(|x| x.settle());\n    other.refund();\n}\n",
                Lang::Rust,
                "src/billing.rs",
            ),
            (
                "app/controllers/invoices_controller.rb",
                "class InvoicesController\n  def index(other)\n    @invoices = Invoice.where(paid: true)\n    @invoices.each do |i|\n      i.total\n    end\n    Invoice.where(open: true).order(:id).find_each { |x| x.settle }\n    other.refund\n  end\nend\n",
                Lang::Ruby,
                "app/models/invoice.rb",
            ),
        ];
        let packages = Packages::default();
        let mut wrong = Vec::new();
        for (path, text, lang, file) in cases {
            let imports = Imports::read(path, text, lang, &packages);
            for (method, expected) in [("total", true), ("settle", true), ("refund", false)] {
                if (imports.tie(method, file, &packages) == Some(1)) != expected {
                    wrong.push(format!("{path}: {method}"));
                }
            }
        }
        assert!(wrong.is_empty(), "{wrong:#?}");
    }

    /// Go's range loop (over a slice or a map's values), Python's lambdas given a
    /// collection's items (`filter`, `sorted(…, key=…)`, `map` with a call's commas in
    /// its body), and a loop's variable whose type is written (`for (Invoice i :
    /// found())`: no collection declared).
    #[test]
    fn a_range_loops_item_and_a_written_item_type() {
        let packages = Packages::default();
        let go = "package api\nimport \"example.com/shop/internal/billing\"\nfunc F(invoices []*billing.Invoice, o Other) {\n\tfor _, i := range invoices {\n\t\ti.Settle()\n\t}\n\to.Refund()\n}\n";
        let imports = Imports::read("api/show.go", go, Lang::Go, &packages);
        let file = "internal/billing/invoice.go";
        assert_eq!(imports.tie("Settle", file, &packages), Some(1));
        assert_ne!(imports.tie("Refund", file, &packages), Some(1));
        let by_id = "package api\nimport \"example.com/shop/internal/billing\"\nfunc F(byID map[string]*billing.Invoice) {\n\tfor _, i := range byID {\n\t\ti.Settle()\n\t}\n}\n";
        let imports = Imports::read("api/show.go", by_id, Lang::Go, &packages);
        assert_eq!(
            imports.tie("Settle", file, &packages),
            Some(1),
            "a map's values"
        );
        // Python's lambdas given the items of a collection.
        let python = "from app.billing.invoice import Invoice\n\ndef f(invoices: list[Invoice], other):\n    paid = filter(lambda i: i.is_paid(), invoices)\n    top = sorted(invoices, key=lambda x: x.amount())\n    return map(lambda o: o.total(1, 2), invoices), other.refund()\n";
        let imports = Imports::read("app/api/orders.py", python, Lang::Python, &packages);
        let file = "app/billing/invoice.py";
        assert_eq!(imports.tie("is_paid", file, &packages), Some(1));
        assert_eq!(imports.tie("amount", file, &packages), Some(1));
        assert_eq!(imports.tie("total", file, &packages), Some(1));
        assert_ne!(imports.tie("refund", file, &packages), Some(1));
        let java = "import com.acme.billing.Invoice;\nclass A {\n  void f() { for (Invoice i : found()) { i.settle(); } }\n}\n";
        let imports = Imports::read("src/A.java", java, Lang::Java, &packages);
        assert_eq!(
            imports.tie("settle", "src/com/acme/billing/Invoice.java", &packages),
            Some(1)
        );
    }
}
