//! Compiles the eleven grammars Parley reads code with, each with its parse tables taken out
//! of the C source and stored deflated beside it: the tables are about 17 MB of rodata
//! and deflate to 1.3 MB, and every worker bootstrap carries all eleven.
//!
//! For each grammar:
//! 1. find the grammar crate's sources (`cargo metadata`, see `grammar_crate_dirs`: the
//!    crate is a dependency, so cargo has them on disk; no copy lives in this repository);
//! 2. compile a small host program that includes the untouched `parser.c` and writes out
//!    the bytes of every pointer-free table, so no C initializer is parsed here;
//! 3. deflate those bytes into `OUT_DIR/<id>.tables`;
//! 4. write `OUT_DIR/<id>.c`: the same `parser.c` with each of those tables declared
//!    uninitialised (in .bss, which costs nothing in the file) and sized by a static
//!    assertion against the host's bytes, plus a function handing out their addresses;
//! 5. compile that and the grammar's scanner for the target, with the exported symbols
//!    prefixed `parley_` so they can never clash with the grammar crate's own.
//!
//! `src/lib.rs` inflates a grammar's tables into place the first time it is asked for.
//! Only integer and bool tables move, whose layout is the same on every little-endian
//! target Parley builds for (checked below, and the assertions fail the build otherwise).

use std::collections::HashMap;
use std::env;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

/// (id, crate, directory of parser.c inside the crate, the language function's name)
const GRAMMARS: &[(&str, &str, &str, &str)] = &[
    ("rust", "tree-sitter-rust", "src", "tree_sitter_rust"),
    ("python", "tree-sitter-python", "src", "tree_sitter_python"),
    (
        "typescript",
        "tree-sitter-typescript",
        "typescript/src",
        "tree_sitter_typescript",
    ),
    (
        "tsx",
        "tree-sitter-typescript",
        "tsx/src",
        "tree_sitter_tsx",
    ),
    ("go", "tree-sitter-go", "src", "tree_sitter_go"),
    ("java", "tree-sitter-java", "src", "tree_sitter_java"),
    ("ruby", "tree-sitter-ruby", "src", "tree_sitter_ruby"),
    (
        "csharp",
        "tree-sitter-c-sharp",
        "src",
        "tree_sitter_c_sharp",
    ),
    ("c", "tree-sitter-c", "src", "tree_sitter_c"),
    ("cpp", "tree-sitter-cpp", "src", "tree_sitter_cpp"),
    // PHP with the HTML around it (`<?php … ?>` in a template): the crate's `php` grammar,
    // not `php_only`, which reads a file that has no opening tag.
    ("php", "tree-sitter-php", "php/src", "tree_sitter_php"),
];

const SCANNER_FUNCTIONS: &[&str] = &[
    "_external_scanner_create",
    "_external_scanner_destroy",
    "_external_scanner_scan",
    "_external_scanner_serialize",
    "_external_scanner_deserialize",
];

/// Globals a grammar's scanner defines without `static`, by grammar: prefixed like its
/// functions, or they clash with the grammar crate's own copy (which the tests link).
const SCANNER_GLOBALS: &[(&str, &str)] = &[("ruby", "NON_IDENTIFIER_CHARS")];

type Error = Box<dyn std::error::Error>;

fn main() -> Result<(), Error> {
    println!("cargo:rerun-if-changed=build.rs");
    let out = PathBuf::from(env::var("OUT_DIR")?);
    let host_endian = if cfg!(target_endian = "little") {
        "little"
    } else {
        "big"
    };
    let target_endian = env::var("CARGO_CFG_TARGET_ENDIAN")?;
    if target_endian != host_endian {
        return Err(format!(
            "the parse tables are taken from a {host_endian}-endian host build and cannot \
             be stored for a {target_endian}-endian target"
        )
        .into());
    }
    let crates = grammar_crate_dirs(&out)?;
    for &(id, krate, dir, symbol) in GRAMMARS {
        let root = crates
            .get(krate)
            .ok_or_else(|| format!("{krate} is not among this crate's dependencies"))?;
        let src = root.join(dir);
        build_grammar(&out, id, &src, symbol)?;
    }
    Ok(())
}

