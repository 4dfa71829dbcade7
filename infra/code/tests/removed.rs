//! What a change removes, through the real context assembly on a real index: the places
//! that still use a removed name are shown first, a few per name and within their share
//! of the budget, so the definitions a changed line uses still fit.

use parley_code::{CodeIndex, Snapshot};
use parley_core::context::assemble;
use parley_core::ports::github::FileStatus;
use parley_core::review::diff::{Patch, parse_hunks};
use parley_core::review::inputs::{InputFile, estimate_tokens};

/// `count` files, each a 40-line function that still calls `gone_fn`; `helper`, defined
/// once; the edited file, whose added line calls `helper`.
fn code_base(count: usize) -> CodeIndex {
    let mut snapshot = Snapshot::default();
    for i in 0..count {
        let body: String = (0..38).map(|n| format!("    let v{n} = {n};\n")).collect();
        snapshot.files.insert(
            format!("src/caller{i}.rs"),
            format!("pub fn caller{i}() {{\n    gone_fn();\n{body}}}\n"),
        );
    }
    snapshot.files.insert(
        "src/helper.rs".into(),
        "/// Returns the answer.\npub fn helper() -> u32 {\n    42\n}\n".into(),
    );
    snapshot.files.insert(
        "src/edit.rs".into(),
        "pub fn run() -> u32 {\n    helper()\n}\n".into(),
    );
    CodeIndex::build(snapshot)
}

fn edited(patch: &str) -> InputFile {
    let parsed: Patch = parse_hunks(patch).expect("a patch");
    InputFile {
        path: "src/edit.rs".into(),
        status: FileStatus::Modified,
        raw_patch: patch.into(),
        patch: parsed,
        tokens: estimate_tokens(patch),
    }
}

#[test]
fn a_removed_name_still_called_is_shown_a_few_times_within_its_share() {
    let index = code_base(10);
    let change =
        edited("@@ -1,3 +1,3 @@\n pub fn run() -> u32 {\n-fn gone_fn() {}\n+    helper()\n }");
    let budget = 1_500;
    let context = assemble(&index, &[change], &[], budget);
    let still: Vec<&String> = context
        .used
        .iter()
        .filter(|u| u.contains("still uses `gone_fn`"))
        .collect();
    assert_eq!(still.len(), context.still_used);
    assert!(
        (1..=3).contains(&still.len()),
        "a few places prove it is used: {:#?}",
        context.used
    );
    assert!(
        context.used.iter().any(|u| u.starts_with("src/helper.rs:")),
        "the definition the changed line uses still fits: {:#?}",
        context.used
    );
    let shown_first = context
        .rendered
        .split("\n#### ")
        .skip(1)
        .take_while(|piece| piece.contains("still uses `gone_fn`"))
        .map(estimate_tokens)
        .sum::<usize>();
    assert!(
        shown_first <= budget / 3,
        "{shown_first} tokens of {budget}"
    );
}

#[test]
fn a_name_defined_again_elsewhere_is_not_gone() {
    let index = code_base(2);
    // `helper` leaves src/edit.rs, but src/helper.rs still defines it.
    let change = edited("@@ -1,3 +1,2 @@\n pub fn run() -> u32 {\n-fn helper() -> u32 { 1 }\n }");
    let context = assemble(&index, &[change], &[], 6_000);
    assert_eq!(context.still_used, 0, "{:#?}", context.used);
}

#[test]
fn a_deleted_files_definitions_count_too() {
    let index = code_base(2);
    let deleted = parse_hunks("@@ -1,1 +0,0 @@\n-pub fn gone_fn() {}").expect("a patch");
    let context = assemble(&index, &[], &[("src/gone.rs", &deleted)], 6_000);
    assert_eq!(context.still_used, 2, "{:#?}", context.used);
}

/// Definitions a keyword alone does not name: a JavaScript function held by a `const`, a
/// package-private Java method, a Ruby class method (`def self.`), an internal C# method,
/// a C function whose body opens on the next line, a C macro, a C++ method defined out of
/// its class. Each is removed; the unchanged caller is shown.
#[test]
fn functions_held_by_variables_and_bare_methods_are_looked_up() {
    let mut snapshot = Snapshot::default();
    snapshot.files.insert(
        "web/cart.js".into(),
        "export function total(items) {\n  return formatPrice(items.length);\n}\n".into(),
    );
    snapshot.files.insert(
        "src/Cart.java".into(),
        "class Cart {\n  String label(long cents) {\n    return Money.render(cents);\n  }\n}\n"
            .into(),
    );
    snapshot.files.insert(
        "app/cart.rb".into(),
        "class Cart\n  def label\n    Money.cents_label price\n  end\nend\n".into(),
    );
    snapshot.files.insert(
        "src/Checkout.cs".into(),
        "class Checkout {\n  decimal Total(decimal p) => Pricing.RoundUp(p);\n}\n".into(),
    );
    snapshot.files.insert(
        "src/server.c".into(),
        "int serve(const char *buf) {\n    return parse_header(buf, CLAMP(strlen(buf)));\n}\n"
            .into(),
    );
    snapshot.files.insert(
        "app/run.cc".into(),
        "int run() {\n  return db::Table::Open(3)->size();\n}\n".into(),
    );
    let index = CodeIndex::build(snapshot);
    for (path, removed, name) in [
        (
            "web/money.js",
            "-export const formatPrice = (cents) => {",
            "formatPrice",
        ),
        (
            "src/Money.java",
            "-  static String render(long cents) {",
            "render",
        ),
        (
            "app/money.rb",
            "-  def self.cents_label(cents)",
            "cents_label",
        ),
        (
            "src/Pricing.cs",
            "-    internal static decimal RoundUp(decimal price) {",
            "RoundUp",
        ),
        (
            "src/http.c",
            "-static int parse_header(const char *buf, size_t len)",
            "parse_header",
        ),
        (
            "src/util.h",
            "-#define CLAMP(x) ((x) > 64 ? 64 : (x))",
            "CLAMP",
        ),
        ("db/table.cc", "-Table* Table::Open(int n)", "Open"),
    ] {
        let deleted = parse_hunks(&format!("@@ -1,1 +0,0 @@\n{removed}")).expect("a patch");
        let context = assemble(&index, &[], &[(path, &deleted)], 6_000);
        assert_eq!(context.still_used, 1, "{name}: {:#?}", context.used);
        assert!(
            context
                .used
                .iter()
                .any(|u| u.contains(&format!("still uses `{name}`"))),
            "{:#?}",
            context.used
        );
    }
}
