//! Functions passed as values rather than called: a callback or a handler
//! (`app.get('/users', listUsers)`, `items.map(normalise)`, `qsort(…, compare)`,
//! `http.HandleFunc("/", handler)`), a use as surely as a call and where a rename most
//! often misses one. An identifier passed is as often a variable, so each query also
//! captures the variables and parameters a function binds (`@local.variable`), and the
//! code index counts a name passed (`@reference.passed`) only where the function it is
//! passed in binds no variable of that name (or defines it as a function: `const save =
//! () => …`). A module's own names (its imports, its globals) are not variables there.
//! A method reference that can only name a method (Java's `this::handle`) is a call, and
//! so is a method named by a Ruby symbol or a PHP string where it is run or taken
//! (`before_action :set_invoice`, `[UserController::class, 'index']`).
//!
//! Rust's bindings come in many shapes (a `let`, a parameter, a closure's, a match arm's,
//! `if let Some(len)`, a struct pattern's `Point { x, .. }`), but each binds an
//! identifier that stands directly in one of a few pattern nodes: [`RUST_PASSED_QUERY`]
//! lists those nodes.

/// A function passed as a value rather than called (`app.get('/users', listUsers)`,
/// `items.map(normalise)`, `setTimeout(flush, 50)`): a use as surely as a call, and where
/// a rename most often misses one. An identifier passed is as often a variable, so the
/// file's own variables and parameters are captured too (`@local.variable`) and the index
/// counts a name passed only where the file holds no variable of that name (or defines
/// it as a function: `const save = () => …`). Written for TypeScript's grammars, which
/// read JavaScript too.
pub const JAVASCRIPT_PASSED_QUERY: &str = r#"
(arguments (identifier) @name @reference.passed)
(variable_declarator name: (identifier) @local.variable)
(required_parameter pattern: (identifier) @local.variable)
(optional_parameter pattern: (identifier) @local.variable)
(arrow_function parameter: (identifier) @local.variable)
(catch_clause parameter: (identifier) @local.variable)
(for_in_statement left: (identifier) @local.variable)
(object_pattern (shorthand_property_identifier_pattern) @local.variable)
(array_pattern (identifier) @local.variable)
"#;

/// A handler given to a JSX element (`<button onClick={submit}>`), for the grammar that
/// reads JSX (JavaScript's and TSX's files).
pub const JSX_PASSED_QUERY: &str = r#"
(jsx_expression (identifier) @name @reference.passed)
"#;

/// Python's functions passed as values (`Thread(target=worker)`, `map(parse, lines)`,
/// `path("users/", views.index)` through its attribute already) and its decorators
/// (`@login_required`, a call of the function it names), with the file's variables and
/// parameters, as [`JAVASCRIPT_PASSED_QUERY`] has them.
pub const PYTHON_PASSED_QUERY: &str = r#"
(argument_list (identifier) @name @reference.passed)
(keyword_argument value: (identifier) @name @reference.passed)
(decorator (identifier) @name) @reference.call
(parameters (identifier) @local.variable)
(default_parameter name: (identifier) @local.variable)
(typed_parameter (identifier) @local.variable)
(typed_default_parameter name: (identifier) @local.variable)
(lambda_parameters (identifier) @local.variable)
(assignment left: (identifier) @local.variable)
(pattern_list (identifier) @local.variable)
(for_statement left: (identifier) @local.variable)
"#;

/// Rust's (`.route("/", get(list_users))`, `service_fn(handler)`, `.map(parse_line)`),
/// with every identifier a pattern binds in a function or a closure: a `let`'s, a
/// parameter's, a closure's, a `for`'s, an `if let`'s, and those inside tuple, struct,
/// slice, reference, `ref`, `mut`, `@` and `|` patterns and a match arm's.
pub const RUST_PASSED_QUERY: &str = r#"
(arguments (identifier) @name @reference.passed)
(let_declaration pattern: (identifier) @local.variable)
(parameter pattern: (identifier) @local.variable)
(closure_parameters (identifier) @local.variable)
(for_expression pattern: (identifier) @local.variable)
(let_condition pattern: (identifier) @local.variable)
(tuple_struct_pattern (identifier) @local.variable)
(tuple_pattern (identifier) @local.variable)
(slice_pattern (identifier) @local.variable)
(field_pattern pattern: (identifier) @local.variable)
(field_pattern name: (shorthand_field_identifier) @local.variable)
(ref_pattern (identifier) @local.variable)
(mut_pattern (identifier) @local.variable)
(captured_pattern (identifier) @local.variable)
(or_pattern (identifier) @local.variable)
(reference_pattern (identifier) @local.variable)
(match_pattern (identifier) @local.variable)
"#;

