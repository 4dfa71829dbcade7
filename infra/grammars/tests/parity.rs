//! Each packed grammar parses exactly as the grammar crate's own build does: same trees
//! (S-expressions and error flags) over samples that reach the external scanners, and the
//! same counts of states, symbols and fields. A table unpacked wrong, short or not at all
//! changes the trees.

use parley_grammars::Grammar;
use tree_sitter::{Language, Parser};
use tree_sitter_language::LanguageFn;

/// Each grammar, the grammar crate's own build of it, and samples: well-formed ones that
/// reach the external scanners, then one broken one.
const CASES: &[(Grammar, LanguageFn, &[&str])] = &[
    (
        Grammar::Rust,
        tree_sitter_rust::LANGUAGE,
        &[
            "fn main() { let s = r#\"raw \"quoted\"\"#; /* nested /* block */ */ println!(\"{s}\"); }",
            "impl<T: Clone> Stack<T> { pub fn peek(&self) -> Option<&T> { self.items.last() } }",
            "struct S { a: u8, b: Vec<String> } // trailing",
            "fn broken( { let = ; }",
        ],
    ),
    (
        Grammar::Python,
        tree_sitter_python::LANGUAGE,
        &[
            "def f(x):\n    if x:\n        return f\"{x!r} and {x}\"\n    return None\n",
            "class C(Base):\n    \"\"\"doc\"\"\"\n    def m(self, *a, **k):\n        pass\n",
            "def broken(:\n  return\n",
        ],
    ),
    (
        Grammar::TypeScript,
        tree_sitter_typescript::LANGUAGE_TYPESCRIPT,
        &[
            "export function id<T>(x: T): T { return x; }\nconst f = <T,>(x: T) => `t ${x}`;",
            "interface I { a?: number; readonly b: string[] }\nclass C implements I { b = [] }",
            "let x: = ;",
        ],
    ),
    (
        Grammar::Tsx,
        tree_sitter_typescript::LANGUAGE_TSX,
        &[
            "export const App = ({ name }: { name: string }) => <div className=\"a\">{name}</div>;",
            "function F() { return <><A b={1} />text</>; }",
            "const broken = <div>;",
        ],
    ),
    (
        Grammar::Go,
        tree_sitter_go::LANGUAGE,
        &[
            "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tr := 'x'\n\tfmt.Println(`raw`, r)\n}\n",
            "package p\n\ntype T[K comparable] struct{ m map[K]int }\n\nfunc (t *T[K]) Get(k K) int { return t.m[k] }\n",
            "package p\nfunc broken( {",
        ],
    ),
    (
        Grammar::Java,
        tree_sitter_java::LANGUAGE,
        &[
            "public class A { @Override public String toString() { return \"a\" + 1; } }",
            "interface I<T> { default T id(T t) { return t; } }\nrecord R(int x) {}",
            "class Broken { void m( { }",
        ],
    ),
    (
        Grammar::Ruby,
        tree_sitter_ruby::LANGUAGE,
        &[
            "class User < Base\n  def self.find(id) = where(id: id).first\n  def valid?\n    name =~ /\\A\\w+\\z/ && !!@ok\n  end\nend\n",
            "text = <<~SQL\n  SELECT * FROM t WHERE a = #{x}\nSQL\nputs %w[a b], :sym, \"s #{1 + 2}\"\n",
            "def broken(\n  end end\n",
        ],
    ),
    (
        Grammar::CSharp,
        tree_sitter_c_sharp::LANGUAGE,
        &[
            "namespace App;\npublic record User(string Name);\npublic class Svc : IDisposable {\n  public async Task<User?> Load(int id) => await repo.Find(id);\n  void IDisposable.Dispose() { }\n}\n",
            "var s = $\"id {x,5:N0} {{literal}}\" + @\"C:\\path\" + \"\"\"\n  raw \"quoted\"\n  \"\"\";\n#if DEBUG\nConsole.WriteLine(s);\n#endif\n",
            "class Broken { void M( { }",
        ],
    ),
    (
        Grammar::C,
        tree_sitter_c::LANGUAGE,
        &[
            "#define CLAMP(x) ((x) > 64 ? 64 : (x))\nstatic char *dup(const char *s) {\n  char *c = malloc(strlen(s) + 1);\n  return c ? strcpy(c, s) : NULL;\n}\n",
            "typedef struct node { struct node *next; int (*cmp)(const void *, const void *); } node_t;\nenum color { RED = 1 << 2, GREEN };\n#ifdef DEBUG\nint x = 'a' + L'b';\n#endif\n",
            "int broken( { return ; ",
        ],
    ),
    (
        Grammar::Cpp,
        tree_sitter_cpp::LANGUAGE,
        &[
            "namespace db {\nclass Table : public Base {\n public:\n  explicit Table(int n) : n_(n) {}\n  int size() const { return n_; }\n private:\n  int n_;\n};\n}  // namespace db\n",
            "template <typename T>\nauto f(T t) -> std::unique_ptr<T> {\n  auto s = R\"sql(SELECT \"x\" FROM t)sql\";\n  return std::make_unique<T>(t);\n}\n",
            "class Broken { void m( { }",
        ],
    ),
    (
        Grammar::Php,
        tree_sitter_php::LANGUAGE_PHP,
        &[
            "<?php\nnamespace App;\nfinal class Invoice extends Base implements Payable {\n    public function __construct(private readonly ?User $owner = null) {}\n    public function total(): int { return $this->owner?->id ?? self::MAX; }\n}\n",
            "<?php\n$sql = <<<SQL\n  SELECT * FROM t WHERE a = {$x} AND b = '$y'\n  SQL;\n$raw = <<<'TXT'\n  $not_a_variable\n  TXT;\n?>\n<div><?= render($sql) ?></div>\n",
            "<?php\nfunction broken( { return ; ",
        ],
    ),
];

