//! What a change removes that the code at the head still uses. After a function or type
//! is deleted or renamed, a reviewer's first question is "is it still called?", and the
//! diff never shows the answer: the callers that were not updated are in files the
//! change does not touch. The code index is of the head only, so the removed
//! definitions are read from the removed lines themselves, by the keyword that
//! introduces one in the languages Parley indexes (`fn`, `def`, `func`, `function`,
//! `class`, `struct`, `enum`, `trait`, `interface`, `type`, `module`, C#'s `record`); a
//! JavaScript function held by a variable (`const load = async (id) => {`) by what is
//! assigned; and a method that has no keyword (Java's, a JavaScript class's, a C
//! function's) by its shape: a name, its parameters and the brace that opens its body
//! (in C and C++, where the brace often stands on the next line, a return type and the
//! parameters are enough, the type perhaps on the line above; a C macro by `#define
//! NAME(`). A name still defined somewhere at the head (moved, or overloaded) is not a
//! removal; one read wrongly from a removed line costs a look-up that finds no caller,
//! or callers that were worth showing anyway.

use crate::retrieval::language::language_of;

/// The keywords after which a definition's name follows.
const INTRODUCERS: &[&str] = &[
    "fn",
    "def",
    "func",
    "function",
    "class",
    "struct",
    "enum",
    "trait",
    "interface",
    "type",
    "module",
    "record",
];

/// The names defined on `lines` of the file at `path`, each once, in the order they
/// appear.
pub(crate) fn defined_on<'a>(path: &str, lines: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let c_family = matches!(language_of(path), Some("c" | "cpp"));
    let mut names: Vec<String> = Vec::new();
    let mut previous = "";
    for line in lines {
        let generic = defined_name(line).filter(|_| !(c_family && c_type_used(line)));
        let name = generic.or_else(|| {
            c_family
                .then(|| {
                    c_macro(line)
                        .or_else(|| c_function(line))
                        .or_else(|| c_function_under_its_type(previous, line))
                })
                .flatten()
        });
        if let Some(name) = name.filter(|n| !names.iter().any(|m| m == n)) {
            names.push(name);
        }
        previous = line;
    }
    names
}

/// Access modifiers a Java method's definition starts with.
const MODIFIERS: &[&str] = &["public", "private", "protected", "internal"];

/// Words that start a statement shaped like a method (`if (ready) {`, `match parse(x) {`,
/// `return new Handler(x) {`), never one.
const STATEMENTS: &[&str] = &[
    "if",
    "else",
    "elif",
    "for",
    "foreach",
    "while",
    "do",
    "switch",
    "match",
    "case",
    "catch",
    "try",
    "return",
    "throw",
    "new",
    "await",
    "yield",
    "with",
    "loop",
    "unless",
    "until",
    "synchronized",
    "using",
    "lock",
    "function",
    "typeof",
    "delete",
];

/// The name a line defines, if it starts a definition: an introducing keyword, then the
/// name (after a Go method's receiver, `func (s *Server) Name(`); a function assigned to
/// a JavaScript variable or a Python name; or a method without a keyword.
fn defined_name(line: &str) -> Option<String> {
    variable_function(line)
        .or_else(|| python_lambda(line))
        .or_else(|| keyword_definition(line))
        .or_else(|| method_definition(line))
}

/// `#define CLAMP(x) …`: a function-like macro, called like a function.
fn c_macro(line: &str) -> Option<String> {
    let rest = line.trim_start().strip_prefix('#')?.trim_start();
    let (name, after) = identifier(rest.strip_prefix("define")?.trim_start());
    (name.len() >= 2 && after.starts_with('(')).then(|| name.to_string())
}

/// A C or C++ function whose body opens on a later line: `int parse(const char *buf,
/// size_t len)`, `Status Table::Get(const Slice& key) const`, with a return type before
/// the name and nothing after the parameters but qualifiers. (A prototype ends in `;`,
/// and a call has no type before it.)
fn c_function(line: &str) -> Option<String> {
    let line = line.trim();
    let (head, _) = line.split_once('(')?;
    let (signature, after) = line.split_at(line.rfind(')')? + 1);
    let qualifiers = after
        .split_whitespace()
        .all(|word| matches!(word, "const" | "noexcept" | "override" | "final" | "{"));
    let typed = head.trim_end().rsplit_once([' ', '*', '&', ':']).is_some();
    if !qualifiers || !typed {
        return None;
    }
    method_definition(&format!("{signature} {{"))
}