/// Go's (`http.HandleFunc("/", handler)`, `sort.Slice(xs, less)`).
pub const GO_PASSED_QUERY: &str = r#"
(argument_list (identifier) @name @reference.passed)
(parameter_declaration name: (identifier) @local.variable)
(short_var_declaration left: (expression_list (identifier) @local.variable))
(var_spec name: (identifier) @local.variable)
(range_clause left: (expression_list (identifier) @local.variable))
"#;

/// C's and C++'s function pointers (`qsort(v, n, size, compare)`, `signal(SIGINT,
/// on_signal)`).
pub const C_PASSED_QUERY: &str = r#"
(argument_list (identifier) @name @reference.passed)
(parameter_declaration declarator: (identifier) @local.variable)
(parameter_declaration declarator: (pointer_declarator declarator: (identifier) @local.variable))
(init_declarator declarator: (identifier) @local.variable)
(init_declarator declarator: (pointer_declarator declarator: (identifier) @local.variable))
(declaration declarator: (identifier) @local.variable)
"#;

/// What C++ binds beside C's: references and range loops' variables.
pub const CPP_PASSED_QUERY: &str = r#"
(parameter_declaration declarator: (reference_declarator (identifier) @local.variable))
(for_range_loop declarator: (identifier) @local.variable)
(for_range_loop declarator: (reference_declarator (identifier) @local.variable))
"#;

/// Java's method references (`this::handle`, `Order::total`): the method's name, a call.
pub const JAVA_PASSED_QUERY: &str = r#"
(method_reference (identifier) @name .) @reference.call
"#;

/// C#'s method groups (`list.ForEach(Handle)`, an event's handler: `button.Click +=
/// OnClick`).
pub const CSHARP_PASSED_QUERY: &str = r#"
(argument (identifier) @name @reference.passed)
(assignment_expression left: (member_access_expression) right: (identifier) @name @reference.passed)
(parameter name: (identifier) @local.variable)
(variable_declarator name: (identifier) @local.variable)
"#;

/// Ruby's calls whose symbols name methods they run or take (`validate :check_total`,
/// `send(:total)`, `method(:parse)`), beside Rails' callbacks, which are told by their
/// shape (`before_action`, `after_commit`, `skip_before_action`, …).
pub const RUBY_SYMBOL_CALLS: [&str; 9] = [
    "validate",
    "helper_method",
    "method",
    "public_method",
    "instance_method",
    "send",
    "public_send",
    "__send__",
    "try",
];

/// What a Rails callback's name starts with (`skip_before_action`), then when it runs
/// (`before_action`, `after_commit`, `around_perform`): callbacks are told by this shape,
/// by [`ruby_passed_query`] and by the word index alike ([`ruby_calls_symbols`]).
const RUBY_CALLBACK_PREFIXES: [&str; 3] = ["prepend_", "append_", "skip_"];
const RUBY_CALLBACK_TIMES: [&str; 3] = ["before_", "after_", "around_"];

/// Whether a Ruby call named `word` runs or takes the methods its symbols name: a Rails
/// callback or one of [`RUBY_SYMBOL_CALLS`]. The word index asks it of the calls on a
/// symbol's line, a superset of what [`ruby_passed_query`] counts.
pub fn ruby_calls_symbols(word: &str) -> bool {
    let callback = RUBY_CALLBACK_PREFIXES.iter().fold(word, |word, prefix| {
        word.strip_prefix(prefix).unwrap_or(word)
    });
    RUBY_CALLBACK_TIMES.iter().any(|when| {
        callback
            .strip_prefix(when)
            .is_some_and(|what| !what.is_empty())
    }) || RUBY_SYMBOL_CALLS.contains(&word)
}

