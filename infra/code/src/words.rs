//! The identifiers of a file, read without parsing, and which of them stand where a
//! definition could: the lazy index's way to know which files a question needs parsed.
//!
//! A name as common as `Some`, `len` or `new` is in most files of a large repository,
//! and is defined in few of them or none (the standard library's names). Parsing every
//! file that holds it to look for its definition was most of an index's time, so each
//! occurrence is also classed cheaply: a name after a definition keyword (`fn`, `def`,
//! `class`, `func`, …), or at the head of a line followed by `(`, `<`, `=` or `:` (a
//! method, a field holding a function, a module constant), may be a definition. The
//! class is a superset of what the grammars' tags queries call a definition (the parse
//! decides), so a file it passes over holds no definition of the name. The one shape it
//! does not see is a function assigned to a member (`module.exports.f = function`); the
//! index bench counts how often that costs a definition on real code.

use parley_grammars::{PHP_CALLABLE_FIRST, PHP_CALLABLE_SECOND, ruby_calls_symbols};
use std::collections::HashSet;

/// How a language writes its definitions, as far as [`identifiers`] needs to know.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Style {
    /// Every definition starts with a keyword (Rust).
    Keywords,
    /// Keywords, and module constants: `NAME = …` at the start of a line (Python).
    KeywordsAndConstants,
    /// Keywords, methods `func (r T) Name(`, and grouped `type (` specs (Go).
    Go,
    /// Keywords, and methods and fields declared without one: `name(…) {`,
    /// `static int name(`, `name = () =>`, `name: function` (JavaScript, TypeScript,
    /// Java).
    Declarations,
    /// [`Style::Declarations`], and what C# adds to it: a tuple as the return type
    /// (`(int, string) Split(`) and a method implementing an interface member by name
    /// (`void IDisposable.Dispose(`).
    CSharp,
    /// Keywords (`def`, `class`, `module`, `alias`), also after a receiver or a scope
    /// (`def self.find`, `class Admin::User`); and any word may be a call, since Ruby
    /// calls a method without parentheses (`validate order`, `user.save`).
    Ruby,
    /// Keywords (`struct`, `union`, `enum`, `class`), and what C and C++ declare without
    /// one: a function after its return type (`static char *dup(`, `Status Table::Get(`)
    /// or at the start of its line under it (`parse_header (`), typedef names, macros.
    C,
    /// Keywords (`function`, `class`, `interface`, `trait`, `enum`, `const`), and
    /// properties, which have none: a `$name` on a line that declares one (`private ?User
    /// $owner`, a constructor's `private readonly Mailer $mailer`). Variables (`$user`)
    /// are never calls; a qualified name (`new \App\Models\Order`) is read by its last
    /// part (PHP).
    Php,
}

/// The distinct identifiers of `text` (ASCII letters, digits and `_`, not starting with
/// a digit) that occur at least once where a definition could, and those that occur
/// where a call or a reference could (see `may_refer`).
pub(crate) fn identifiers(text: &str, style: Style) -> (Vec<&str>, Vec<&str>) {
    let bytes = text.as_bytes();
    let mut referring: HashSet<&str> = HashSet::new();
    let mut defining: HashSet<&str> = HashSet::new();
    let mut line_start = 0;
    let mut at = 0;
    // JavaScript, TypeScript and Java names may hold `$` (`$ZodType`, `jQuery$1`), as their
    // tags spell them.
    let dollar = style == Style::Declarations;
    while at < bytes.len() {
        let b = bytes[at];
        if b == b'\n' {
            line_start = at + 1;
            at += 1;
        } else if b.is_ascii_alphabetic() || b == b'_' || (dollar && b == b'$') {
            let start = at;
            while at < bytes.len() && (is_word_byte(bytes[at]) || (dollar && bytes[at] == b'$')) {
                at += 1;
            }
            // A Rust raw identifier (`r#gen`, `r#type`) is one name, as its tags name it;
            // `r#"…"#` is a raw string and stays out.
            if matches!(style, Style::Keywords)
                && &text[start..at] == "r"
                && bytes.get(at) == Some(&b'#')
                && bytes
                    .get(at + 1)
                    .is_some_and(|b| b.is_ascii_alphabetic() || *b == b'_')
            {
                at += 1;
                while at < bytes.len() && is_word_byte(bytes[at]) {
                    at += 1;
                }
            }
            let word = &text[start..at];
            if !defining.contains(word) && may_define(text, style, line_start, start, at) {
                defining.insert(word);
            }
            if !referring.contains(word) && may_refer(text, style, line_start, start, at) {
                referring.insert(word);
            }
        } else if b.is_ascii_digit() {
            while at < bytes.len() && is_word_byte(bytes[at]) {
                at += 1;
            }
        } else {
            at += 1;
        }
    }
    (
        defining.into_iter().collect(),
        referring.into_iter().collect(),
    )
}

