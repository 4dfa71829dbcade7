//! The tree-sitter grammars Parley reads code with (Rust, Python, TypeScript, TSX, Go,
//! Java, Ruby, C#, C, C++, PHP), with their parse tables stored deflated and unpacked the first
//! time a grammar is asked for.
//!
//! Why: the eleven grammars' tables are about 17 MB of read-only data, more than the rest
//! of each worker's Lambda bootstrap, and a bootstrap's size is what a cold start pays to
//! fetch and map. Deflated they are 1.3 MB; unpacking one takes a few milliseconds, once per
//! process and only for the languages a pull request contains (`cargo bench -p
//! parley-grammars --bench load`). build.rs says how the tables are taken out of the
//! grammars' C sources; the parsers themselves are the grammar crates' own, unchanged.

mod passed;

pub use passed::*;
use std::ffi::{c_uint, c_ulong};
use std::io::Read;
use std::sync::OnceLock;
use tree_sitter::Language;
use tree_sitter_language::LanguageFn;

/// A grammar Parley carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Grammar {
    Rust,
    Python,
    TypeScript,
    Tsx,
    Go,
    Java,
    Ruby,
    CSharp,
    C,
    Cpp,
    Php,
}

/// The tags query for JavaScript, which Parley parses with the TSX grammar (a superset
/// of JavaScript with JSX): one grammar's tables fewer to carry.
pub const JAVASCRIPT_TAGS_QUERY: &str = tree_sitter_javascript::TAGS_QUERY;

/// What JavaScript's and TypeScript's tags add to the crates': a member read without a
/// call (`order.total`), which may be a getter (or a method passed along), whose
/// definition a changed line relies on as much as on a method it calls.
pub const JAVASCRIPT_READS_QUERY: &str = r#"
(member_expression property: (property_identifier) @name) @reference.member
"#;

/// JavaScript's whole tags query, for its own files, which are read with the TSX grammar:
/// [`javascript_shared_query`] and JSX's handlers ([`JSX_PASSED_QUERY`]).
pub fn javascript_tags_query() -> String {
    format!("{}\n{JSX_PASSED_QUERY}", javascript_shared_query())
}

/// JavaScript's tags, its reads and the functions it passes: what TypeScript's and TSX's
/// queries add theirs to (TypeScript's grammar reads no JSX).
fn javascript_shared_query() -> String {
    format!("{JAVASCRIPT_TAGS_QUERY}\n{JAVASCRIPT_READS_QUERY}\n{JAVASCRIPT_PASSED_QUERY}")
}