fn build_grammar(out: &Path, id: &str, src: &Path, symbol: &str) -> Result<(), Error> {
    let parser = src.join("parser.c");
    let scanner = src.join("scanner.c");
    println!("cargo:rerun-if-changed={}", parser.display());
    println!("cargo:rerun-if-changed={}", scanner.display());
    let text = fs::read_to_string(&parser)?;
    let tables = find_tables(&text);
    if !tables.iter().any(|t| t.name == "ts_parse_table") {
        return Err(format!("{}: no ts_parse_table found", parser.display()).into());
    }

    let sizes = dump_tables(out, id, &parser, &scanner, &tables)?;
    let mut stripped = String::with_capacity(text.len() / 4);
    let mut at = 0;
    for (table, size) in tables.iter().zip(&sizes) {
        stripped.push_str(&text[at..table.start]);
        let dims = if table.dims == "[]" {
            format!("[{size} / sizeof({})]", table.ty)
        } else {
            table.dims.clone()
        };
        stripped.push_str(&format!(
            "static {} {}{dims};\n_Static_assert(sizeof({}) == {size}, \"{} differs from the host's\");\n",
            table.ty, table.name, table.name, table.name
        ));
        at = table.end;
    }
    stripped.push_str(&text[at..]);
    stripped.push_str(&format!(
        "\nvoid *parley_grammar_{id}_table(unsigned index, unsigned long *len) {{\n  switch (index) {{\n"
    ));
    for (i, (table, size)) in tables.iter().zip(&sizes).enumerate() {
        stripped.push_str(&format!(
            "  case {i}: *len = {size}; return (void *){};\n",
            table.name
        ));
    }
    stripped.push_str("  default: *len = 0; return 0;\n  }\n}\n");
    let generated = out.join(format!("{id}.c"));
    fs::write(&generated, stripped)?;

    let mut build = cc::Build::new();
    build
        .std("c11")
        .include(src)
        .file(&generated)
        .warnings(false)
        .define(symbol, Some(format!("parley_{symbol}").as_str()));
    if scanner.exists() {
        build.file(&scanner);
    }
    for function in SCANNER_FUNCTIONS {
        let name = format!("{symbol}{function}");
        build.define(&name, Some(format!("parley_{name}").as_str()));
    }
    for (_, global) in SCANNER_GLOBALS.iter().filter(|(grammar, _)| *grammar == id) {
        build.define(global, Some(format!("parley_{id}_{global}").as_str()));
    }
    build.compile(&format!("parley-grammar-{id}"));
    Ok(())
}

/// A top-level table declaration in a generated `parser.c`: `static [const] TYPE NAME[...]
/// = {` up to the `};` that closes it at the start of a line.
struct Table {
    ty: String,
    name: String,
    dims: String,
    start: usize,
    end: usize,
}

/// Pointer-free tables only: `ts_symbol_names` and `ts_field_names` hold addresses, and
/// the `TSLanguage` itself is what points at the rest.
fn find_tables(text: &str) -> Vec<Table> {
    let mut tables = Vec::new();
    let mut offset = 0;
    while offset < text.len() {
        let line_end = text[offset..]
            .find('\n')
            .map_or(text.len(), |i| offset + i + 1);
        let line = text[offset..line_end].trim_end();
        if let Some(table) = table_head(line) {
            let close = text[line_end..].find("\n};\n").map(|i| line_end + i + 4);
            if let Some(end) = close {
                tables.push(Table {
                    start: offset,
                    end,
                    ..table
                });
                offset = end;
                continue;
            }
        }
        offset = line_end;
    }
    tables
}

fn table_head(line: &str) -> Option<Table> {
    let rest = line.strip_prefix("static ")?.strip_suffix(" = {")?;
    let rest = rest.strip_prefix("const ").unwrap_or(rest);
    if rest.contains('*') || rest.contains('(') {
        return None;
    }
    let (ty, declarator) = rest.split_once(' ')?;
    if ty == "TSLanguage" {
        return None;
    }
    let bracket = declarator.find('[')?;
    let (name, dims) = declarator.split_at(bracket);
    let ident = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    (ident(ty) && ident(name)).then(|| Table {
        ty: ty.to_string(),
        name: name.to_string(),
        dims: dims.to_string(),
        start: 0,
        end: 0,
    })
}