/// In C and C++, `struct user *find(` and `struct user;` use a type: only a body (`{`,
/// on this line or the next) or a C++ base list (`:`) defines one.
fn c_type_used(line: &str) -> bool {
    let mut rest = line.trim();
    loop {
        let (word, after) = identifier(rest);
        if word.is_empty() {
            return false;
        }
        if matches!(word, "struct" | "union" | "enum" | "class") {
            let mut after = after.trim_start();
            if word == "enum" && matches!(identifier(after).0, "class" | "struct") {
                after = identifier(after).1.trim_start();
            }
            let mut after = identifier(after).1.trim_start();
            if let ("final", rest) = identifier(after) {
                after = rest.trim_start();
            }
            return !(after.is_empty() || after.starts_with(['{', ':']));
        }
        rest = after.trim_start();
    }
}

/// GNU's and BSD's style: the return type alone on its line, the name at the start of
/// the next (`static int` over `parse_header (const char *buf)`).
fn c_function_under_its_type(type_line: &str, line: &str) -> Option<String> {
    let typed = type_line.trim_end();
    let is_type = !typed.is_empty()
        && !typed.starts_with(char::is_whitespace)
        && typed
            .chars()
            .all(|c| c.is_alphanumeric() || "_ *&:<>,".contains(c))
        && !STATEMENTS.contains(&identifier(typed).0);
    if !is_type || line.starts_with(char::is_whitespace) {
        return None;
    }
    let (name, after) = identifier(line);
    let parameters = after.trim_start().strip_prefix('(')?;
    c_function(&format!("{typed} {name}({parameters}"))
}

/// `total = lambda order: …`, `key: Callable[[T], int] = lambda item: …`: a Python name
/// given a function, which code elsewhere calls like one defined with `def`.
fn python_lambda(line: &str) -> Option<String> {
    let (name, rest) = identifier(line.trim_start());
    let (annotation, value) = rest.split_once('=')?;
    let annotated = annotation.trim().is_empty() || annotation.trim_start().starts_with(':');
    let (first, after) = identifier(value.trim_start());
    let is_lambda = first == "lambda" && (after.starts_with(' ') || after.starts_with(':'));
    (name.len() >= 2 && annotated && is_lambda).then(|| name.to_string())
}

/// `export const fetchOrders = async (id) => {`, `let parse = text =>`,
/// `var handler: Handler = function (req) {`: the variable, when what it is given is a
/// function (`const total = items.map(i => i.id)` is not).
fn variable_function(line: &str) -> Option<String> {
    let (mut word, mut rest) = identifier(line.trim_start());
    if word == "export" {
        (word, rest) = identifier(rest.trim_start());
    }
    if !matches!(word, "const" | "let" | "var") {
        return None;
    }
    let (name, rest) = identifier(rest.trim_start());
    // After the name only a TypeScript annotation may stand before the `=`.
    let (annotation, value) = rest.split_once('=')?;
    if name.len() < 2 || !(annotation.trim().is_empty() || annotation.trim_start().starts_with(':'))
    {
        return None;
    }
    let mut value = value.trim_start();
    if let ("async", after) = identifier(value) {
        value = after.trim_start();
    }
    let (first, after) = identifier(value);
    let is_function = first == "function"
        || (first.is_empty() && value.starts_with('(') && value.contains("=>"))
        || (!first.is_empty() && after.trim_start().starts_with("=>"));
    is_function.then(|| name.to_string())
}

/// A method, which has no keyword: the identifier before the first `(`, with the words
/// before it a type and modifiers. With an access modifier among them, that is enough
/// (`public static Optional<User> loadUser(String id) {`, also an abstract one ending in
/// `;`); without one (Java's package-private `List<User> load(String id) throws E {`, a
/// JavaScript class's `async load(id) {` or `load(id) {`) the line must open the body
/// after its parameters, and a bare name must touch its `(`, so that calls and
/// statements (`} else if (x) {`, `describe("x", () => {`, `foo(bar(x)) {`) are not read
/// as definitions. Nothing may be assigned before the `(` (`private final Cache cache =
/// new Cache(10);` is a field).
fn method_definition(line: &str) -> Option<String> {
    let line = line.trim();
    let (first, _) = identifier(line);
    if first.is_empty() || STATEMENTS.contains(&first) {
        return None;
    }
    let (head, parameters) = line.split_once('(')?;
    let start = head
        .rfind(|c: char| !(c.is_alphanumeric() || c == '_' || c == '$'))
        .map_or(0, |at| at + 1);
    let (before, name) = head.split_at(start);
    let typed = before.trim();
    let shaped = typed
        .chars()
        .all(|c| c.is_alphanumeric() || "_$<>[]?, *&:".contains(c))
        && !typed
            .split([' ', '<', '>', ',', '[', ']', '?'])
            .any(|word| STATEMENTS.contains(&word));
    if name.len() < 2 || MODIFIERS.contains(&name) || identifier(name).0 != name || !shaped {
        return None;
    }
    let modified = typed.split(' ').any(|word| MODIFIERS.contains(&word));
    if !modified && !(opens_body(parameters) && (!typed.is_empty() || before.is_empty())) {
        return None;
    }
    Some(name.to_string())
}