pub(crate) fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// Keywords after which a name is being defined: in every indexed language, and in
/// each style's own (JavaScript's `const f = () => …` is a function; Rust's `let` and
/// `const` name no definition its tags query reports).
const DEFINING_KEYWORDS: [&str; 10] = [
    "fn",
    "struct",
    "enum",
    "union",
    "type",
    "trait",
    "mod",
    "def",
    "class",
    "macro_rules!",
];
const GO_KEYWORDS: [&str; 1] = ["func"];
const PHP_KEYWORDS: [&str; 3] = ["function", "interface", "const"];
/// The words that make a PHP line declare properties (or promote constructor
/// parameters to them), whose names follow a `$`.
const PHP_PROPERTY_MODIFIERS: [&str; 5] = ["public", "private", "protected", "var", "readonly"];
const RUBY_KEYWORDS: [&str; 4] = ["def", "class", "module", "alias"];
/// The calls that define Ruby methods at run time, each by the symbols it is given
/// (`attr_reader :total, :count`), as `RUBY_TAGS_QUERY` counts them.
const RUBY_DEFINING_CALLS: [&str; 11] = [
    "alias_method",
    "delegate",
    "attr_reader",
    "attr_writer",
    "attr_accessor",
    "define_method",
    "scope",
    "has_many",
    "has_one",
    "belongs_to",
    "has_and_belongs_to_many",
];
const DECLARING_KEYWORDS: [&str; 9] = [
    "function",
    "interface",
    "namespace",
    "module",
    "record",
    "const",
    "let",
    "var",
    "abstract",
];

/// Keywords after which a name is referred to the way the tags queries count a
/// reference although no `(` follows: `impl Trait for Type`, `new Type`, `extends Base`.
const REFERRING_KEYWORDS: [&str; 5] = ["impl", "for", "new", "extends", "implements"];

/// Words that may stand before a definition's name on its line (modifiers, return
/// types are checked apart): the head of `pub async fn`, `export default class`,
/// `public static final`, `async *gen(`.
const MODIFIERS: [&str; 22] = [
    "pub",
    "export",
    "default",
    "async",
    "static",
    "public",
    "private",
    "protected",
    "readonly",
    "override",
    "abstract",
    "final",
    "synchronized",
    "native",
    "declare",
    "get",
    "set",
    "unsafe",
    "extern",
    "const",
    "let",
    "var",
];

/// Words after which a name followed by `(` is a call, not a method being declared.
const NOT_A_TYPE: [&str; 15] = [
    "return", "new", "throw", "else", "case", "await", "yield", "if", "while", "for", "match",
    "switch", "in", "not", "and",
];

/// Whether `after`, what follows a name on its line, assigns it a lambda: `= lambda x:`,
/// or after an annotation, `: Callable = lambda:`.
fn gives_a_lambda(after: &str) -> bool {
    let line = after.split('\n').next().unwrap_or("");
    let Some((_, value)) = line.split_once('=') else {
        return false;
    };
    let value = value.trim_start();
    value
        .strip_prefix("lambda")
        .is_some_and(|rest| rest.starts_with([' ', ':']))
}

/// Whether the word at `start..end` of `text` (whose line begins at `line_start`) stands
/// where a definition's name could in a language of `style`.
fn may_define(text: &str, style: Style, line_start: usize, start: usize, end: usize) -> bool {
    let before = text[line_start..start].trim_end_matches([' ', '\t']);
    let previous = previous_word(text, line_start, start);
    let keyword = |words: &[&str]| words.contains(&previous);
    if keyword(&DEFINING_KEYWORDS)
        || (style == Style::Go && keyword(&GO_KEYWORDS))
        || (matches!(style, Style::Declarations | Style::CSharp) && keyword(&DECLARING_KEYWORDS))
        || (style == Style::Ruby && keyword(&RUBY_KEYWORDS))
        || (style == Style::Php && keyword(&PHP_KEYWORDS))
    {
        return true;
    }
    let after = text[end..].trim_start_matches([' ', '\t']);
    let next = after.bytes().next().unwrap_or(b'\n');
    let head = before.trim_start();
    match style {
        Style::Keywords => false,
        // A property (`protected static $count, $other;`), a constant after the first of
        // a list (`const A = 1, B = 2;`), and a function that returns a reference
        // (`function &items()`).
        Style::Php => {
            let words_before = || before.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'));
            let property = text[..start].ends_with('$')
                && words_before().any(|word| PHP_PROPERTY_MODIFIERS.contains(&word));
            let listed_constant =
                before.ends_with(',') && next == b'=' && words_before().any(|word| word == "const");
            property
                || listed_constant
                || before
                    .strip_suffix('&')
                    .is_some_and(|head| previous_word(head, 0, head.len()) == "function")
        }
        Style::Ruby => {
            let first = head
                .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .next()
                .unwrap_or("");
            let symbol = before.ends_with(':') && !before.ends_with("::");
            // `def self.find`, `class Admin::User`: the name right after the receiver or
            // scope, not a later call on the line (`def delete_header(k); h.delete k`).
            let receiver = head[first.len()..].trim_start();
            let named = receiver
                .trim_end_matches(['.', ':'])
                .bytes()
                .all(|b| is_word_byte(b) || b == b':');
            (RUBY_KEYWORDS.contains(&first)
                && named
                && (before.ends_with('.') || before.ends_with("::")))
                // `attr_reader :a, :b`, a line of symbols that goes on its list, and
                // `alias :merge! :update`.
                || (symbol
                    && (RUBY_DEFINING_CALLS.contains(&first)
                        || first == "alias"
                        || head.starts_with(':')))
        }
        // A module constant (`NAME = …`), and a name given a lambda at any depth
        // (`order_total = lambda o: …`, `key: Callable = lambda r: …`).
        Style::KeywordsAndConstants => {
            let assigned = next == b'=' && !after.starts_with("==");
            (start == line_start && assigned)
                || (head.is_empty() && (assigned || next == b':') && gives_a_lambda(after))
        }
        // `func (s *Server) Handle(`, and `Config struct {` inside `type ( … )`.
        Style::Go => {
            (head.starts_with("func ") && before.ends_with(')'))
                || (head.is_empty()
                    && after.len() < text[end..].len()
                    && next.is_ascii_alphabetic())
        }
        // A typedef's name (`typedef unsigned long word_t;`, `} node_t;` closing a
        // typedef'd struct), a function-like macro (`#define CLAMP(`), and a function:
        // a name before `(` that is not a member (`list.count(`, `n->next(`) with
        // nothing but a return type before it (`static char *`, `Status Table::`,
        // `template <typename T> T`, GCC's `__attribute__((…))`), or nothing at all
        // (the next line of `static int`, a constructor in its class) unless the line
        // ends a statement there (`free(p);`: a call, or a prototype).
        Style::C => {
            let statement = head.is_empty()
                && text[end..]
                    .split('\n')
                    .next()
                    .is_some_and(|rest| rest.trim_end().ends_with(';'));
            head.starts_with("typedef")
                || head.starts_with('}')
                || previous == "define"
                || (next == b'('
                    && !statement
                    && !matches!(
                        &text[start..end],
                        "if" | "while" | "for" | "switch" | "return" | "sizeof"
                    )
                    && !before.ends_with('.')
                    && !before.ends_with("->")
                    && c_return_type(head))
        }
        // A member is defined only by assigning it a function (`proto.push = function`,
        // `Foo.prototype.end = () =>`), as the JavaScript tags count it; otherwise a name
        // after `.` is used, not defined (`a.b(`, `this.count = 0`).
        // An object literal's property whose value is a function (`visit(s, { string: () =>
        // … })`) is a definition to the JavaScript tags wherever it stands on its line.
        Style::Declarations | Style::CSharp => {
            let csharp = style == Style::CSharp;
            // A C# property: `public int Count { get; }`, or its `{` on the next line;
            // an event: `public event EventHandler Placed;`.
            let property = csharp
                && !head.is_empty()
                && (matches!(next, b'{' | b'\n' | b'\r')
                    || (matches!(next, b';' | b',')
                        && head.split_whitespace().any(|word| word == "event")));
            ((matches!(next, b'(' | b'<' | b'=' | b':') || property)
                && !after.starts_with("==")
                && (!before.ends_with('.')
                    || assigns_function(after)
                    || (csharp && head.contains(' ') && matches!(next, b'(' | b'<')))
                && declaration_head(head, csharp))
                || (!before.ends_with('.')
                    && after
                        .strip_prefix(':')
                        .is_some_and(|value| is_function(value.trim_start())))
        }
    }
}

