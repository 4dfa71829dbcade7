//! What a change removes that the code at the head still uses. After a function or type
//! is deleted or renamed, a reviewer's first question is "is it still called?", and the
//! diff never shows the answer: the callers that were not updated are in files the
//! change does not touch. The code index is of the head only, so the removed
//! definitions are read from the removed lines themselves, by the keyword that
//! introduces one in the languages Parley indexes (`fn`, `def`, `func`, `function`,
//! `class`, `struct`, `enum`, `trait`, `interface`, `type`), or, for a Java method, which
//! has none, by the access modifier it starts with and the name before its `(`. A name
//! still defined somewhere at the head (moved, or overloaded) is not a removal.

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
];

/// The names defined on `lines`, each once, in the order they appear.
pub(crate) fn defined_on<'a>(lines: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for line in lines {
        if let Some(name) = defined_name(line).filter(|n| !names.iter().any(|m| m == n)) {
            names.push(name);
        }
    }
    names
}

/// Access modifiers a Java method's definition starts with.
const MODIFIERS: &[&str] = &["public", "private", "protected"];

/// The name a line defines, if it starts a definition: an introducing keyword, then the
/// name (after a Go method's receiver, `func (s *Server) Name(`); or a Java method.
fn defined_name(line: &str) -> Option<String> {
    keyword_definition(line).or_else(|| method_definition(line))
}

/// `public static Optional<User> loadUser(String id) {`: the identifier before the first
/// `(` of a line that starts with an access modifier and assigns nothing before it
/// (`private final Cache cache = new Cache(` is a field).
fn method_definition(line: &str) -> Option<String> {
    let line = line.trim_start();
    let (first, _) = identifier(line);
    if !MODIFIERS.contains(&first) {
        return None;
    }
    let (head, _) = line.split_once('(')?;
    if head.contains('=') {
        return None;
    }
    let name = head.trim_end();
    let start = name
        .rfind(|c: char| !(c.is_alphanumeric() || c == '_' || c == '$'))
        .map_or(0, |at| at + 1);
    let name = &name[start..];
    (name.len() > 1 && !MODIFIERS.contains(&name) && identifier(name).0 == name)
        .then(|| name.to_string())
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
        ];
        assert_eq!(
            defined_on(lines),
            [
                "load_user",
                "parse_header",
                "HandleLogin",
                "NewServer",
                "fetchOrders",
                "OrderBook",
                "Config",
                "Handler",
                "loadUser"
            ]
        );
    }

    #[test]
    fn words_in_comments_and_strings_define_nothing() {
        assert_eq!(
            defined_on(["# def old_name(): removed", "\"fn quoted\"", "x = type(y)"]),
            Vec::<String>::new()
        );
    }
}