/// After a method's `(`: its parameters, the `)`, perhaps `throws …`, then the `{` that
/// opens its body, and nothing else (no call inside, no lambda, no one-line body).
fn opens_body(parameters: &str) -> bool {
    let Some((inside, after)) = parameters.rsplit_once(')') else {
        return false;
    };
    let after = after.trim();
    !inside.contains('(') && after.ends_with('{') && (after == "{" || after.starts_with("throws "))
}

fn keyword_definition(line: &str) -> Option<String> {
    let mut rest = line.trim_start();
    while !rest.is_empty() {
        let (word, after) = identifier(rest);
        if word.is_empty() {
            // Not an identifier: a comment or a string starts here, or punctuation.
            let c = rest.chars().next()?;
            if c == '/' || c == '#' || c == '"' || c == '\'' {
                return None;
            }
            rest = &rest[c.len_utf8()..];
            continue;
        }
        if INTRODUCERS.contains(&word) {
            let mut next = after.trim_start();
            if word == "func" && next.starts_with('(') {
                next = next.split_once(')')?.1.trim_start();
            }
            // PHP's function that returns a reference, `function &items()`.
            if word == "function" {
                next = next.trim_start_matches('&').trim_start();
            }
            // C++'s and Kotlin's `enum class Color`: the name follows `class`.
            if word == "enum"
                && let ("class" | "struct", after) = identifier(next)
            {
                next = after.trim_start();
            }
            // Ruby's `def self.find(`: the name follows the receiver.
            if let (receiver, after) = identifier(next)
                && word == "def"
                && !receiver.is_empty()
                && let Some(name) = after.strip_prefix('.')
            {
                next = name;
            }
            // C#'s `record User(`, `record struct Point {`; elsewhere `record` is a
            // common name (`for record in rows:`), so only that shape counts.
            if word == "record" {
                if let ("struct" | "class", after) = identifier(next) {
                    next = after.trim_start();
                }
                let (name, after) = identifier(next);
                let shaped = after.trim_start().is_empty()
                    || after.trim_start().starts_with(['(', '{', '<', ':']);
                return (name.len() > 1 && shaped).then(|| name.to_string());
            }
            let (name, _) = identifier(next);
            return (name.len() > 1).then(|| name.to_string());
        }
        rest = after.trim_start();
    }
    None
}