/// Whether the Ruby symbol whose name starts at `start` names a method called: given to
/// a call that runs or takes it (`before_action :load, :check`, `send(:total)`,
/// `method(:parse)`, a list's next line), as a condition or a handler (`if: :paid?`,
/// `with: :not_found`), as a block (`&:total`), as an alias's old name
/// (`alias_method :to_s, :name`), or as what a `delegate` sends to (`to: :invoice`). A
/// superset of what `ruby_passed_query` counts: any such call before it on the line will
/// do (`only: [:show]` too).
fn ruby_symbol_called(text: &str, line_start: usize, start: usize) -> bool {
    let before = &text[..start - 1];
    let line = &text[line_start..start - 1];
    let keyed = before
        .trim_end()
        .strip_suffix("=>")
        .unwrap_or(before)
        .trim_end();
    before.ends_with('&')
        || line.trim().is_empty()
        || ["if:", "unless:", "with:", ":if", ":unless", ":with"]
            .iter()
            .any(|key| keyed.ends_with(key))
        || line
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .any(|word| {
                ruby_calls_symbols(word) || matches!(word, "alias" | "alias_method" | "delegate")
            })
}

/// Whether the word at `start..end` is a whole quoted string that may name a callable:
/// the method of a callable array (`[UserController::class, 'index']`, `[$this,
/// 'handle']`), or a function given to one that takes a callable (`array_map('trim', …)`,
/// `add_action('init', 'register_types')`, over lines too). A superset of what PHP's
/// passed query counts (it also asks which argument the string is).
fn php_callable_string(text: &str, start: usize, end: usize) -> bool {
    let Some(quote) = quote_ending(&text[..start]) else {
        return false;
    };
    if !text[end..].starts_with(quote) {
        return false;
    }
    let before = text[..start - 1].trim_end();
    let after_element = before.strip_suffix(',').map(str::trim_end);
    if after_element.is_some_and(|element| {
        element.ends_with("::class")
            || element
                .trim_end_matches(|c: char| c.is_ascii_alphanumeric() || c == '_')
                .ends_with('$')
    }) {
        return true;
    }
    open_call(before).is_some_and(|callee| {
        PHP_CALLABLE_FIRST.contains(&callee) || PHP_CALLABLE_SECOND.contains(&callee)
    })
}

/// Whether the word at `start..end` ends a quoted string that names a class's method
/// (`'Legacy::run'`, `'App\Http\InvoiceController@index'`): the same shape PHP's
/// passed query counts, wherever the string stands.
fn php_qualified_string(text: &str, start: usize, end: usize) -> bool {
    let before = &text[..start];
    let Some(class_end) = before
        .strip_suffix('@')
        .or_else(|| before.strip_suffix("::"))
    else {
        return false;
    };
    let class_start = class_end
        .trim_end_matches(|c: char| c.is_ascii_alphanumeric() || c == '_' || c == '\\')
        .len();
    let class = class_end[class_start..].trim_start_matches('\\');
    let Some(quote) = quote_ending(&class_end[..class_start]) else {
        return false;
    };
    class.starts_with(|c: char| c.is_ascii_uppercase()) && text[end..].starts_with(quote)
}

/// The quote `before` ends with, which opens the string that follows.
fn quote_ending(before: &str) -> Option<char> {
    before
        .chars()
        .next_back()
        .filter(|c| matches!(c, '\'' | '"'))
}

