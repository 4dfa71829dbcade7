//! Functions passed as values rather than called: a callback or a handler
//! (`app.get('/users', listUsers)`, `items.map(normalise)`, `qsort(…, compare)`,
//! `http.HandleFunc("/", handler)`), a use as surely as a call and where a rename most
//! often misses one. An identifier passed is as often a variable, so each query also
//! captures the variables and parameters a function binds (`@local.variable`), and the
//! code index counts a name passed (`@reference.passed`) only where the function it is
//! passed in binds no variable of that name (or defines it as a function: `const save =
//! () => …`). A module's own names (its imports, its globals) are not variables there.
//! A method reference that can only name a method (Java's `this::handle`) is a call.
//!
//! Not Rust: its bindings come in too many shapes for a query to list (a match arm's,
//! `if let Some(len)`, a struct pattern's), so every variable passed there read as a use
//! (the index bench on the cargo registry: the callers of 10 of 46 names differed once
//! the word index stopped counting what Rust passes, and counting it parsed a quarter
//! more files for the same context).

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
