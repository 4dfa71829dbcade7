//! A change to a C prototype or to a C++ method declared in its class changes the
//! function as much as a change to its body: through the real assembly on a real index,
//! its callers reach the context, and its body is what stands as its definition.

use parley_code::{CodeIndex, Snapshot};
use parley_core::context::assemble;
use parley_core::ports::github::FileStatus;
use parley_core::review::diff::{Patch, parse_hunks};
use parley_core::review::inputs::{InputFile, estimate_tokens};

fn edited(path: &str, raw: &str) -> InputFile {
    let patch: Patch = parse_hunks(raw).expect("a patch");
    InputFile {
        path: path.into(),
        status: FileStatus::Modified,
        tokens: estimate_tokens(raw),
        raw_patch: raw.into(),
        patch,
    }
}

#[test]
fn a_changed_prototype_brings_its_callers() {
    let mut snapshot = Snapshot::default();
    for (path, text) in [
        (
            "src/users.h",
            "struct user;\nstruct user *find_user(const char *name, int flags);\n",
        ),
        (
            "src/users.c",
            "#include \"users.h\"\nstruct user *find_user(const char *name, int flags) {\n    return lookup(name, flags);\n}\n",
        ),
        (
            "src/greet.c",
            "#include \"users.h\"\nint greet(const char *name) {\n    return show(find_user(name));\n}\n",
        ),
        (
            "db/table.h",
            "class Table {\n public:\n  Status Get(const Slice& key, bool fill) const;\n};\n",
        ),
        (
            "app/run.cc",
            "int run(const Table& t) {\n  return t.Get(key).ok();\n}\n",
        ),
    ] {
        snapshot.files.insert(path.into(), text.into());
    }
    let index = CodeIndex::build(snapshot);
    let prototype = edited(
        "src/users.h",
        "@@ -1,2 +1,2 @@\n struct user;\n-struct user *find_user(const char *name);\n+struct user *find_user(const char *name, int flags);",
    );
    let method = edited(
        "db/table.h",
        "@@ -1,4 +1,4 @@\n class Table {\n  public:\n-  Status Get(const Slice& key) const;\n+  Status Get(const Slice& key, bool fill) const;\n };",
    );
    let context = assemble(&index, &[prototype, method], &[], 6_000);
    for caller in [
        "src/greet.c:2-4 (calls `find_user`",
        "app/run.cc:1-3 (calls `Get`",
    ] {
        assert!(
            context.used.iter().any(|u| u.starts_with(caller)),
            "{caller}: {:#?}",
            context.used
        );
    }
    assert!(
        !context
            .used
            .iter()
            .any(|u| u.contains("definition of `find_user`")),
        "the changed line names no call: {:#?}",
        context.used
    );
}