/// The name before the nearest `(` still open at the end of `before` (the call an
/// argument is given to), looked for over its last 512 bytes at most, and not past a
/// statement's or a block's edge.
fn open_call(before: &str) -> Option<&str> {
    let bytes = before.as_bytes();
    let mut depth = 0usize;
    let mut at = bytes.len();
    while at > bytes.len().saturating_sub(512) {
        at -= 1;
        match bytes[at] {
            b')' => depth += 1,
            b'(' if depth == 0 => {
                let head = before[..at].trim_end();
                return Some(previous_word(head, 0, head.len()));
            }
            b'(' => depth -= 1,
            b';' | b'{' | b'}' => return None,
            _ => {}
        }
    }
    None
}

/// Whether `head`, what stands before a name and its `(` on a line, can be a C or C++
/// function's return type and specifiers: words, `*`, `&`, `::`, template arguments;
/// no statement keyword, operator, assignment or call (parentheses only in a
/// compiler's `__attribute__((…))` or `__declspec(…)`).
fn c_return_type(head: &str) -> bool {
    let first = head
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .next()
        .unwrap_or("");
    let parenthesised = head.contains(['(', ')']) && !head.contains("__");
    !NOT_A_TYPE.contains(&first)
        && !parenthesised
        && !head.contains([
            '=', ';', '"', '\'', '{', '}', '?', '!', '+', '-', '/', '%', '|', '^', '.',
        ])
}

/// `after` (what follows a name) assigns it a function: `= function`, `= async …`,
/// `= (…) =>`, `= x =>`.
fn assigns_function(after: &str) -> bool {
    after
        .strip_prefix('=')
        .is_some_and(|value| !value.starts_with(['=', '>']) && is_function(value.trim_start()))
}

/// `value` starts a function: `function`, `async …`, `(…) =>` (or a parenthesised
/// expression: a candidate too many costs one parse), `x =>`.
fn is_function(value: &str) -> bool {
    let word_end = value
        .bytes()
        .position(|b| !is_word_byte(b))
        .unwrap_or(value.len());
    value.starts_with("function")
        || value.starts_with("async")
        || value.starts_with('(')
        || (word_end > 0 && value[word_end..].trim_start().starts_with("=>"))
}

/// The word before `start` on its line (a `!` kept, for `macro_rules!`).
fn previous_word(text: &str, line_start: usize, start: usize) -> &str {
    text[line_start..start]
        .trim_end_matches([' ', '\t'])
        .rsplit(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '!'))
        .next()
        .unwrap_or("")
}

/// Whether the word at `start..end` stands where a call or a reference could: not
/// where it is being defined (`fn main(`).
fn may_refer(text: &str, style: Style, line_start: usize, start: usize, end: usize) -> bool {
    let previous = previous_word(text, line_start, start);
    if REFERRING_KEYWORDS.contains(&previous) {
        return true;
    }
    if style == Style::Ruby {
        let symbol = text[..start].ends_with(':') && !text[..start].ends_with("::");
        if symbol && ruby_symbol_called(text, line_start, start) {
            return true;
        }
        // Not an instance or global variable (`@user`), another symbol (`:name`) or a
        // hash key or keyword argument (`name: value`): none of them is a call.
        let sigil = text[..start].ends_with(['@', '$']) || symbol;
        let key = text[end..].starts_with(':') && !text[end..].starts_with("::");
        return !sigil && !key && !may_define(text, style, line_start, start, end);
    }
    if style == Style::Go {
        // Go's tags count every type named (`x Foo`, `*Foo`, `[]Foo`, `Foo{…}`,
        // `pkg.Foo`, a result's `) Logger {`) as a use, the users a changed or removed
        // struct has: any word may be one.
        return true;
    }
    if style == Style::Php {
        return php_may_refer(text, line_start, start, end);
    }
    if style == Style::Declarations && listed_supertype(text, start) {
        return true;
    }
    // `impl<T: Send> Unpin for Pin<T>`, `impl<'a> Parser<'a>`: a trait or a type implemented
    // after generics, where no keyword stands before it.
    if style == Style::Keywords {
        let line = text[line_start..start].trim_start();
        if (line.starts_with("impl") || line.starts_with("unsafe impl"))
            && !matches!(&text[start..end], "for" | "where" | "dyn")
        {
            return true;
        }
    }
    if passed(text, style, line_start, start, end) {
        return true;
    }
    // TypeScript's tags count a type annotated (`order: Order`, `): Promise`) as a use:
    // the users of a changed interface.
    if style == Style::Declarations {
        let before = text[..start].trim_end();
        if before.ends_with(':') && !before.ends_with("::") {
            return true;
        }
    }
    let after = text[end..].trim_start_matches([' ', '\t']);
    // A C# or C++ generic call, `Get<User>(id)`, or Rust's turbofish, `repeat::<u8>(0)`:
    // its type arguments stand before the `(`; and a
    // member read without a call, `order.Total`, which may be a property or a getter (in
    // Java, whose tags count no reads, only a file more to parse for a callers question).
    let generic = (matches!(style, Style::CSharp | Style::C) && text[end..].starts_with('<'))
        || (style == Style::Keywords
            && text[end..].starts_with("::<")
            && text[start..end].starts_with(|c: char| !c.is_ascii_uppercase()));
    let member = matches!(
        style,
        Style::CSharp | Style::KeywordsAndConstants | Style::Declarations
    ) && text[..start].ends_with('.');
    (after.starts_with('(') || after.starts_with('!') || generic || member)
        && !DEFINING_KEYWORDS.contains(&previous)
        && !GO_KEYWORDS.contains(&previous)
        && previous != "function"
}