/// Ruby's tags: the grammar crate's definitions, and as references the calls that name
/// a method (`user.save`, `save(x)`, `validate order`) and the classes used as
/// receivers and superclasses. Methods defined at run time by the calls that define most
/// of them are definitions too, under the symbol they name: `attr_reader :total`,
/// `define_method(:name)`, and Rails' `scope :active` and associations (`has_many
/// :orders`), `delegate`'s (`delegate :total, to: :invoice` defines `total` here, which
/// calls the `invoice`'s), and `alias_method`'s new name. The methods its symbols name
/// as calls are in [`ruby_passed_query`].
///
/// A method called bare, with no receiver and no arguments (`current_user`,
/// `admin?`), is an identifier like a local variable. The crate's query counts every
/// identifier that is not a local as a call, through `tree-sitter-tags`' scope tracking
/// and the crate's `locals.scm`. Here the same two things are captured for the code index
/// to tell them apart: `@reference.bare` (an identifier that may be a call) and
/// `@local.definition` (what makes a name local from there on: parameters, assignments,
/// `rescue => e`, `for x in`, pattern bindings; `locals.scm`'s list and those three, and
/// a hash pattern's shorthand, `in {name:}`, which binds `name`).
pub const RUBY_TAGS_QUERY: &str = r#"
(method name: (_) @name) @definition.method
(singleton_method name: (_) @name) @definition.method
(alias name: (_) @name) @definition.method
(class name: [(constant) @name (scope_resolution name: (_) @name)]) @definition.class
(module name: [(constant) @name (scope_resolution name: (_) @name)]) @definition.module
(call
  method: (identifier) @macro
  arguments: (argument_list (simple_symbol) @name)
  (#any-of? @macro "attr_reader" "attr_writer" "attr_accessor" "define_method" "scope" "has_many" "has_one" "belongs_to" "has_and_belongs_to_many" "delegate")) @definition.method
(call
  method: (identifier) @macro
  arguments: (argument_list . (simple_symbol) @name)
  (#eq? @macro "alias_method")) @definition.method
(call method: (identifier) @name) @reference.call
(call receiver: (constant) @name) @reference.class
(superclass (constant) @name) @reference.class
((identifier) @name @reference.bare
 (#not-match? @name "^(lambda|proc|load|require|require_relative|__FILE__|__LINE__|__dir__)$"))
(method_parameters (identifier) @local.definition)
(lambda_parameters (identifier) @local.definition)
(block_parameters (identifier) @local.definition)
(block_parameter name: (identifier) @local.definition)
(destructured_parameter (identifier) @local.definition)
(splat_parameter (identifier) @local.definition)
(hash_splat_parameter (identifier) @local.definition)
(keyword_parameter name: (identifier) @local.definition)
(optional_parameter name: (identifier) @local.definition)
(assignment left: (identifier) @local.definition)
(operator_assignment left: (identifier) @local.definition)
(left_assignment_list (identifier) @local.definition)
(rest_assignment (identifier) @local.definition)
(destructured_left_assignment (identifier) @local.definition)
(exception_variable (identifier) @local.definition)
(for pattern: (identifier) @local.definition)
(array_pattern (identifier) @local.definition)
(find_pattern (identifier) @local.definition)
(as_pattern name: (identifier) @local.definition)
(keyword_pattern value: (identifier) @local.definition)
(keyword_pattern key: (hash_key_symbol) @local.definition !value)
"#;

/// What Python's tags add to the crate's: an attribute read without a call
/// (`order.total`), which may be a `@property` (or a method passed as a callback), whose
/// definition a changed line relies on as much as on a method it calls; and a name given
/// a lambda (`order_total = lambda order: …`), which is called like a function defined
/// with `def` (and whose removal leaves its callers without one).
pub const PYTHON_READS_QUERY: &str = r#"
(attribute attribute: (identifier) @name) @reference.member
(assignment left: (identifier) @name (lambda)) @definition.function
"#;

/// C#'s tags. The grammar crate's query leaves out structs, records, enums, constructors
/// and local functions, and counts a call only through a member (`repo.Load(x)`), not a
/// plain one (`Load(x)`) or a generic one (`services.Get<User>(x)`): this one has them
/// all. Properties are definitions too, and a member read without a call
/// (`order.Total`) is a reference: a property's getter is code (`=> Lines.Sum(…)`, a
/// lookup that may return null) that a changed line relies on as much as on a method.
/// So are events (`public event EventHandler Placed;`, read as `order.Placed += …`), a
/// field with its own accessors or the handlers a change adds to. Indexers and operators
/// are not counted as definitions (they have no name a call would use).
pub const CSHARP_TAGS_QUERY: &str = r#"
(class_declaration name: (identifier) @name) @definition.class
(struct_declaration name: (identifier) @name) @definition.class
(record_declaration name: (identifier) @name) @definition.class
(enum_declaration name: (identifier) @name) @definition.class
(interface_declaration name: (identifier) @name) @definition.interface
(method_declaration name: (identifier) @name) @definition.method
(constructor_declaration name: (identifier) @name) @definition.method
(local_function_statement name: (identifier) @name) @definition.function
(property_declaration name: (identifier) @name) @definition.property
(event_declaration name: (identifier) @name) @definition.property
(event_field_declaration (variable_declaration (variable_declarator name: (identifier) @name))) @definition.property
(member_access_expression name: (identifier) @name) @reference.member
(invocation_expression function: (identifier) @name) @reference.call
(invocation_expression function: (member_access_expression name: (identifier) @name)) @reference.call
(invocation_expression function: (generic_name (identifier) @name)) @reference.call
(invocation_expression function: (member_access_expression name: (generic_name (identifier) @name))) @reference.call
(object_creation_expression type: (identifier) @name) @reference.class
"#;

/// What Rust's tags add to the crate's: a trait's method signature (`fn load(&self, id:
/// u64) -> Option<User>;`) as a `@declaration`, as a C prototype is: never shown as the
/// method's definition, but a changed signature is a change to the method, whose callers
/// a reviewer checks.
pub const RUST_DECLARATIONS_QUERY: &str = r#"
(function_signature_item name: (identifier) @name) @declaration.method
"#;

/// What Rust's tags add to the crate's calls, which are of a plain name (`load(id)`) or
/// a method (`store.load(id)`) only: a call through a path, an associated function's
/// (`Store::open(path)`, `Self::check(x)`, `Invoice::<Draft>::new()`) or a module's
/// function (`billing::total(lines)`), as common in Rust as a method call.
pub const RUST_PATH_CALLS_QUERY: &str = r#"
(call_expression function: (scoped_identifier name: (identifier) @name)) @reference.call
(call_expression function: (generic_function function: (scoped_identifier name: (identifier) @name))) @reference.call
"#;

/// What Go's tags add to the crate's: an interface's method (`Load(id string) (*User,
/// error)`) as a `@declaration` (see [`RUST_DECLARATIONS_QUERY`]).
pub const GO_DECLARATIONS_QUERY: &str = r#"
(method_elem name: (field_identifier) @name) @declaration.method
"#;

/// C's tags, written here: the grammar crate's query takes every function declarator
/// for a definition (a prototype in a header too, and only its signature line, so no
/// changed line in a body has an enclosing function) and counts no calls. Here a function
/// is its whole definition, returning a value or a pointer (`char *dup(`, `char
/// **split(`); structs, unions and enums with a body; typedef names; and function-like
/// macros, which are called like functions (`CLAMP(x)`). References are calls, plain
/// (`parse(x)`) or through a member (`ops->compare(a, b)`, `list.count(n)`), which is
/// how C calls code held in a struct. Plain `#define` constants and prototypes are not
/// definitions: a reader wants a callee's body, not its declaration. A prototype is a
/// `@declaration` instead: a changed line in it changes the function as much as one in
/// its body (the code index looks up its callers), though it is never shown as the
/// function's definition.
pub const C_TAGS_QUERY: &str = r#"
(function_definition declarator: (function_declarator declarator: (identifier) @name)) @definition.function
(function_definition declarator: (pointer_declarator declarator: (function_declarator declarator: (identifier) @name))) @definition.function
(function_definition declarator: (pointer_declarator declarator: (pointer_declarator declarator: (function_declarator declarator: (identifier) @name)))) @definition.function
(struct_specifier name: (type_identifier) @name body: (_)) @definition.class
(union_specifier name: (type_identifier) @name body: (_)) @definition.class
(enum_specifier name: (type_identifier) @name body: (_)) @definition.type
(type_definition declarator: (type_identifier) @name) @definition.type
(preproc_function_def name: (identifier) @name) @definition.macro
(declaration declarator: (function_declarator declarator: (identifier) @name)) @declaration.function
(declaration declarator: (pointer_declarator declarator: (function_declarator declarator: (identifier) @name))) @declaration.function
(call_expression function: (identifier) @name) @reference.call
(call_expression function: (field_expression field: (field_identifier) @name)) @reference.call
"#;

/// What C++'s tags add to C's (the C++ grammar names C's nodes alike): methods defined in
/// a class body (`int size() const {`) and out of it (`Status Table::Get(`,
/// `ns::Table::Open(`, returning a pointer or a reference), classes, `using` aliases;
/// calls through a scope (`Status::OK()`), with template arguments
/// (`std::make_unique<Table>(`, `cache.Lookup<int>(`), and `new Table`. A method declared
/// in its class and defined elsewhere (`Status Get(const Slice& key);`) is a
/// `@declaration`, as a C prototype is.
pub const CPP_TAGS_QUERY: &str = r#"
(function_definition declarator: (function_declarator declarator: (field_identifier) @name)) @definition.method
(function_definition declarator: (function_declarator declarator: (qualified_identifier name: (identifier) @name))) @definition.method
(function_definition declarator: (function_declarator declarator: (qualified_identifier name: (qualified_identifier name: (identifier) @name)))) @definition.method
(function_definition declarator: (pointer_declarator declarator: (function_declarator declarator: (qualified_identifier name: (identifier) @name)))) @definition.method
(function_definition declarator: (reference_declarator (function_declarator declarator: (identifier) @name))) @definition.function
(function_definition declarator: (reference_declarator (function_declarator declarator: (qualified_identifier name: (identifier) @name)))) @definition.method
(class_specifier name: (type_identifier) @name body: (_)) @definition.class
(alias_declaration name: (type_identifier) @name) @definition.type
(field_declaration declarator: (function_declarator declarator: (field_identifier) @name)) @declaration.method
(field_declaration declarator: (pointer_declarator declarator: (function_declarator declarator: (field_identifier) @name))) @declaration.method
(field_declaration declarator: (reference_declarator (function_declarator declarator: (field_identifier) @name))) @declaration.method
(call_expression function: (qualified_identifier name: (identifier) @name)) @reference.call
(call_expression function: (qualified_identifier name: (qualified_identifier name: (identifier) @name))) @reference.call
(call_expression function: (template_function name: (identifier) @name)) @reference.call
(call_expression function: (qualified_identifier name: (template_function name: (identifier) @name))) @reference.call
(call_expression function: (field_expression field: (template_method name: (field_identifier) @name))) @reference.call
(new_expression type: (type_identifier) @name) @reference.class
(new_expression type: (qualified_identifier name: (type_identifier) @name)) @reference.class
"#;

/// PHP's tags, written here: the grammar crate's query predates its grammar's present
/// shape (a plain function or class name is a `name`, not a `qualified_name`, so it finds
/// no `helper()` call and no `new User`), and counts no property. Here: classes,
/// interfaces, traits and enums; functions; methods (one without a body, in an interface
/// or abstract, is a declaration); properties, constructor-promoted ones too, and
/// constants, each under its name without the `$`; calls of a function, a method
/// (`$a->m()`, `$a?->m()`) and a static method (`User::find()`); the classes created,
/// extended and implemented, and the traits a class uses; and a property read without a call (`$order->owner`), which
/// a changed line relies on as much as on a method it calls.
pub const PHP_TAGS_QUERY: &str = r#"
(class_declaration name: (name) @name) @definition.class
(interface_declaration name: (name) @name) @definition.interface
(trait_declaration name: (name) @name) @definition.interface
(enum_declaration name: (name) @name) @definition.class
(function_definition name: (name) @name) @definition.function
(method_declaration name: (name) @name body: (_)) @definition.method
(method_declaration name: (name) @name !body) @declaration.method
(property_declaration (property_element name: (variable_name (name) @name))) @definition.field
(property_promotion_parameter name: (variable_name (name) @name)) @definition.field
(const_declaration (const_element (name) @name)) @definition.constant
(function_call_expression function: [(name) @name (qualified_name (name) @name)]) @reference.call
(member_call_expression name: (name) @name) @reference.call
(nullsafe_member_call_expression name: (name) @name) @reference.call
(scoped_call_expression name: (name) @name) @reference.call
(object_creation_expression [(name) @name (qualified_name (name) @name)]) @reference.class
(base_clause [(name) @name (qualified_name (name) @name)]) @reference.class
(class_interface_clause [(name) @name (qualified_name (name) @name)]) @reference.implementation
(use_declaration [(name) @name (qualified_name (name) @name)]) @reference.implementation
(member_access_expression name: (name) @name) @reference.member
(nullsafe_member_access_expression name: (name) @name) @reference.member
"#;

#[derive(Debug, thiserror::Error)]
pub enum GrammarError {
    /// The packed tables do not match the C declarations they were made for: a broken
    /// build, never something a user's input can cause.
    #[error("the {grammar} grammar's parse tables do not unpack: {reason}")]
    Unpack {
        grammar: &'static str,
        reason: String,
    },
}

impl Grammar {
    pub const ALL: [Grammar; 11] = [
        Grammar::Rust,
        Grammar::Python,
        Grammar::TypeScript,
        Grammar::Tsx,
        Grammar::Go,
        Grammar::Java,
        Grammar::Ruby,
        Grammar::CSharp,
        Grammar::C,
        Grammar::Cpp,
        Grammar::Php,
    ];

    pub fn name(self) -> &'static str {
        self.parts().id
    }

    /// The grammar, its tables unpacked on the first call in this process.
    pub fn language(self) -> Result<Language, GrammarError> {
        static UNPACKED: [OnceLock<Result<(), String>>; Grammar::ALL.len()] =
            [const { OnceLock::new() }; Grammar::ALL.len()];
        let parts = self.parts();
        UNPACKED[self as usize]
            .get_or_init(|| unpack(&parts))
            .clone()
            .map_err(|reason| GrammarError::Unpack {
                grammar: parts.id,
                reason,
            })?;
        // SAFETY: the function is the grammar's generated `tree_sitter_<name>`, which
        // returns a pointer to its static TSLanguage; the tables that language points
        // at were filled above, before anything could read them.
        let language = unsafe { LanguageFn::from_raw(parts.language) };
        Ok(language.into())
    }

    /// The grammar's tags query (definitions and references), from the grammar crate.
    /// TypeScript's and TSX's add to JavaScript's.
    pub fn tags_query(self) -> String {
        match self {
            Grammar::Rust => format!(
                "{}\n{RUST_DECLARATIONS_QUERY}\n{RUST_PATH_CALLS_QUERY}\n{RUST_PASSED_QUERY}",
                tree_sitter_rust::TAGS_QUERY
            ),
            Grammar::Python => format!(
                "{}\n{PYTHON_READS_QUERY}\n{PYTHON_PASSED_QUERY}",
                tree_sitter_python::TAGS_QUERY
            ),
            Grammar::TypeScript => format!(
                "{}\n{}",
                javascript_shared_query(),
                tree_sitter_typescript::TAGS_QUERY
            ),
            Grammar::Tsx => format!(
                "{}\n{}",
                javascript_tags_query(),
                tree_sitter_typescript::TAGS_QUERY
            ),
            Grammar::Go => format!(
                "{}\n{GO_DECLARATIONS_QUERY}\n{GO_PASSED_QUERY}",
                tree_sitter_go::TAGS_QUERY
            ),
            Grammar::Java => format!("{}\n{JAVA_PASSED_QUERY}", tree_sitter_java::TAGS_QUERY),
            Grammar::Ruby => format!("{RUBY_TAGS_QUERY}\n{}", ruby_passed_query()),
            Grammar::CSharp => format!("{CSHARP_TAGS_QUERY}\n{CSHARP_PASSED_QUERY}"),
            Grammar::C => format!("{C_TAGS_QUERY}\n{C_PASSED_QUERY}"),
            Grammar::Cpp => {
                format!("{C_TAGS_QUERY}\n{CPP_TAGS_QUERY}\n{C_PASSED_QUERY}\n{CPP_PASSED_QUERY}")
            }
            Grammar::Php => format!("{PHP_TAGS_QUERY}\n{}", php_passed_query()),
        }
    }
}

/// The bytes a grammar's tables take packed (in the binary) and unpacked (in memory once
/// asked for): for the tests and the benchmark.
pub fn table_bytes(grammar: Grammar) -> (usize, usize) {
    let parts = grammar.parts();
    let unpacked = parts
        .tables()
        .map(|(_, _, len)| usize::try_from(len).unwrap_or(usize::MAX))
        .fold(0usize, usize::saturating_add);
    (parts.packed.len(), unpacked)
}

/// What build.rs made for one grammar.
struct Parts {
    id: &'static str,
    /// Every table's bytes, in the order `table` hands out their addresses, deflated.
    packed: &'static [u8],
    /// The address and byte length of table `index`, or null past the last.
    table: unsafe extern "C" fn(index: c_uint, len: *mut c_ulong) -> *mut u8,
    language: unsafe extern "C" fn() -> *const (),
}

impl Parts {
    /// Each table's index, address and byte length, as the generated C hands them out.
    fn tables(&self) -> impl Iterator<Item = (c_uint, *mut u8, c_ulong)> + '_ {
        (0..).map_while(|index| {
            let mut len: c_ulong = 0;
            // SAFETY: a generated switch over the grammar's own tables; it writes `len`
            // and returns null past the last one.
            let table = unsafe { (self.table)(index, &mut len) };
            (!table.is_null()).then_some((index, table, len))
        })
    }
}

macro_rules! grammars {
    ($($variant:ident => $id:literal, $table:ident, $language:ident;)*) => {
        unsafe extern "C" {
            $(
                fn $table(index: c_uint, len: *mut c_ulong) -> *mut u8;
                fn $language() -> *const ();
            )*
        }

        impl Grammar {
            fn parts(self) -> Parts {
                match self {
                    $(Grammar::$variant => Parts {
                        id: $id,
                        packed: include_bytes!(concat!(env!("OUT_DIR"), "/", $id, ".tables")),
                        table: $table,
                        language: $language,
                    },)*
                }
            }
        }
    };
}

grammars! {
    Rust => "rust", parley_grammar_rust_table, parley_tree_sitter_rust;
    Python => "python", parley_grammar_python_table, parley_tree_sitter_python;
    TypeScript => "typescript", parley_grammar_typescript_table, parley_tree_sitter_typescript;
    Tsx => "tsx", parley_grammar_tsx_table, parley_tree_sitter_tsx;
    Go => "go", parley_grammar_go_table, parley_tree_sitter_go;
    Java => "java", parley_grammar_java_table, parley_tree_sitter_java;
    Ruby => "ruby", parley_grammar_ruby_table, parley_tree_sitter_ruby;
    CSharp => "csharp", parley_grammar_csharp_table, parley_tree_sitter_c_sharp;
    C => "c", parley_grammar_c_table, parley_tree_sitter_c;
    Cpp => "cpp", parley_grammar_cpp_table, parley_tree_sitter_cpp;
    Php => "php", parley_grammar_php_table, parley_tree_sitter_php;
}

/// Inflates the packed bytes straight into the grammar's C tables, and checks that they
/// were exactly as long as the tables together.
fn unpack(parts: &Parts) -> Result<(), String> {
    let mut inflate = flate2::read::DeflateDecoder::new(parts.packed);
    for (index, table, len) in parts.tables() {
        let len = usize::try_from(len).map_err(|e| e.to_string())?;
        // SAFETY: `table` is a writable static C array of `len` bytes (declared without
        // an initialiser by build.rs), and nothing reads it before this function has
        // returned: `Grammar::language` runs it once, under a OnceLock, before handing
        // out the language that points at it.
        let bytes = unsafe { std::slice::from_raw_parts_mut(table, len) };
        inflate
            .read_exact(bytes)
            .map_err(|e| format!("table {index}: {e}"))?;
    }
    let mut rest = [0u8; 1];
    match inflate.read(&mut rest) {
        Ok(0) => Ok(()),
        Ok(_) => Err("more bytes than tables".to_string()),
        Err(e) => Err(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::sync::atomic::AtomicU8;

    /// Two tables of 3 and 5 bytes, as a generated grammar would hand them out.
    static TABLES: [AtomicU8; 8] = [const { AtomicU8::new(0) }; 8];

    unsafe extern "C" fn two_tables(index: c_uint, len: *mut c_ulong) -> *mut u8 {
        let (offset, bytes) = match index {
            0 => (0, 3),
            1 => (3, 5),
            _ => return std::ptr::null_mut(),
        };
        // SAFETY: `unpack` passes a valid pointer to its own local.
        unsafe { *len = bytes };
        TABLES[offset..].as_ptr() as *mut u8
    }

    unsafe extern "C" fn no_language() -> *const () {
        std::ptr::null()
    }

    fn parts(packed: &'static [u8]) -> Parts {
        Parts {
            id: "test",
            packed,
            table: two_tables,
            language: no_language,
        }
    }

    fn deflated(bytes: &[u8]) -> &'static [u8] {
        let mut deflate =
            flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::best());
        deflate.write_all(bytes).expect("in memory");
        deflate.finish().expect("in memory").leak()
    }

    fn tables() -> Vec<u8> {
        TABLES
            .iter()
            .map(|b| b.load(std::sync::atomic::Ordering::SeqCst))
            .collect()
    }

    // One test, so no two fill the same tables at once.
    #[test]
    fn unpack_fills_the_tables_and_refuses_bytes_of_another_length() {
        unpack(&parts(deflated(&[1, 2, 3, 4, 5, 6, 7, 8]))).expect("exact");
        assert_eq!(tables(), [1, 2, 3, 4, 5, 6, 7, 8]);

        let short = unpack(&parts(deflated(&[9; 7]))).expect_err("a byte short");
        assert!(short.contains("table 1"), "{short}");

        let long = unpack(&parts(deflated(&[9; 9]))).expect_err("a byte over");
        assert_eq!(long, "more bytes than tables");

        let garbage = unpack(&parts(b"not deflate at all")).expect_err("not deflate");
        assert!(garbage.contains("table 0"), "{garbage}");
    }
}
