//! How the context's pieces are ranked when the budget cannot hold them all, through the
//! real assembly on a real index.

use parley_code::{CodeIndex, Snapshot};
use parley_core::context::assemble;
use parley_core::ports::github::FileStatus;
use parley_core::review::diff::{Patch, parse_hunks};
use parley_core::review::inputs::{InputFile, estimate_tokens};

fn long_function(name: &str) -> String {
    let body: String = (0..30).map(|n| format!("    let v{n} = {n};\n")).collect();
    format!("pub fn {name}() -> u32 {{\n{body}    0\n}}\n")
}

/// `load` defined in three modules, `other` in one; `src/edit.rs`'s second line is `call`.
fn code_base(call: &str) -> CodeIndex {
    let mut snapshot = Snapshot::default();
    for module in ["x1", "x2", "x3"] {
        snapshot
            .files
            .insert(format!("src/{module}.rs"), long_function("load"));
    }
    snapshot
        .files
        .insert("src/other.rs".into(), long_function("other"));
    snapshot.files.insert(
        "src/edit.rs".into(),
        format!("pub fn run() -> u32 {{\n{call}\n}}\n"),
    );
    CodeIndex::build(snapshot)
}

fn edited(added: &str) -> InputFile {
    let raw = format!("@@ -1,2 +1,3 @@\n pub fn run() -> u32 {{\n+{added}\n }}");
    let patch: Patch = parse_hunks(&raw).expect("a patch");
    InputFile {
        path: "src/edit.rs".into(),
        status: FileStatus::Modified,
        tokens: estimate_tokens(&raw),
        raw_patch: raw,
        patch,
    }
}

/// With room for two definitions, the second is the other name's only one, not a third
/// module's `load`: every name a changed line uses gets its nearest definition before any
/// name gets more.
#[test]
fn every_name_gets_a_definition_before_any_gets_its_others() {
    let alone = "    other()";
    let one = assemble(&code_base(alone), &[edited(alone)], &[], 50_000);
    assert_eq!(one.used.len(), 1, "{:#?}", one.used);
    let room_for_two = 2 * estimate_tokens(&one.rendered);

    let both = "    load() + other()";
    let context = assemble(&code_base(both), &[edited(both)], &[], room_for_two);
    let defined = |name: &str| {
        context
            .used
            .iter()
            .filter(|u| u.contains(&format!("definition of `{name}`")))
            .count()
    };
    assert_eq!(defined("other"), 1, "{:#?}", context.used);
    assert_eq!(defined("load"), 1, "{:#?}", context.used);
    assert!(context.left_out >= 2, "the other `load`s did not fit");
}

/// A C# change that reads a property and calls a method, with room for one definition:
/// the method's, as the property only is read. With room for both, both.
#[test]
fn a_method_called_comes_before_a_property_read() {
    let getter: String = (0..20)
        .map(|n| format!("            var g{n} = {n};\n"))
        .collect();
    let body: String = (0..20)
        .map(|n| format!("        var b{n} = {n};\n"))
        .collect();
    let mut snapshot = Snapshot::default();
    snapshot.files.insert(
        "src/Aaa.cs".into(),
        format!("public class Aaa {{\n    public int Total {{\n        get {{\n{getter}            return 0;\n        }}\n    }}\n}}\n"),
    );
    snapshot.files.insert(
        "src/Zzz.cs".into(),
        format!("public static class Zzz {{\n    public static int Load(int x) {{\n{body}        return x;\n    }}\n}}\n"),
    );
    // The read first: ranked alike, it would be packed first.
    let (read, call) = (
        "        var t = order.Total;",
        "        return Zzz.Load(t);",
    );
    snapshot.files.insert(
        "src/Edit.cs".into(),
        format!("public class Edit {{\n    int Run(Aaa order) {{\n{read}\n{call}\n    }}\n}}\n"),
    );
    let index = CodeIndex::build(snapshot);
    let raw = format!(
        "@@ -1,3 +1,5 @@\n public class Edit {{\n     int Run(Aaa order) {{\n+{read}\n+{call}\n     }}"
    );
    let patch: Patch = parse_hunks(&raw).expect("a patch");
    let file = InputFile {
        path: "src/Edit.cs".into(),
        status: FileStatus::Modified,
        tokens: estimate_tokens(&raw),
        raw_patch: raw,
        patch,
    };
    let defined = |budget: usize| {
        let context = assemble(&index, std::slice::from_ref(&file), &[], budget);
        ["Load", "Total"].map(|name| {
            context
                .used
                .iter()
                .any(|u| u.contains(&format!("definition of `{name}`")))
        })
    };
    let all = assemble(&index, std::slice::from_ref(&file), &[], 50_000);
    let one = estimate_tokens(&all.rendered) * 2 / 3;
    assert_eq!(defined(50_000), [true, true], "{:#?}", all.used);
    assert_eq!(defined(one), [true, false], "the call first");
}

/// `load` defined in six modules of another directory, none imported: the context shows
/// no `load`, as which one is meant cannot be told, and `other`, defined in one, as it is.
#[test]
fn a_name_many_files_define_elsewhere_is_not_shown() {
    let mut snapshot = Snapshot::default();
    for module in 1..=6 {
        snapshot
            .files
            .insert(format!("src/far/x{module}.rs"), long_function("load"));
    }
    snapshot
        .files
        .insert("src/far/other.rs".into(), long_function("other"));
    let call = "    load() + other()";
    snapshot.files.insert(
        "src/edit.rs".into(),
        format!("pub fn run() -> u32 {{\n{call}\n}}\n"),
    );
    let context = assemble(&CodeIndex::build(snapshot), &[edited(call)], &[], 50_000);
    let shown: Vec<&String> = context
        .used
        .iter()
        .filter(|u| u.contains("definition of"))
        .collect();
    assert_eq!(shown.len(), 1, "{shown:#?}");
    assert!(shown[0].starts_with("src/far/other.rs:"), "{shown:#?}");
}
