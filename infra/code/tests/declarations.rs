//! A change to a C prototype, a C++ method declared in its class, a Rust trait's method
//! signature or a Go interface's method changes the function as much as a change to its
//! body: through the real assembly on a real index, its callers reach the context, and
//! its body is what stands as its definition.

use parley_code::{CodeIndex, Snapshot};
use parley_core::context::assemble;
use parley_core::ports::code::Codebase;
use parley_core::ports::github::FileStatus;
use parley_core::review::diff::{Patch, parse_hunks};
use parley_core::review::inputs::{InputFile, estimate_tokens};

/// The code base of `files` at the head and the context of `edits` (path, patch) to it,
/// checked to show each of `callers` (a piece's path, lines and label); the index and
/// the pieces used.
fn context_shows_callers(
    files: &[(&str, &str)],
    edits: &[(&str, &str)],
    callers: &[&str],
) -> (CodeIndex, Vec<String>) {
    let mut snapshot = Snapshot::default();
    for (path, text) in files {
        snapshot.files.insert(path.to_string(), text.to_string());
    }
    let index = CodeIndex::build(snapshot);
    let edits: Vec<InputFile> = edits
        .iter()
        .map(|(path, raw)| {
            let patch: Patch = parse_hunks(raw).expect("a patch");
            InputFile {
                path: path.to_string(),
                status: FileStatus::Modified,
                tokens: estimate_tokens(raw),
                raw_patch: raw.to_string(),
                patch,
            }
        })
        .collect();
    let context = assemble(&index, &edits, &[], 6_000);
    for caller in callers {
        assert!(
            context.used.iter().any(|u| u.starts_with(caller)),
            "{caller}: {:#?}",
            context.used
        );
    }
    (index, context.used)
}

#[test]
fn a_changed_prototype_brings_its_callers() {
    let files = [
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
    ];
    let edits = [
        (
            "src/users.h",
            "@@ -1,2 +1,2 @@\n struct user;\n-struct user *find_user(const char *name);\n+struct user *find_user(const char *name, int flags);",
        ),
        (
            "db/table.h",
            "@@ -1,4 +1,4 @@\n class Table {\n  public:\n-  Status Get(const Slice& key) const;\n+  Status Get(const Slice& key, bool fill) const;\n };",
        ),
    ];
    let callers = [
        "src/greet.c:2-4 (uses `find_user`",
        "app/run.cc:1-3 (uses `Get`",
    ];
    let (_, used) = context_shows_callers(&files, &edits, &callers);
    assert!(
        !used.iter().any(|u| u.contains("definition of `find_user`")),
        "the changed line names no call: {used:#?}"
    );
}

/// A Rust trait's method signature and a Go interface's method are declarations too: a
/// changed signature brings the method's callers, and is not read as a method removed.
#[test]
fn a_changed_trait_or_interface_method_brings_its_callers() {
    let files = [
        (
            "src/store.rs",
            "pub trait Store {\n    fn load(&self, id: u64, fresh: bool) -> Option<User>;\n}\n",
        ),
        (
            "src/api.rs",
            "pub fn show(store: &dyn Store) -> String {\n    store.load(7).map(render).unwrap_or_default()\n}\n",
        ),
        (
            "store/store.go",
            "package store\n\ntype Store interface {\n\tLoad(id string, fresh bool) (*User, error)\n}\n",
        ),
        (
            "api/show.go",
            "package api\n\nfunc Show(s store.Store) string {\n\tu, _ := s.Load(\"7\")\n\treturn u.Name\n}\n",
        ),
    ];
    let edits = [
        (
            "src/store.rs",
            "@@ -1,3 +1,3 @@\n pub trait Store {\n-    fn load(&self, id: u64) -> Option<User>;\n+    fn load(&self, id: u64, fresh: bool) -> Option<User>;\n }",
        ),
        (
            "store/store.go",
            "@@ -3,3 +3,3 @@\n type Store interface {\n-\tLoad(id string) (*User, error)\n+\tLoad(id string, fresh bool) (*User, error)\n }",
        ),
    ];
    let callers = [
        "src/api.rs:1-3 (uses `load`",
        "api/show.go:3-6 (uses `Load`",
    ];
    let (index, used) = context_shows_callers(&files, &edits, &callers);
    assert!(
        !used.iter().any(|u| u.contains("which the change removes")),
        "{used:#?}"
    );
    assert!(
        index.definitions("load").is_empty(),
        "a signature is no definition"
    );
}