/// Builds and runs the host program that writes every table's bytes; returns their sizes
/// in order and leaves the deflated bytes in `OUT_DIR/<id>.tables`.
fn dump_tables(
    out: &Path,
    id: &str,
    parser: &Path,
    scanner: &Path,
    tables: &[Table],
) -> Result<Vec<usize>, Error> {
    let mut program = format!("#include \"{}\"\n#include <stdio.h>\n", parser.display());
    program.push_str("int main(int argc, char **argv) {\n  if (argc != 2) return 2;\n");
    program.push_str("  FILE *f = fopen(argv[1], \"wb\");\n  if (!f) return 3;\n");
    for table in tables {
        let name = &table.name;
        program.push_str(&format!(
            "  if (fwrite({name}, 1, sizeof({name}), f) != sizeof({name})) return 4;\n  printf(\"%lu\\n\", (unsigned long)sizeof({name}));\n"
        ));
    }
    program.push_str("  return fclose(f) == 0 ? 0 : 5;\n}\n");
    let source = out.join(format!("{id}-dump.c"));
    fs::write(&source, program)?;

    let host = env::var("HOST")?;
    let compiler = cc::Build::new()
        .target(&host)
        .host(&host)
        .opt_level(0)
        .cargo_metadata(false)
        .warnings(false)
        .get_compiler();
    let exe = out.join(format!("{id}-dump"));
    let mut compile = compiler.to_command();
    compile
        .arg("-std=c11")
        .arg("-w")
        .arg("-I")
        .arg(parser.parent().unwrap_or(Path::new(".")))
        .arg("-o")
        .arg(&exe)
        .arg(&source);
    if scanner.exists() {
        compile.arg(scanner);
    }
    let status = compile.status()?;
    if !status.success() {
        return Err(format!("compiling the table dump for {id} failed: {status}").into());
    }
    let raw = out.join(format!("{id}.raw"));
    let run = Command::new(&exe).arg(&raw).output()?;
    if !run.status.success() {
        return Err(format!("the table dump for {id} failed: {}", run.status).into());
    }
    let sizes = String::from_utf8(run.stdout)?
        .lines()
        .map(str::parse::<usize>)
        .collect::<Result<Vec<_>, _>>()?;
    let bytes = fs::read(&raw)?;
    if sizes.len() != tables.len() || sizes.iter().sum::<usize>() != bytes.len() {
        return Err(format!("the table dump for {id} is incomplete").into());
    }
    let mut deflate = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::best());
    deflate.write_all(&bytes)?;
    fs::write(out.join(format!("{id}.tables")), deflate.finish()?)?;
    fs::remove_file(&raw)?;
    Ok(sizes)
}

/// Where cargo keeps each grammar crate's sources, by crate name.
///
/// `cargo metadata` on the workspace would need every package of every workspace member
/// on disk (dev-dependencies, other platforms' crates), which a build of one function
/// from a fresh clone never downloads. So it is asked about a throwaway package in
/// `OUT_DIR` that depends on the grammar crates alone, pinned by a copy of the workspace's
/// Cargo.lock, offline: the build that runs this has just fetched exactly those.
fn grammar_crate_dirs(out: &Path) -> Result<HashMap<String, PathBuf>, Error> {
    let crates: Vec<&str> = {
        let mut names: Vec<&str> = GRAMMARS.iter().map(|g| g.1).collect();
        names.sort_unstable();
        names.dedup();
        names
    };
    let dir = out.join("grammar-sources");
    fs::create_dir_all(&dir)?;
    let mut manifest = String::from(
        "[package]\nname = \"grammar-sources\"\nversion = \"0.0.0\"\nedition = \"2021\"\n\
         [lib]\npath = \"lib.rs\"\n[workspace]\n[dependencies]\n",
    );
    for name in &crates {
        manifest.push_str(&format!("{name} = \"*\"\n"));
    }
    fs::write(dir.join("Cargo.toml"), manifest)?;
    fs::write(dir.join("lib.rs"), "")?;
    let manifest_dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR")?);
    if let Some(lock) = manifest_dir
        .ancestors()
        .map(|d| d.join("Cargo.lock"))
        .find(|lock| lock.is_file())
    {
        println!("cargo:rerun-if-changed={}", lock.display());
        fs::copy(lock, dir.join("Cargo.lock"))?;
    }
    let output = Command::new(env::var("CARGO")?)
        .args(["metadata", "--format-version", "1", "--offline"])
        .args(["--filter-platform", &env::var("HOST")?])
        .arg("--manifest-path")
        .arg(dir.join("Cargo.toml"))
        .output()?;
    if !output.status.success() {
        return Err(format!(
            "cargo metadata (for the grammar crates' sources) failed: {}",
            String::from_utf8_lossy(&output.stderr)
        )
        .into());
    }
    let metadata: serde_json::Value = serde_json::from_slice(&output.stdout)?;
    let mut dirs = HashMap::new();
    for package in metadata["packages"].as_array().ok_or("no packages")? {
        if let (Some(name), Some(path)) =
            (package["name"].as_str(), package["manifest_path"].as_str())
            && crates.contains(&name)
            && let Some(dir) = Path::new(path).parent()
        {
            dirs.insert(name.to_string(), dir.to_path_buf());
        }
    }
    Ok(dirs)
}
