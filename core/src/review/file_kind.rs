//! Whether a changed file is code, data or prose, so a review leaves out the passes a
//! change gives nothing to do: a README fix has no behaviour to test and no code to
//! have a bug in, and each pass run on it is paid for and can only add noise.
//!
//! Unknown names count as code. A pass is left out only where every file the review
//! reads is known not to need it, so a file this list has never heard of (a `.bzl`, a
//! `Justfile`) keeps every pass.

/// What a file holds, as far as choosing passes goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum FileKind {
    /// Documentation and notices: read by people, run by nothing.
    Prose,
    /// Settings, fixtures and other structured data: run by something else, so it can be
    /// wrong or unsafe, but there is no behaviour of its own to test.
    Data,
    /// Anything else.
    Code,
}

/// `README.md` → prose, `deploy/values.yaml` → data, `src/lib.rs` → code.
pub fn kind_of(path: &str) -> FileKind {
    let name = path.rsplit('/').next().unwrap_or(path);
    let (stem, extension) = match name.rsplit_once('.') {
        Some((stem, extension)) if !stem.is_empty() => (stem, extension.to_ascii_lowercase()),
        _ => (name, String::new()),
    };
    // Text files some tools read as their own: CMake's build, pip's pins.
    if name == "CMakeLists.txt" {
        return FileKind::Code;
    }
    if extension == "txt" && (stem.starts_with("requirements") || stem.starts_with("constraints")) {
        return FileKind::Data;
    }
    match extension.as_str() {
        "md" | "markdown" | "mdown" | "mdx" | "rst" | "adoc" | "asciidoc" | "org" | "rdoc"
        | "textile" | "txt" => FileKind::Prose,
        "json" | "jsonc" | "json5" | "yaml" | "yml" | "toml" | "csv" | "tsv" | "ini" | "lock"
        | "xml" | "svg" | "properties" => FileKind::Data,
        "" if is_notice(stem) => FileKind::Prose,
        _ => FileKind::Code,
    }
}

/// The files a repository keeps at its root for people, whatever their extension.
fn is_notice(stem: &str) -> bool {
    [
        "README",
        "LICENSE",
        "LICENCE",
        "COPYING",
        "NOTICE",
        "AUTHORS",
        "CONTRIBUTORS",
        "CHANGELOG",
        "CHANGES",
        "HISTORY",
    ]
    .iter()
    .any(|notice| stem.eq_ignore_ascii_case(notice))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documentation_is_prose_settings_are_data_and_the_rest_is_code() {
        use FileKind::*;
        for (path, kind) in [
            ("README.md", Prose),
            ("docs/guide/Install.MD", Prose),
            ("docs/api.rst", Prose),
            ("CHANGES.txt", Prose),
            ("LICENSE", Prose),
            ("packages/ui/CHANGELOG", Prose),
            ("book/src/intro.mdx", Prose),
            (".parley.yml", Data),
            (".github/workflows/ci.yaml", Data),
            ("Cargo.toml", Data),
            ("Cargo.lock", Data),
            ("tests/fixtures/user.json", Data),
            ("pom.xml", Data),
            ("requirements-dev.txt", Data),
            ("docs/constraints.txt", Data),
            ("src/CMakeLists.txt", Code),
            ("src/lib.rs", Code),
            ("Makefile", Code),
            ("Dockerfile", Code),
            ("tools/build.bzl", Code),
            ("scripts/release", Code),
            (".env", Code),
            ("README.sh", Code),
            ("src/readme.rs", Code),
        ] {
            assert_eq!(kind_of(path), kind, "{path}");
        }
    }
}