/// The identifier `text` starts with (empty if none) and what follows it.
fn identifier(text: &str) -> (&str, &str) {
    let starts = text
        .chars()
        .next()
        .is_some_and(|c| c.is_alphabetic() || c == '_' || c == '$');
    if !starts {
        return ("", text);
    }
    let end = text
        .char_indices()
        .find(|(_, c)| !(c.is_alphanumeric() || *c == '_' || *c == '$'))
        .map_or(text.len(), |(at, _)| at);
    text.split_at(end)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn definitions_in_each_indexed_language_are_named() {
        let lines = [
            "pub(crate) async fn load_user(id: u64) -> User {",
            "    def parse_header(self, raw):",
            "func (s *Server) HandleLogin(w http.ResponseWriter) {",
            "func NewServer() *Server {",
            "export async function fetchOrders(id) {",
            "public final class OrderBook {",
            "pub struct Config {",
            "type Handler interface {",
            "    public static Optional<User> loadUser(String id) {",
            "    private final Cache cache = new Cache(10);",
            "let x = 1; // fn not_a_definition()",
            "    return helper(x)",
            "fn load_user() {} // again",
            "export const fetchCart = async (id) => {",
            "let parseLine = text => text.split(',');",
            "var handler: Handler = function (req) {",
            "    List<Map<String, User>> findAll(String query) throws IOException {",
            "    static void resetCache() {",
            "  async refreshToken(user) {",
            "  renderRow(row, index) {",
            "    abstract protected void close();",
            "  def self.find_by_token(token)",
            "  def valid?",
            "module Billing",
            "public sealed record Invoice(decimal Total);",
            "    internal static Task<int> CountAsync(string q)",
            "order_total = lambda order: sum(l.price for l in order.lines)",
            "    sort_key: Callable[[Row], int] = lambda row: row.rank",
            "    public static function fromArray(array $data): self",
            "    abstract protected function &items(): array;",
            "final class LedgerEntry extends Model implements JsonSerializable",
            "enum Status: string",
        ];
        assert_eq!(
            defined_on("src/lib.rs", lines),
            [
                "load_user",
                "parse_header",
                "HandleLogin",
                "NewServer",
                "fetchOrders",
                "OrderBook",
                "Config",
                "Handler",
                "loadUser",
                "fetchCart",
                "parseLine",
                "handler",
                "findAll",
                "resetCache",
                "refreshToken",
                "renderRow",
                "close",
                "find_by_token",
                "valid",
                "Billing",
                "Invoice",
                "CountAsync",
                "order_total",
                "sort_key",
                "fromArray",
                "items",
                "LedgerEntry",
                "Status",
            ]
        );
    }

    /// Calls and statements shaped like a method, and values that are not functions,
    /// define nothing.
    #[test]
    fn calls_and_statements_are_not_definitions() {
        let lines = [
            "} else if (ready(x)) {",
            "if (ready) {",
            "  while (queue.length) {",
            "match parse(input) {",
            "describe(\"cart\", () => {",
            "app.get('/', function (req, res) {",
            "foo(function () {",
            "  render(bar(x)) {",
            "return compute(x) {",
            "  render (x) {",
            "const total = items.map(i => i.id);",
            "const sum = (a + b) * 2;",
            "let count = 0;",
            "    helper(x);",
            "    Object result = compute(x);",
            "  loadAll(ids) { return ids.map(load); }",
            "for record in rows:",
            "    record = fetch(id)",
            "    flag == lambda_count",
            "handler = lambdas[0]",
            "rows.sort(key=lambda r: r.rank)",
        ];
        assert_eq!(defined_on("src/lib.rs", lines), Vec::<String>::new());
    }

    /// C and C++ functions with the brace on the line under them, or with a pointer or a
    /// reference returned, or under their type (GNU's style), and function-like macros; prototypes, calls, statements and
    /// constants are not definitions, and the C shapes count only in C and C++ files.
    #[test]
    fn c_and_cpp_definitions_are_named_by_their_shape() {
        let lines = [
            "static char *dup_string(const char *s) {",
            "static struct user *",
            "find_user (const char *name)",
            "int parse_header(const char *buf, size_t len)",
            "Status Table::Get(const Slice& key, std::string* value) const",
            "const std::string& Table::name() const {",
            "#define CLAMP(x) ((x) > MAX ? MAX : (x))",
            "struct node {",
            "enum class Color : uint8_t {",
            "class Cache final : public Base {",
            "struct user;",
            "int parse_header(const char *buf, size_t len);",
            "#define MAX_LEN 64",
            "    return lookup(table, key);",
            "    if (ready(x))",
            "    int n = count(list)",
            "    free(copy)",
            "        } else if (done(x)) {",
            "    return",
            "check(x)",
            "int n;",
            "log_it(x)",
        ];
        let c = [
            "dup_string",
            "find_user",
            "parse_header",
            "Get",
            "name",
            "CLAMP",
            "node",
            "Color",
            "Cache",
        ];
        assert_eq!(defined_on("src/server.c", lines), c);
        assert_eq!(defined_on("include/db/table.h", lines), c);
        assert_eq!(defined_on("db/table.cc", lines), c);
        // Elsewhere `print_report(data)` under a type-like word is a call (Ruby's
        // `validate order(x)`), and a `#` starts a comment.
        assert_eq!(
            defined_on(
                "app/models/order.rb",
                [
                    "  validate order(x)",
                    "#define CLAMP(x) x",
                    "int parse(char *b)"
                ]
            ),
            Vec::<String>::new()
        );
    }

    #[test]
    fn words_in_comments_and_strings_define_nothing() {
        assert_eq!(
            defined_on(
                "src/lib.rs",
                ["# def old_name(): removed", "\"fn quoted\"", "x = type(y)"]
            ),
            Vec::<String>::new()
        );
    }
}