/// Whether the word at `start..end` stands alone as an argument (`map(parse)`, `f(a,
/// handler)`, over lines too), as a JSX attribute's value (`{submit}`), as a Python
/// keyword argument's (`target=worker`), as a decorator (`@login_required`), as the
/// method of a Java method reference (`this::handle`) or as a C# event's handler (`+=
/// OnClick;`): where a function is passed rather than called (see
/// `parley_grammars::passed`). A superset of what those tags count: they leave the
/// functions' variables out.
fn passed(text: &str, style: Style, line_start: usize, start: usize, end: usize) -> bool {
    let python = style == Style::KeywordsAndConstants;
    let declarations = style == Style::Declarations;
    let before = text[..start].trim_end();
    let after = text[end..].trim_start();
    let opens = before.ends_with(['(', ','])
        || (python && before.ends_with('='))
        || (declarations && before.ends_with('{'));
    let closes = after.starts_with([')', ',']) || (declarations && after.starts_with('}'));
    // C#: an event's handler, `button.Click += OnClick;`.
    let assigned = style == Style::CSharp && before.ends_with('=') && after.starts_with(';');
    (opens && closes)
        || assigned
        || (python && text[line_start..start].trim() == "@")
        || (declarations && text[..start].ends_with("::"))
}

/// [`may_refer`] in PHP: a call (`helper(`, `$a->m(`, `User::find(`), a property read
/// (`$order->owner`), a class created, extended or implemented (`new \App\Order`,
/// `implements Payable, \Countable`), a trait used (`use Logs, Audits;`); never a
/// variable (`$user`, `$this`).
fn php_may_refer(text: &str, line_start: usize, start: usize, end: usize) -> bool {
    if text[..start].ends_with('$') {
        return false;
    }
    if php_callable_string(text, start, end) || php_qualified_string(text, start, end) {
        return true;
    }
    let line = &text[line_start..start];
    // `new \App\Models\Order`: the word before the qualified name.
    let unqualified = if line.ends_with('\\') {
        line.trim_end_matches(|c: char| c.is_ascii_alphanumeric() || c == '_' || c == '\\')
    } else {
        line
    };
    let previous = previous_word(unqualified, 0, unqualified.len());
    let implemented = listed_supertype(text, line_start + unqualified.len());
    // A class's traits, `use Logs, Audits;`, inside its body: not a file's imports
    // (`use App\Models\User;` at the start of a line), which call nothing.
    let traits = line.starts_with([' ', '\t'])
        && unqualified.split_whitespace().next() == Some("use")
        && (previous == "use" || unqualified.trim_end().ends_with(','));
    let after = text[end..].trim_start_matches([' ', '\t']);
    REFERRING_KEYWORDS.contains(&previous)
        || implemented
        || traits
        || ((after.starts_with('(') || line.ends_with("->"))
            && !DEFINING_KEYWORDS.contains(&previous)
            && !PHP_KEYWORDS.contains(&previous))
}

/// Whether the word at `start` is one of a list after `extends` or `implements` (`extends
/// BaseType, TypeSignature,\n    TypeArgument {`), over lines too: each is a reference
/// the tags count, not only the first, which follows the keyword. Asked of every word
/// of a file, so it looks back only from a word after a comma or starting a line after
/// a word, and only over what a list of types is made of (an argument list stops at
/// its `(`).
fn listed_supertype(text: &str, start: usize) -> bool {
    let before = text[..start].trim_end();
    // After a comma, or at a line's start after a word (`implements\n    Payable`):
    // most words are neither.
    let after_a_word = before.bytes().next_back().is_some_and(is_word_byte)
        && text[before.len()..start].contains('\n');
    if !before.ends_with(',') && !after_a_word {
        return false;
    }
    let listed = |c: char| {
        c.is_ascii_alphanumeric()
            || c.is_whitespace()
            || matches!(
                c,
                '_' | '$' | '.' | ',' | '<' | '>' | '?' | '[' | ']' | '\\'
            )
    };
    // The run of list characters before the word, at most a few lines of it.
    let mut from = before.len();
    for (at, c) in before.char_indices().rev() {
        if !listed(c) || before.len() - at > LONGEST_LIST {
            break;
        }
        from = at;
    }
    let run = &before[from..];
    let keyword_end = ["extends", "implements"]
        .iter()
        .filter_map(|keyword| {
            run.rmatch_indices(keyword).find(|&(at, _)| {
                let head = run[..at].bytes().next_back();
                let tail = run[at + keyword.len()..].bytes().next();
                !head.is_some_and(is_word_byte) && tail.is_none_or(|b| b.is_ascii_whitespace())
            })
        })
        .map(|(at, keyword)| at + keyword.len())
        .max();
    keyword_end.is_some_and(|end| {
        let list = run[end..].trim_end();
        list.is_empty() || list.ends_with(',')
    })
}

/// How far back a list of supertypes is looked for (see [`listed_supertype`]).
const LONGEST_LIST: usize = 600;