fn sexp(language: &Language, text: &str) -> (String, bool) {
    let mut parser = Parser::new();
    parser.set_language(language).expect("a compatible grammar");
    let tree = parser.parse(text, None).expect("a tree");
    (tree.root_node().to_sexp(), tree.root_node().has_error())
}

#[test]
fn every_packed_grammar_parses_as_the_crates_own() {
    assert_eq!(CASES.len(), Grammar::ALL.len());
    for &(grammar, own, samples) in CASES {
        let packed = grammar.language().expect("the tables unpack");
        let own = Language::new(own);
        assert_eq!(packed.abi_version(), own.abi_version(), "{grammar:?}");
        assert_eq!(
            packed.node_kind_count(),
            own.node_kind_count(),
            "{grammar:?}"
        );
        assert_eq!(
            packed.parse_state_count(),
            own.parse_state_count(),
            "{grammar:?}"
        );
        assert_eq!(packed.field_count(), own.field_count(), "{grammar:?}");
        for text in samples {
            let (ours, our_error) = sexp(&packed, text);
            let (theirs, their_error) = sexp(&own, text);
            assert_eq!(ours, theirs, "{grammar:?} on {text:?}");
            assert_eq!(our_error, their_error, "{grammar:?} on {text:?}");
        }
    }
}

#[test]
fn the_broken_samples_are_errors_and_the_others_are_not() {
    // Guards the comparison above against samples that parse to nothing interesting.
    for &(grammar, _, samples) in CASES {
        let language = grammar.language().expect("the tables unpack");
        let (last, rest) = samples.split_last().expect("samples");
        for text in rest {
            let (tree, error) = sexp(&language, text);
            assert!(!error, "{grammar:?} on {text:?}: {tree}");
            assert!(tree.matches('(').count() > 5, "{grammar:?}: {tree}");
        }
        assert!(sexp(&language, last).1, "{grammar:?} on {last:?}");
    }
}

#[test]
fn a_grammar_asked_for_from_many_threads_unpacks_once() {
    let threads: Vec<_> = (0..8)
        .map(|_| {
            std::thread::spawn(|| {
                let language = Grammar::Go.language().expect("the tables unpack");
                sexp(&language, "package p\nfunc f() {}\n")
            })
        })
        .collect();
    let trees: Vec<_> = threads
        .into_iter()
        .map(|t| t.join().expect("no panic"))
        .collect();
    assert!(trees.windows(2).all(|w| w[0] == w[1]), "{trees:?}");
    assert!(!trees[0].1, "{:?}", trees[0]);
}

#[test]
fn the_tables_are_carried_packed() {
    // The point of the crate: the tables in the binary are a fraction of their size.
    for grammar in Grammar::ALL {
        let (packed, unpacked) = parley_grammars::table_bytes(grammar);
        assert!(
            packed * 4 < unpacked,
            "{grammar:?}: {packed} packed bytes for {unpacked}"
        );
    }
}

#[test]
fn every_tags_query_compiles_against_its_grammar() {
    // A query that does not compile leaves its language to text only (the code index
    // logs it and goes on), so a pattern naming a node the grammar lacks fails here.
    for grammar in Grammar::ALL {
        let language = grammar.language().expect("the tables unpack");
        if let Err(err) = tree_sitter::Query::new(&language, &grammar.tags_query()) {
            panic!("{grammar:?}: {err}");
        }
    }
    let tsx = Grammar::Tsx.language().expect("the tables unpack");
    tree_sitter::Query::new(&tsx, &parley_grammars::javascript_tags_query())
        .expect("JavaScript's query, read with the TSX grammar");
}