/// Ruby's methods named by a symbol where they are run or taken, each a call as surely
/// as one named in a call: a Rails callback (`before_action :set_invoice`, `after_commit
/// :notify`), [`RUBY_SYMBOL_CALLS`]' symbols, a condition or a handler (`if: :paid?`,
/// `rescue_from …, with: :not_found`), a block made of one (`map(&:total)`), the old
/// name an alias takes (`alias_method :to_s, :name`, `alias to_s name`: a rename that
/// misses it breaks the alias where it is defined), the method a `delegate` sends to
/// (`delegate :total, to: :invoice` calls `invoice`). A callback's options (`only:
/// [:show]`) name actions, not what runs: not counted.
pub fn ruby_passed_query() -> String {
    format!(
        r#"
(alias alias: (_) @name) @reference.call
(call
  method: (identifier) @macro
  arguments: (argument_list . (simple_symbol) . (simple_symbol) @name)
  (#eq? @macro "alias_method")) @reference.call
(call
  method: (identifier) @macro
  arguments: (argument_list
    (pair key: [(hash_key_symbol) (simple_symbol)] @key value: (simple_symbol) @name))
  (#eq? @macro "delegate")
  (#match? @key "^:?to$")) @reference.call
(call
  method: (identifier) @macro
  arguments: (argument_list (simple_symbol) @name)
  (#match? @macro "^({prefixes})?({times})[a-z_]+$")) @reference.call
(call
  method: (identifier) @macro
  arguments: (argument_list (simple_symbol) @name)
  (#any-of? @macro {calls})) @reference.call
(pair
  key: [(hash_key_symbol) (simple_symbol)] @key
  value: (simple_symbol) @name
  (#match? @key "^:?(if|unless|with)$")) @reference.call
(block_argument (simple_symbol) @name) @reference.call
"#,
        prefixes = RUBY_CALLBACK_PREFIXES.join("|"),
        times = RUBY_CALLBACK_TIMES.join("|"),
        calls = quoted(&RUBY_SYMBOL_CALLS),
    )
}

/// PHP's functions that take a callable first (`array_map('trim', $rows)`,
/// `call_user_func('render')`, `set_error_handler('on_error')`), and
/// `Closure::fromCallable('render')`.
pub const PHP_CALLABLE_FIRST: [&str; 9] = [
    "array_map",
    "fromCallable",
    "call_user_func",
    "call_user_func_array",
    "is_callable",
    "spl_autoload_register",
    "set_error_handler",
    "set_exception_handler",
    "register_shutdown_function",
];

/// PHP's functions that take a callable second: after the array (`usort($rows,
/// 'by_date')`), or after the hook, WordPress's (`add_action('init',
/// 'register_types')`).
pub const PHP_CALLABLE_SECOND: [&str; 19] = [
    "array_filter",
    "array_walk",
    "array_walk_recursive",
    "array_reduce",
    "usort",
    "uasort",
    "uksort",
    "preg_replace_callback",
    "iterator_apply",
    "add_action",
    "add_filter",
    "remove_action",
    "remove_filter",
    "has_action",
    "has_filter",
    "add_shortcode",
    "register_activation_hook",
    "register_deactivation_hook",
    "register_uninstall_hook",
];

/// PHP's methods and functions named by a string where they are taken: a callable array
/// (`[UserController::class, 'index']`, Laravel's route to a controller's action;
/// `[$this, 'handle']`), and a function's name given to one that takes a callable
/// ([`PHP_CALLABLE_FIRST`], [`PHP_CALLABLE_SECOND`]): a string that is one name (not
/// `'App\helpers\fmt'`). And a string that names a class's method wherever it stands
/// (`'Legacy::run'`, a static method as a callable; `'InvoiceController@index'`,
/// Laravel's route to an action before callable arrays): captured whole as
/// `@reference.qualified`, whose name is what follows the `::` or `@` (see
/// [`after_qualifier`]).
pub fn php_passed_query() -> String {
    let string = r#"[(string (string_content) @name) (encapsed_string (string_content) @name)]"#;
    let name = r#"(#match? @name "^[A-Za-z_][A-Za-z0-9_]*$")"#;
    format!(
        r#"
({string} @reference.qualified
  (#match? @name "^\\\\?[A-Z][A-Za-z0-9_\\\\]*(::|@)[A-Za-z_][A-Za-z0-9_]*$"))
(scoped_call_expression
  name: (name) @callee
  arguments: (arguments . (argument {string}))
  (#any-of? @callee {first})
  {name}) @reference.call
(array_creation_expression
  . (array_element_initializer (class_constant_access_expression (_) (name) @constant .))
  . (array_element_initializer {string})
  .
  (#eq? @constant "class")
  {name}) @reference.call
(array_creation_expression
  . (array_element_initializer (variable_name))
  . (array_element_initializer {string})
  .
  {name}) @reference.call
(function_call_expression
  function: (name) @callee
  arguments: (arguments . (argument {string}))
  (#any-of? @callee {first})
  {name}) @reference.call
(function_call_expression
  function: (name) @callee
  arguments: (arguments . (argument) . (argument {string}))
  (#any-of? @callee {second})
  {name}) @reference.call
"#,
        first = quoted(&PHP_CALLABLE_FIRST),
        second = quoted(&PHP_CALLABLE_SECOND),
    )
}

/// The method a PHP string names after its class (`run` in `'Legacy::run'`, `index` in
/// `'InvoiceController@index'`), as the word index and a question spell it.
pub fn after_qualifier(named: &str) -> &str {
    named.rsplit(['@', ':']).next().unwrap_or(named)
}

/// Words as a query predicate's strings: `"a" "b"`.
fn quoted(words: &[&str]) -> String {
    words
        .iter()
        .map(|word| format!("\"{word}\""))
        .collect::<Vec<_>>()
        .join(" ")
}