/// Whether what stands before a name on its line is what stands before a declared
/// method or field: nothing, modifiers, or a type such as `List<String>`, `int[]`,
/// `Map.Entry<K, V>` (not `return`, `new`, `if`, an assignment or a call); in C# also a
/// tuple, `(int, string)`, and `new` as the modifier that hides an inherited member
/// (`public new Type GetType()`).
fn declaration_head(head: &str, csharp: bool) -> bool {
    head.split_whitespace().all(|token| {
        MODIFIERS.contains(&token)
            || token == "*"
            || (csharp && token == "new")
            || (!NOT_A_TYPE.contains(&token)
                && token.bytes().all(|b| {
                    is_word_byte(b)
                        || matches!(b, b'<' | b'>' | b'[' | b']' | b'.' | b',' | b'?')
                        || (csharp && matches!(b, b'(' | b')'))
                }))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn defining(text: &str, style: Style) -> Vec<&str> {
        let mut found = identifiers(text, style).0;
        found.sort_unstable();
        found
    }

    #[test]
    fn definition_shapes_in_each_language() {
        use Style::*;
        let cases: [(Style, &str, &str); 57] = [
            (Keywords, "pub(crate) async fn helper(x: i32) {}", "helper"),
            (
                Keywords,
                "impl S {\n    pub fn new() -> Self { S }\n}",
                "new",
            ),
            (Keywords, "macro_rules! my_macro { () => {} }", "my_macro"),
            (
                KeywordsAndConstants,
                "def helper(x):\n    return x",
                "helper",
            ),
            (KeywordsAndConstants, "MAX_SIZE = 10\n", "MAX_SIZE"),
            (
                KeywordsAndConstants,
                "class Row:\n    key: Callable = lambda row: row.rank\n",
                "key",
            ),
            (
                KeywordsAndConstants,
                "def f():\n    total = lambda o: o.sum\n",
                "total",
            ),
            (
                Declarations,
                "export default function helper() {}",
                "helper",
            ),
            (
                Declarations,
                "class A {\n  async handle(req) {}\n}",
                "handle",
            ),
            (Declarations, "const helper = (x) => x + 1;", "helper"),
            (
                Declarations,
                "  public static List<String> names(int limit) {",
                "names",
            ),
            (Declarations, "interface Shape { area(): number }", "Shape"),
            (
                Declarations,
                "const api = {\n  fetchAll: function () {},\n};",
                "fetchAll",
            ),
            (Go, "func (s *Server) Handle(w Writer) {}", "Handle"),
            (Go, "type Config struct {}", "Config"),
            (Go, "type (\n\tConfig struct {}\n)", "Config"),
            (Ruby, "  def valid?\n    true\n  end", "valid"),
            (Ruby, "  def self.find_by_token(t)\n  end", "find_by_token"),
            (Ruby, "class Admin::User < Base\nend", "User"),
            (Ruby, "module Billing\nend", "Billing"),
            (Ruby, "  alias each_item each", "each_item"),
            (Ruby, "  alias :merge! :update", "merge"),
            (Ruby, "  def self.find(id)", "find"),
            (Ruby, "class Admin::Users::Export", "Export"),
            (Ruby, "  attr_reader :total", "total"),
            (
                Ruby,
                "  has_many :line_items, dependent: :destroy",
                "line_items",
            ),
            (Ruby, "  define_method(:paid?) { true }", "paid"),
            (
                Ruby,
                "  attr_accessor :a,\n                :layouts",
                "layouts",
            ),
            (CSharp, "  public (int, string) Split(string s) {", "Split"),
            (CSharp, "  void IDisposable.Dispose() { }", "Dispose"),
            (CSharp, "  [Fact] public async Task Works() {", "Works"),
            (
                CSharp,
                "public sealed record Invoice(decimal Total);",
                "Invoice",
            ),
            (CSharp, "    public new Type GetType() =>", "GetType"),
            (
                CSharp,
                "    public int Count { get; private set; }",
                "Count",
            ),
            (
                CSharp,
                "    public decimal Total => Lines.Sum(l => l.Price);",
                "Total",
            ),
            (CSharp, "    public User? Owner\n    {", "Owner"),
            (
                CSharp,
                "    public event EventHandler<OrderEventArgs> Placed;",
                "Placed",
            ),
            (Declarations, "export class $ZodType {", "$ZodType"),
            (C, "static char *dup_string(const char *s) {", "dup_string"),
            (
                C,
                "static int\nparse_header (const char *buf)\n{",
                "parse_header",
            ),
            (C, "#define CLAMP(x) ((x) > 64 ? 64 : (x))", "CLAMP"),
            (C, "typedef unsigned long word_t;", "word_t"),
            (C, "typedef struct {\n    int len;\n} sds_t;", "sds_t"),
            (C, "union value {\n    int i;\n};", "value"),
            (C, "Status Table::Get(const Slice& key) const {", "Get"),
            (C, "template <typename T> T max_of(T a, T b) {", "max_of"),
            (C, "  int size() const { return n_; }", "size"),
            (
                C,
                "static inline __attribute__((always_inline)) int fast(int x) {",
                "fast",
            ),
            (
                Php,
                "    public static function fromArray(array $a): self {",
                "fromArray",
            ),
            (Php, "function &items() {", "items"),
            (Php, "final class Invoice extends Base {", "Invoice"),
            (Php, "enum Status: string {", "Status"),
            (Php, "    private ?User $owner = null;", "owner"),
            (Php, "    protected static $count, $other;", "other"),
            (
                Php,
                "    public function __construct(\n        private readonly Mailer $mailer,",
                "mailer",
            ),
            (Php, "    public const MAX = 10;", "MAX"),
            (Php, "    const MIN = 1, MAX = 10;", "MAX"),
        ];
        for (style, text, name) in cases {
            let found = defining(text, style);
            assert!(found.contains(&name), "{name} in {text:?}: {found:?}");
        }
    }

    #[test]
    fn calls_and_uses_are_not_definitions() {
        let cases: [(Style, &str); 7] = [
            (
                Style::Php,
                "<?php\nfunction main() {\n    $x = compute(1);\n    if (check($x)) { return $obj->method($x); }\n    $unwrap = Some::unwrap($x);\n}\n",
            ),
            (
                Style::Keywords,
                "fn main() {\n    let x = compute(1);\n    check(x);\n    obj.method(x);\n    Some(x).unwrap();\n}\n",
            ),
            (
                Style::KeywordsAndConstants,
                "def main():\n    x = compute(1)\n    check(x)\n    obj.method(x)\n",
            ),
            (
                Style::Declarations,
                "function main() {\n  const x = compute(1);\n  if (check(x)) { return obj.method(x); }\n  x == unwrap(x);\n}\n",
            ),
            (
                Style::Go,
                "func main() {\n\tx := compute(1)\n\tcheck(x)\n\tobj.method(x)\n}\n",
            ),
            (
                Style::Ruby,
                "def main\n  x = compute 1\n  check(x)\n  obj.method x\nend\n",
            ),
            (
                Style::CSharp,
                "void main() {\n  var x = compute(1);\n  if (check(x)) { obj.method(x); }\n  return obj.method(x);\n}\n",
            ),
        ];
        for (style, text) in cases {
            let found = defining(text, style);
            for name in ["compute", "check", "method", "Some", "unwrap"] {
                assert!(!found.contains(&name), "{style:?} {name}: {found:?}");
            }
            assert!(found.contains(&"main"), "{style:?}: {found:?}");
        }
        // In Python only a name given a lambda may be defined below a line's start.
        let python = defining(
            "def main():\n    x = compute(1)\n    y: int = 2\n    rows.sort(key=lambda r: r)\n",
            Style::KeywordsAndConstants,
        );
        for name in ["x", "y", "key", "r", "rows"] {
            assert!(!python.contains(&name), "{name}: {python:?}");
        }
    }

    /// In C a call that is a whole statement (`check(x);`), a member, an assigned
    /// value, a returned one and a condition never define; a call at the start of a line
    /// that goes on (`check(a,`) is shaped like a GNU-style definition
    /// (`parse_header (` under its return type): it may, and the parse decides.
    #[test]
    fn c_members_values_and_conditions_are_not_definitions() {
        let text = "int main(void) {\n    int x = compute(1);\n    if (check(x)) return obj.method(x);\n    n->next(x);\n    free(x);\n    return unwrap(x) + cache.get(x);\n    log_it(x,\n        2);\n}\n";
        let found = defining(text, Style::C);
        assert_eq!(found, ["log_it", "main"]);
        let (_, mut referring) = identifiers(
            "auto p = std::make_unique<Table>(3) + new Cache;\nhelper(1);",
            Style::C,
        );
        referring.sort_unstable();
        assert_eq!(referring, ["Cache", "helper", "make_unique"]);
    }

    #[test]
    fn references_are_calls_macros_and_implementations() {
        let text = "impl Display for Point {\n    fn fmt(&self) { write!(f, x); helper(1); self.other (2); let y = plain; }\n}\n";
        let mut found = identifiers(text, Style::Keywords).1;
        found.sort_unstable();
        // `f`, `x`: alone as arguments, they may be functions passed (the parse decides).
        assert_eq!(
            found,
            ["Display", "Point", "f", "helper", "other", "write", "x"]
        );
        // A trait or a type implemented after generics.
        let generic = identifiers(
            "impl<T: Send> Unpin for Pin<T> {}\nunsafe impl<'a> Parser<'a> {}\n",
            Style::Keywords,
        )
        .1;
        assert!(
            generic.contains(&"Unpin") && generic.contains(&"Parser"),
            "{generic:?}"
        );
        let path_call = identifiers(
            "fn f() { Point::new(1); S::<u8>::make(); iter::repeat::<u8>(0); }",
            Style::Keywords,
        )
        .1;
        let mut path_call = path_call;
        path_call.sort_unstable();
        assert_eq!(
            path_call,
            ["make", "new", "repeat"],
            "calls through a path, a turbofish's too"
        );
    }

    /// Each type of a list after `extends` or `implements`, on the keyword's line or
    /// those the list goes on over; not a word after the list.
    #[test]
    fn every_supertype_listed_is_a_reference() {
        let java = "public interface FieldTypeSignature\n    extends BaseType, TypeSignature, TypeArgument {}\nclass Store extends Base<K, V>\n    implements Readable,\n               Closeable {\n  int size = count;\n}\n";
        let found = identifiers(java, Style::Declarations).1;
        for name in [
            "BaseType",
            "TypeSignature",
            "TypeArgument",
            "Base",
            "Readable",
            "Closeable",
        ] {
            assert!(found.contains(&name), "{name}: {found:?}");
        }
        assert!(
            !found.contains(&"count") && !found.contains(&"size"),
            "{found:?}"
        );
        let php =
            "<?php\nclass Invoice extends Base implements\n    Payable,\n    \\Countable\n{\n}\n";
        let found = identifiers(php, Style::Php).1;
        assert!(
            found.contains(&"Payable") && found.contains(&"Countable"),
            "{found:?}"
        );
    }

    /// A function passed as a value may be a use: alone as an argument (over lines
    /// too), a JSX handler, a Python keyword argument or decorator; not a word inside a
    /// larger argument.
    #[test]
    fn functions_passed_as_values_may_refer() {
        let js = "app.get('/users', listUsers)\nitems.map(\n  normalise,\n)\n<button onClick={submit} title={a + b}>\nlog(x + y)\n";
        let mut found = identifiers(js, Style::Declarations).1;
        found.sort_unstable();
        assert_eq!(
            found,
            ["get", "listUsers", "log", "map", "normalise", "submit"]
        );
        let py = "@login_required\ndef view(request):\n    Thread(target=worker, daemon=True)\n    return sorted(xs, key=by_name)\n";
        let mut found = identifiers(py, Style::KeywordsAndConstants).1;
        found.sort_unstable();
        assert_eq!(
            found,
            [
                "Thread",
                "True",
                "by_name",
                "login_required",
                "request", // a parameter: the tags tell it from a function
                "sorted",
                "worker",
                "xs"
            ]
        );
        let mut rust = identifiers("fn f() { xs.map(parse); g(a + b) }", Style::Keywords).1;
        rust.sort_unstable();
        assert_eq!(rust, ["g", "map", "parse"], "a handler or a mapper passed");
        // Go: any word (a type named anywhere is a use).
        let mut go = identifiers(
            "var b jsonBinding\nfunc Wrap(c *Context) Logger {\n\thttp.HandleFunc(\"/\", handler)\n}\n",
            Style::Go,
        )
        .1;
        go.sort_unstable();
        assert_eq!(
            go,
            [
                "Context",
                "HandleFunc",
                "Logger",
                "Wrap",
                "b",
                "c",
                "func",
                "handler",
                "http",
                "jsonBinding",
                "var"
            ]
        );
        let mut typed = identifiers("function f(order: Order): Receipt {}", Style::Declarations).1;
        typed.sort_unstable();
        assert_eq!(typed, ["Order", "Receipt"], "types annotated");
        let csharp = identifiers("button.Click += OnClick;", Style::CSharp).1;
        assert!(csharp.contains(&"OnClick"), "{csharp:?}");
        let java = identifiers("list.forEach(this::handle);", Style::Declarations).1;
        assert!(java.contains(&"handle"), "{java:?}");
    }

    /// Ruby calls a method without parentheses: every word not being defined may be
    /// a call (the parse decides), but for variables, symbols and hash keys.
    #[test]
    fn ruby_calls_need_no_parentheses() {
        let text = "class Cart < Base\n  def total\n    items.sum price, Tax::rate, a ? b : c\n    render json: @cart, on: :save, via: $out\n  end\nend\n";
        let (mut defining, mut referring) = identifiers(text, Style::Ruby);
        defining.sort_unstable();
        referring.sort_unstable();
        assert_eq!(defining, ["Cart", "total"]);
        for name in [
            "Base", "items", "sum", "price", "Tax", "rate", "b", "render",
        ] {
            assert!(referring.contains(&name), "{name}: {referring:?}");
        }
        for name in ["total", "json", "cart", "on", "save", "via", "out"] {
            assert!(!referring.contains(&name), "{name}: {referring:?}");
        }
        // A call later on a `def` line is a call, not the name defined.
        let line = "  def delete_header(key); headers.delete key; end\n  def self.set(stop: string.length)\n";
        let (defining, referring) = identifiers(line, Style::Ruby);
        assert!(referring.contains(&"delete") && referring.contains(&"length"));
        assert!(!defining.contains(&"delete") && defining.contains(&"set"));
    }

    /// PHP: calls of functions, methods and static methods, property reads and the
    /// classes a line creates, extends or implements, by their last name when qualified;
    /// never a variable.
    #[test]
    fn php_references_are_calls_reads_and_classes() {
        let text = "<?php\nclass Invoice extends \\App\\Base implements Payable, \\Countable {\n    use Logs, Audits;\n    function total() {\n        $user = new \\App\\Models\\User;\n        $this->log($user->email, $order?->owner);\n        return helper(User::find($id));\n    }\n}\n";
        let (_, referring) = identifiers(text, Style::Php);
        for name in [
            "Base",
            "Payable",
            "Countable",
            "Logs",
            "Audits",
            "User",
            "log",
            "email",
            "owner",
            "helper",
            "find",
        ] {
            assert!(referring.contains(&name), "{name}: {referring:?}");
        }
        let imports = identifiers(
            "<?php\nuse App\\Models\\Order;\nuse Carbon\\Carbon, Closure;\n",
            Style::Php,
        )
        .1;
        assert!(imports.is_empty(), "{imports:?}");
        for name in ["total", "Invoice", "user", "this", "order", "id"] {
            assert!(!referring.contains(&name), "{name}: {referring:?}");
        }
    }

    #[test]
    fn raw_identifiers_are_one_name() {
        let text = "impl Rng {\n    fn r#gen(&mut self) -> u8 { 0 }\n}\nfn f(rng: &mut Rng) { rng.r#gen(); let s = r#\"raw\"#; }\n";
        let (defining, referring) = identifiers(text, Style::Keywords);
        assert!(defining.contains(&"r#gen"), "{defining:?}");
        assert!(referring.contains(&"r#gen"), "{referring:?}");
        assert!(!defining.contains(&"gen") && !referring.contains(&"gen"));
        // Elsewhere `r#` means nothing of the kind.
        let python = identifiers("def r(x):\n    return x#gen\n", Style::KeywordsAndConstants).0;
        assert_eq!(python, ["r"]);
    }

    #[test]
    fn functions_bound_to_members_and_properties_are_definitions() {
        let text = "proto.push = function () {\n};\nDBCSEncoder.prototype.end = function () {}\n\
                    module.exports.run = async (x) => x;\nobj.handler = x => x;\nexports.make = (a, b) => a;\n\
                    return visit(s, { object: (o) => o, string: () => z.string(), size: 3 });\n\
                    this.count = 0;\nreturn a.same == b;\nthis.list = items.map(f);\nlog.info(\"x\");\n";
        assert_eq!(
            defining(text, Style::Declarations),
            ["end", "handler", "make", "object", "push", "run", "string"]
        );
    }
}
