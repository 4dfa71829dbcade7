//! The language of a file, from its name, for the same-language boost: a Rust change is
//! better served by Rust snippets than by a YAML file that shares its words.

/// `src/main.rs` → `rust`. Unknown extensions have no language (no boost, no penalty).
pub fn language_of(path: &str) -> Option<&'static str> {
    let name = path.rsplit('/').next().unwrap_or(path);
    match name {
        "Dockerfile" | "Containerfile" => return Some("dockerfile"),
        "Makefile" | "GNUmakefile" => return Some("make"),
        _ => {}
    }
    let (_, extension) = name.rsplit_once('.')?;
    let language = match extension.to_ascii_lowercase().as_str() {
        "rs" => "rust",
        "py" | "pyi" => "python",
        "go" => "go",
        "js" | "mjs" | "cjs" | "jsx" => "javascript",
        "ts" | "mts" | "cts" | "tsx" => "typescript",
        "java" => "java",
        "kt" | "kts" => "kotlin",
        "scala" => "scala",
        "swift" => "swift",
        "rb" => "ruby",
        "php" => "php",
        "cs" => "csharp",
        "fs" | "fsx" => "fsharp",
        "c" | "h" => "c",
        "cc" | "cpp" | "cxx" | "c++" | "hpp" | "hh" | "hxx" | "h++" | "ipp" | "tpp" | "inl" => {
            "cpp"
        }
        "m" | "mm" => "objective-c",
        "ex" | "exs" => "elixir",
        "erl" | "hrl" => "erlang",
        "hs" => "haskell",
        "ml" | "mli" => "ocaml",
        "clj" | "cljs" => "clojure",
        "lua" => "lua",
        "dart" => "dart",
        "r" => "r",
        "jl" => "julia",
        "zig" => "zig",
        "sh" | "bash" | "zsh" => "shell",
        "ps1" => "powershell",
        "sql" => "sql",
        "html" | "htm" => "html",
        "css" | "scss" | "sass" | "less" => "css",
        "vue" => "vue",
        "svelte" => "svelte",
        "astro" => "astro",
        "tf" | "hcl" => "terraform",
        "proto" => "protobuf",
        "yml" | "yaml" => "yaml",
        "toml" => "toml",
        "json" => "json",
        "xml" => "xml",
        "md" | "markdown" => "markdown",
        _ => return None,
    };
    Some(language)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn from_extension_and_well_known_names() {
        assert_eq!(language_of("core/src/lib.rs"), Some("rust"));
        assert_eq!(language_of("web/App.TSX"), Some("typescript"));
        assert_eq!(language_of("deploy/Dockerfile"), Some("dockerfile"));
        assert_eq!(language_of("has spaces/t.sql"), Some("sql"));
        assert_eq!(language_of("include/fmt/format-inl.h"), Some("c"));
        assert_eq!(language_of("include/fmt/format.inl"), Some("cpp"));
        assert_eq!(language_of("src/pages/index.astro"), Some("astro"));
        assert_eq!(language_of("LICENSE"), None);
        assert_eq!(language_of("archive.xyz"), None);
    }
}
