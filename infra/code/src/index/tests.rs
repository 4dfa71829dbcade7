use super::*;

fn index(files: &[(&str, &str)]) -> CodeIndex {
    let mut snapshot = Snapshot::default();
    for (path, text) in files {
        snapshot.files.insert(path.to_string(), text.to_string());
    }
    CodeIndex::build(snapshot)
}

/// Each language: the enclosing function of a line, a callee's definition in another
/// file, and its callers.
#[test]
fn definitions_callers_and_names_in_every_language() {
    let cases: [(&str, &str, &str, u32); 11] = [
        (
            "src/lib.rs",
            "fn helper(x: i32) -> i32 {\n    x + 1\n}\n",
            "fn main() {\n    let y = helper(2);\n}\n",
            2,
        ),
        (
            "lib.py",
            "def helper(x):\n    return x + 1\n",
            "def main():\n    y = helper(2)\n",
            2,
        ),
        (
            "lib.js",
            "function helper(x) {\n  return x + 1;\n}\n",
            "function main() {\n  const y = helper(2);\n}\n",
            2,
        ),
        (
            "lib.ts",
            "function helper(x: number): number {\n  return x + 1;\n}\n",
            "function main(): void {\n  const y = helper(2);\n}\n",
            2,
        ),
        (
            "lib.go",
            "package lib\n\nfunc helper(x int) int {\n\treturn x + 1\n}\n",
            "package lib\n\nfunc main() {\n\ty := helper(2)\n\t_ = y\n}\n",
            4,
        ),
        (
            "Lib.java",
            "class Lib {\n  static int helper(int x) {\n    return x + 1;\n  }\n}\n",
            "class Main {\n  void main() {\n    int y = Lib.helper(2);\n  }\n}\n",
            3,
        ),
        (
            "lib.rb",
            "module Lib\n  def self.helper(x)\n    x + 1\n  end\nend\n",
            "def main\n  y = Lib.helper 2\nend\n",
            2,
        ),
        (
            "Lib.cs",
            "static class Lib {\n  public static int helper(int x) => x + 1;\n}\n",
            "class App {\n  void main() {\n    var y = Lib.helper(2);\n  }\n}\n",
            3,
        ),
        (
            "lib.c",
            "static int\nhelper(int x)\n{\n    return x + 1;\n}\n",
            "int main(void) {\n    int y = helper(2);\n    return y;\n}\n",
            2,
        ),
        (
            "lib.cc",
            "namespace lib {\nint Lib::helper(int x) const {\n  return x + 1;\n}\n}  // namespace lib\n",
            "int main() {\n  auto y = lib.helper(2);\n  return y;\n}\n",
            2,
        ),
        (
            "lib.php",
            "<?php\nfunction helper($x) {\n    return $x + 1;\n}\n",
            "<?php\nfunction main() {\n    $y = helper(2);\n}\n",
            3,
        ),
    ];
    for (path, helper, main, call_line) in cases {
        let caller_path = format!("caller_{path}").replace("src/", "");
        let index = index(&[(path, helper), (&caller_path, main)]);
        let defs = index.definitions("helper");
        assert_eq!(defs.len(), 1, "{path}: {defs:?}");
        assert_eq!(defs[0].path, path);
        let used = index.names_used(&caller_path, call_line, call_line);
        assert!(used.contains(&"helper".to_string()), "{path}: {used:?}");
        let callers = index.callers("helper");
        assert_eq!(callers.len(), 1, "{path}: {callers:?}");
        assert_eq!(callers[0].name.as_deref(), Some("main"), "{path}");
        let enclosing = index.enclosing(&caller_path, call_line).expect("enclosing");
        assert_eq!(enclosing.name.as_deref(), Some("main"), "{path}");
        let text = index.text(&defs[0]).expect("text");
        assert!(text.contains("helper"), "{path}: {text}");
    }
}

/// C and C++: a function is its whole definition (a changed line in its body has it
/// around it), whatever it returns; a prototype is not a definition, a function-like
/// macro is; calls through a member, a scope or with template arguments are calls; a
/// macro's definition ends on its own line. All found lazily as parsing everything
/// would.
#[test]
fn c_and_cpp_functions_macros_and_methods() {
    let header = "#ifndef NODE_H\n#define NODE_H\n#define CLAMP(x) ((x) > 64 ? 64 : (x))\ntypedef struct node {\n    struct node *next;\n    int (*compare)(const void *, const void *);\n} node_t;\nnode_t *make_node(int len);\n#endif\n";
    let node = "#include \"node.h\"\nnode_t *make_node(int len) {\n    node_t *n = calloc(1, sizeof *n);\n    return n;\n}\n\nstatic char **\nsplit_lines(char *text)\n{\n    return NULL;\n}\n";
    let server = "#include \"node.h\"\nint serve(const char *buf) {\n    node_t *n = make_node(CLAMP(strlen(buf)));\n    return n->compare(buf, buf) + split_lines(buf) != NULL;\n}\n";
    let table = "namespace db {\nclass Table {\n public:\n  int size() const { return n_; }\n  static Table* Open(int n);\n};\nTable* Table::Open(int n) {\n  return new Table(n);\n}\nconst std::string& Table::name() const { return name_; }\n}  // namespace db\n";
    let app = "int run() {\n  auto t = db::Table::Open(3);\n  auto u = std::make_unique<db::Table>(t->size());\n  return cache.Lookup<int>(t->name());\n}\n";
    let files = [
        ("src/node.h", header),
        ("src/node.c", node),
        ("src/server.c", server),
        ("db/table.cc", table),
        ("app/run.cpp", app),
    ];
    let index = index(&files);
    let make_node = index.definitions("make_node");
    assert_eq!(
        make_node.len(),
        1,
        "the prototype is no definition: {make_node:?}"
    );
    assert_eq!(
        (
            make_node[0].path.as_str(),
            make_node[0].start,
            make_node[0].end
        ),
        ("src/node.c", 2, 5)
    );
    let split = index.definitions("split_lines");
    assert_eq!((split[0].start, split[0].end), (7, 11), "{split:?}");
    let clamp = index.definitions("CLAMP");
    assert_eq!((clamp[0].start, clamp[0].end), (3, 3), "{clamp:?}");
    assert_eq!(index.definitions("node_t").len(), 1);
    assert_eq!(index.definitions("node").len(), 1);
    assert_eq!(
        index.names_used("src/server.c", 3, 4),
        ["CLAMP", "compare", "make_node", "split_lines", "strlen"]
    );
    // A prototype is no definition, but a changed line in it is in its function.
    let prototype = index.enclosing("src/node.h", 8).expect("the prototype");
    assert_eq!(prototype.name.as_deref(), Some("make_node"));
    assert_eq!((prototype.start, prototype.end), (8, 8));
    let enclosing = index.enclosing("src/server.c", 4).expect("serve");
    assert_eq!(enclosing.name.as_deref(), Some("serve"));
    let callers = index.callers("make_node");
    assert_eq!(callers.len(), 1, "{callers:?}");
    assert_eq!(callers[0].name.as_deref(), Some("serve"));
    // C++: methods in and out of their class, calls through a scope and with template
    // arguments, `new`.
    for name in ["size", "Open", "name", "Table"] {
        assert!(!index.definitions(name).is_empty(), "{name}");
    }
    assert_eq!(
        index.names_used("app/run.cpp", 2, 4),
        ["Lookup", "Open", "make_unique", "name", "size"]
    );
    assert_eq!(index.names_used("db/table.cc", 8, 8), ["Table"]);
    let open = index.enclosing("db/table.cc", 8).expect("Open");
    assert_eq!(open.name.as_deref(), Some("Open"));
    for (name, from) in [
        ("make_node", "src/server.c"),
        ("split_lines", "src/server.c"),
        ("CLAMP", "src/server.c"),
        ("Open", "app/run.cpp"),
        ("name", "app/run.cpp"),
        ("size", "app/run.cpp"),
    ] {
        let lazy = self::index(&files);
        assert_eq!(
            lazy.definitions_near(name, from, 3),
            index.definitions(name),
            "{name}"
        );
    }
}

/// Ruby calls a method bare (`current_user`, `admin?`): such a name is a call unless a
/// local variable of that name was defined before it in its scope (parameters,
/// assignments), or around a block.
#[test]
fn ruby_bare_calls_are_calls_and_its_locals_are_not() {
    let index = index(&[
        (
            "app/helpers.rb",
            "module Helpers\n  def current_user\n    @user\n  end\n\n  def admin?\n    true\n  end\n\n  def total\n    1\n  end\nend\n",
        ),
        (
            "app/orders.rb",
            "class Orders\n  def show(item)\n    total = 3\n    if admin? && current_user.active?\n      total + item\n    end\n    [1].each { |x| x + total }\n    rescue => e\n    e.message\n  end\n\n  def other\n    total\n  end\nend\n",
        ),
    ]);
    let used = |line| index.names_used("app/orders.rb", line, line);
    assert_eq!(
        used(2),
        Vec::<String>::new(),
        "a definition's name and parameter"
    );
    assert_eq!(used(3), Vec::<String>::new(), "an assignment");
    assert_eq!(used(4), ["active", "admin", "current_user"]);
    assert_eq!(used(5), Vec::<String>::new(), "locals of the method");
    assert_eq!(
        used(7),
        ["each"],
        "a block's parameter, and a local around it"
    );
    assert_eq!(used(9), ["message"], "the rescued exception");
    assert_eq!(used(13), ["total"], "another method's local is a call here");
    // A hash pattern binds its keys' names, the shorthand's too.
    let matched = self::index(&[(
        "app/match.rb",
        "def show(order)
  case order
  in {total:, customer: buyer}
    total + buyer + current_user
  end
end
",
    )]);
    assert_eq!(
        matched.names_used("app/match.rb", 4, 4),
        ["current_user"],
        "pattern bindings are locals"
    );
    let callers = index.callers("current_user");
    assert_eq!(callers.len(), 1, "{callers:?}");
    assert_eq!(callers[0].name.as_deref(), Some("show"));
    let callers = index.callers("total");
    assert_eq!(callers.len(), 1, "{callers:?}");
    assert_eq!(callers[0].name.as_deref(), Some("other"));
}

/// Methods Ruby defines at run time are definitions under the symbol they name: the
/// readers of `attr_reader`, `define_method`'s, Rails' scopes and associations.
#[test]
fn ruby_methods_defined_at_run_time_are_definitions() {
    let model = "class Order < ApplicationRecord\n  has_many :line_items\n  belongs_to :customer, class_name: 'User'\n  scope :open, -> { where(state: :open) }\n  attr_reader :total,\n              :discount\n  define_method(:paid?) { state == :paid }\n  delegate :currency, :region, to: :customer\nend\n";
    let checkout = "class Checkout\n  def call(order)\n    order.total - order.discount if order.paid?\n  end\nend\n";
    let files = [
        ("app/models/order.rb", model),
        ("app/services/checkout.rb", checkout),
    ];
    let index = index(&files);
    for (name, line) in [
        ("line_items", 2),
        ("customer", 3),
        ("open", 4),
        ("total", 5),
        ("discount", 5),
        ("paid", 7),
        ("currency", 8),
        ("region", 8),
    ] {
        let defs = index.definitions(name);
        assert_eq!(defs.len(), 1, "{name}: {defs:?}");
        assert_eq!(defs[0].path, "app/models/order.rb", "{name}");
        assert_eq!(defs[0].start, line, "{name}");
    }
    for not_defined in ["state", "where", "User", "paid_at"] {
        assert!(index.definitions(not_defined).is_empty(), "{not_defined}");
    }
    // A fresh index finds them lazily from the file that uses them, as parsing all would,
    // on a line that goes on the list too.
    let lazy = self::index(&files);
    let near = lazy.definitions_near("discount", "app/services/checkout.rb", 3);
    assert_eq!(near.len(), 1, "{near:?}");
    // What a `delegate` sends to is called there, by the methods it defines.
    let callers = lazy.callers("customer");
    let at: Vec<u32> = callers.iter().map(|span| span.start).collect();
    assert_eq!(at, [8], "{callers:?}");
}

/// A method a symbol names is called where the symbol stands (by the class, for a
/// callback declared in its body): a Rails callback or validation, a condition and a
/// handler, a method taken or sent, a block made of it, an alias's old name (called by
/// the new one); found lazily too. A callback's options (`only: [:show]`) and other
/// symbols name no call; `alias_method` defines its new name.
#[test]
fn ruby_methods_named_by_symbols_are_called_there() {
    let controller = "class InvoicesController < ApplicationController
  before_action :set_invoice, only: [:show]
  skip_before_action :verify_token
  rescue_from ActiveRecord::RecordNotFound, with: :not_found
  alias_method :display, :show

  def show
    render json: @invoice, status: :ok
  end

  def totals
    Invoice.all.map(&:total).sum + send(:fee) + method(:parse).call
  end
end
";
    let model = "class Invoice
  validate :check_lines
  after_commit :notify,
    :audit, if: :paid?
  alias :to_s :number
end
";
    let files = [
        ("app/controllers/invoices_controller.rb", controller),
        ("app/models/invoice.rb", model),
    ];
    let index = index(&files);
    let mut wrong = Vec::new();
    for (name, caller) in [
        ("set_invoice", "InvoicesController"),
        ("verify_token", "InvoicesController"),
        ("not_found", "InvoicesController"),
        ("total", "totals"),
        ("fee", "totals"),
        ("parse", "totals"),
        ("check_lines", "Invoice"),
        ("notify", "Invoice"),
        ("audit", "Invoice"),
        ("paid", "Invoice"),
        ("show", "display"),
        ("number", "to_s"),
    ] {
        let callers = index.callers(name);
        let found: Vec<_> = callers
            .iter()
            .map(|c| (c.path.as_str(), c.name.as_deref()))
            .collect();
        if found.len() != 1 || found[0].1 != Some(caller) {
            wrong.push(format!("{name}: {found:?}"));
        }
    }
    for not_called in ["ok", "display", "to_s"] {
        let callers = index.callers(not_called);
        if !callers.is_empty() {
            wrong.push(format!("{not_called}: {callers:?}"));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
    let defs = index.definitions("display");
    assert_eq!(defs.len(), 1, "{defs:?}");
    // The word index sends each question to the files parsing all would find.
    let full = self::index(&files);
    full.parse_all();
    for name in [
        "set_invoice",
        "not_found",
        "total",
        "audit",
        "paid",
        "show",
        "number",
    ] {
        assert_eq!(
            self::index(&files).callers(name),
            full.callers_parsed(name),
            "{name}"
        );
    }
}

/// A PHP method or function a string names where it is taken is used there: a callable
/// array (a Laravel route's controller action, `[$this, 'handle']`), a function given to
/// one that takes a callable (`array_map`, `usort`, WordPress's `add_action`, over lines
/// too, `Closure::fromCallable`), a class's method named with it (`'Legacy::run'`, an
/// older Laravel route's `'InvoiceController@index'`); found lazily too. Other strings
/// (a hook's name, an array's keys, an address, SQL's `::jsonb`) name no call.
#[test]
fn php_callables_named_by_strings_are_used_there() {
    let routes = "<?php
use App\\Http\\Controllers\\InvoiceController;
Route::get('/invoices', [InvoiceController::class, 'index']);
Route::get('/old', 'InvoiceController@legacy');
Route::get('/older', ['uses' => '\\App\\Http\\Controllers\\InvoiceController@oldest']);
$mail = 'admin@localhost';
";
    let plugin = "<?php
function boot() {
    add_action('init', 'register_types');
    add_filter(
        'the_content',
        'append_footer'
    );
    $rows = array_map('normalise', $rows);
    usort($rows, \"by_date\");
    $row = ['status' => 'paid', 'total' => 1];
    call_user_func('Legacy::run');
    $fmt = Closure::fromCallable('to_row');
    $sql = 'SELECT ::jsonb FROM t';
}
class Hooks {
    public function wire() {
        add_action('save_post', [$this, 'on_save']);
    }
}
";
    let files = [("routes/web.php", routes), ("plugin.php", plugin)];
    let index = index(&files);
    let mut wrong = Vec::new();
    for (name, caller) in [
        ("index", None),
        ("register_types", Some("boot")),
        ("append_footer", Some("boot")),
        ("normalise", Some("boot")),
        ("by_date", Some("boot")),
        ("on_save", Some("wire")),
        ("legacy", None),
        ("oldest", None),
        ("run", Some("boot")),
        ("to_row", Some("boot")),
    ] {
        let callers = index.callers(name);
        let found: Vec<_> = callers.iter().map(|c| c.name.as_deref()).collect();
        if found != [caller] {
            wrong.push(format!("{name}: {callers:?}"));
        }
    }
    for not_called in [
        "init",
        "the_content",
        "save_post",
        "status",
        "paid",
        "total",
        "localhost",
        "jsonb",
    ] {
        let callers = index.callers(not_called);
        if !callers.is_empty() {
            wrong.push(format!("{not_called}: {callers:?}"));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
    // The word index sends each question to the files parsing all would find.
    let full = self::index(&files);
    full.parse_all();
    for name in [
        "index",
        "append_footer",
        "by_date",
        "on_save",
        "init",
        "paid",
        "legacy",
        "oldest",
        "run",
        "to_row",
    ] {
        assert_eq!(
            self::index(&files).callers(name),
            full.callers_parsed(name),
            "{name}"
        );
    }
}

/// A Go name called bare (`New()`) is its own package's, or a dot-imported package's,
/// even where the file imports another package defining it (`assert.New(t)`, on
/// another line, is that package's).
#[test]
fn a_go_name_used_bare_is_its_own_packages() {
    let files = [
        (
            "internal/log/logger.go",
            "package log\nfunc New() *Logger { return nil }\n",
        ),
        (
            "stretchr/testify/assert/assertions.go",
            "package assert\nfunc New(t T) *Assertions { return nil }\n",
        ),
        (
            "internal/log/logger_test.go",
            "package log\nimport \"github.com/stretchr/testify/assert\"\nfunc TestNew(t *testing.T) {\n\ta := assert.New(t)\n\tl := New()\n\ta.NotNil(l)\n}\n",
        ),
        (
            "pkg/zlog/logger.go",
            "package zlog\nfunc New() *Logger { return nil }\n",
        ),
        (
            "internal/other/new.go",
            "package other\nfunc New() int { return 0 }\n",
        ),
        (
            "internal/testutils/utils.go",
            "package testutils\nimport . \"example.com/x/pkg/zlog\"\nfunc F() {\n\tl := New()\n}\n",
        ),
    ];
    let index = index(&files);
    let first = |path: &str, line: u32| {
        index
            .definitions_near_line("New", path, line, 1)
            .pop()
            .map(|span| span.path)
    };
    let test = "internal/log/logger_test.go";
    assert_eq!(
        first(test, 4).as_deref(),
        Some("stretchr/testify/assert/assertions.go")
    );
    assert_eq!(first(test, 5).as_deref(), Some("internal/log/logger.go"));
    assert_eq!(
        first("internal/testutils/utils.go", 4).as_deref(),
        Some("pkg/zlog/logger.go")
    );
}

/// A Rust call through a path (`Store::open(…)`, `Self::check(…)`, a module's
/// `billing::total(…)`, a turbofish's) is a call: its callers are found, lazily too, and
/// its definition is read first where the path's type is imported from.
#[test]
fn rust_calls_through_a_path_are_calls() {
    let files = [
        (
            "src/store.rs",
            "pub struct Store;\nimpl Store {\n    pub fn open(path: &str) -> Store { Self::check(path); Store }\n    fn check(path: &str) {}\n}\n",
        ),
        (
            "src/cache.rs",
            "pub struct Cache;\nimpl Cache {\n    pub fn open() -> Cache { Cache }\n}\n",
        ),
        (
            "src/billing.rs",
            "pub fn total<T>(lines: &[T]) -> u64 { 0 }\n",
        ),
        (
            "src/api/load.rs",
            "use crate::store::Store;\nfn load() {\n    let s = Store::open(\"db\");\n    let t = crate::billing::total::<u8>(&[]);\n}\n",
        ),
    ];
    let index = index(&files);
    let callers = |name: &str| -> Vec<Option<String>> {
        index
            .callers(name)
            .into_iter()
            .map(|span| span.name)
            .collect()
    };
    assert_eq!(callers("check"), [Some("open".to_string())]);
    assert_eq!(callers("total"), [Some("load".to_string())]);
    let open = callers("open");
    assert_eq!(open, [Some("load".to_string())]);
    let near = index.definitions_near_line("open", "src/api/load.rs", 3, 1);
    assert_eq!(near[0].path, "src/store.rs", "{near:?}");
    let full = self::index(&files);
    full.parse_all();
    for name in ["open", "check", "total"] {
        assert_eq!(
            self::index(&files).callers(name),
            full.callers_parsed(name),
            "{name}"
        );
    }
}

/// Java finds a type's simple name first where the file imports it by name, then in the
/// file's own package, then in a package a wildcard import brings.
#[test]
fn a_java_type_is_its_own_packages_before_a_wildcard_imports() {
    let invoice = |pkg: &str| format!("package com.acme.{pkg};\npublic class Invoice {{}}\n");
    let (billing, legacy, other) = (invoice("billing"), invoice("legacy"), invoice("other"));
    let service = |imports: &str| {
        format!(
            "package com.acme.billing;\n{imports}\nclass Service {{\n  Invoice make() {{ return new Invoice(); }}\n}}\n"
        )
    };
    let (wildcard, named) = (
        service("import com.acme.legacy.*;"),
        service("import com.acme.other.Invoice;\nimport com.acme.legacy.*;"),
    );
    for (text, expected) in [
        (&wildcard, "src/com/acme/billing/Invoice.java"),
        (&named, "src/com/acme/other/Invoice.java"),
    ] {
        let files = [
            ("src/com/acme/billing/Service.java", text.as_str()),
            ("src/com/acme/billing/Invoice.java", billing.as_str()),
            ("src/com/acme/legacy/Invoice.java", legacy.as_str()),
            ("src/com/acme/other/Invoice.java", other.as_str()),
        ];
        let index = index(&files);
        let near = index.definitions_near("Invoice", "src/com/acme/billing/Service.java", 1);
        assert_eq!(near[0].path, expected, "{text}");
    }
}

/// A C# property (or an event) is a definition, and a member read without a call is a
/// reference to it: a changed line that reads `order.Owner` gets the getter that may
/// return null.
#[test]
fn csharp_properties_are_definitions_and_member_reads_use_them() {
    let order = "public class Order {\n    public int Count { get; private set; }\n    public User? Owner\n    {\n        get => _users.Find(OwnerId);\n    }\n}\n";
    let mailer = "public class Mailer {\n    public void Send(Order order) {\n        Deliver(order.Owner.Email, order.Count);\n    }\n}\n";
    let files = [("src/Order.cs", order), ("src/Mailer.cs", mailer)];
    let index = index(&files);
    let owner = index.definitions("Owner");
    assert_eq!(owner.len(), 1, "{owner:?}");
    assert_eq!((owner[0].start, owner[0].end), (3, 6));
    assert_eq!(index.definitions("Count").len(), 1);
    assert_eq!(index.names_used("src/Mailer.cs", 3, 3), ["Deliver"]);
    assert_eq!(
        index.names_read("src/Mailer.cs", 3, 3),
        ["Count", "Email", "Owner"],
        "read, not called"
    );
    // A member that is called is used, not only read.
    let calling = self::index(&[(
        "src/A.cs",
        "class A {\n  void M() {\n    repo.Load(repo.Items);\n  }\n}\n",
    )]);
    assert_eq!(calling.names_used("src/A.cs", 3, 3), ["Load"]);
    assert_eq!(calling.names_read("src/A.cs", 3, 3), ["Items"]);
    let callers = index.callers("Owner");
    assert_eq!(callers.len(), 1, "{callers:?}");
    assert_eq!(callers[0].name.as_deref(), Some("Send"));
    let enclosing = index
        .enclosing("src/Order.cs", 5)
        .expect("the getter's property");
    assert_eq!(enclosing.name.as_deref(), Some("Owner"));
    // A fresh index finds them lazily, as parsing everything would.
    let lazy = self::index(&files);
    assert_eq!(lazy.definitions_near("Owner", "src/Mailer.cs", 3), owner);
    // Events, with or without accessors, are read like properties.
    let events = [
        (
            "src/Cart.cs",
            "public class Cart {\n    public event EventHandler<CartEventArgs> Placed;\n    public event EventHandler Emptied\n    {\n        add => _handlers.Add(value);\n        remove => _handlers.Remove(value);\n    }\n}\n",
        ),
        (
            "src/Shop.cs",
            "public class Shop {\n    public void Watch(Cart cart) {\n        cart.Placed += OnPlaced;\n        cart.Emptied += OnEmptied;\n    }\n}\n",
        ),
    ];
    let index = self::index(&events);
    // The events read, and the handlers passed to them.
    assert_eq!(
        index.names_read("src/Shop.cs", 3, 4),
        ["Emptied", "OnEmptied", "OnPlaced", "Placed"]
    );
    for name in ["Placed", "Emptied"] {
        let all = index.definitions(name);
        assert_eq!(all.len(), 1, "{name}: {all:?}");
        let lazy = self::index(&events);
        assert_eq!(lazy.definitions_near(name, "src/Shop.cs", 3), all, "{name}");
    }
}

/// PHP: a class's methods and properties (promoted from a constructor's parameters too)
/// are definitions under their names without the `$`; an interface's method without a
/// body is a declaration; calls through `->`, `?->` and `::` are calls, a property read
/// without a call is read; variables are neither. Found lazily as parsing everything
/// would, in a template with HTML around the code too.
#[test]
fn php_methods_properties_and_calls() {
    let invoice = "<?php\nnamespace App\\Billing;\n\ninterface Payable\n{\n    public function pay(int $amount): bool;\n}\n\nfinal class Invoice extends Base implements Payable\n{\n    private ?User $owner = null;\n\n    public function __construct(\n        private readonly Mailer $mailer,\n    ) {}\n\n    public function pay(int $amount): bool\n    {\n        $this->mailer->send($this->owner?->email);\n        return Ledger::record($amount);\n    }\n}\n";
    let page = "<html><?php foreach ($invoices as $invoice): ?>\n<p><?= $invoice->pay(10) ? 'paid' : render_error($invoice->owner) ?></p>\n<?php endforeach; ?></html>\n";
    let checkout = "<?php\nclass Checkout {\n    use Logs, Audits;\n    public function close(Invoice $invoice): void {\n        $invoice->pay(10);\n    }\n}\n";
    let files = [
        ("src/Invoice.php", invoice),
        ("views/list.phtml", page),
        ("src/Checkout.php", checkout),
    ];
    let index = index(&files);
    let pay = index.definitions("pay");
    assert_eq!(pay.len(), 1, "the class's, not the interface's: {pay:?}");
    let declared = index.enclosing("src/Invoice.php", 6).expect("declared");
    assert_eq!((declared.name.as_deref(), declared.start), (Some("pay"), 6));
    assert_eq!(index.definitions("owner").len(), 1);
    assert_eq!(index.definitions("mailer").len(), 1, "a promoted parameter");
    assert!(index.definitions("amount").is_empty(), "a parameter");
    let enclosing = index.enclosing("src/Invoice.php", 19).expect("the method");
    assert_eq!(enclosing.name.as_deref(), Some("pay"));
    assert_eq!((enclosing.start, enclosing.end), (17, 21));
    assert_eq!(
        index.names_used("src/Invoice.php", 19, 20),
        ["record", "send"]
    );
    assert_eq!(
        index.names_read("src/Invoice.php", 19, 19),
        ["email", "mailer", "owner"]
    );
    assert_eq!(
        index.names_used("views/list.phtml", 2, 2),
        ["pay", "render_error"]
    );
    // The method that calls it, and the template's lines around its call (no function
    // encloses them), the whole short file.
    let callers = index.callers("pay");
    let found: Vec<_> = callers
        .iter()
        .map(|c| (c.path.as_str(), c.start, c.end, c.name.as_deref()))
        .collect();
    assert_eq!(
        found,
        [
            ("src/Checkout.php", 4, 6, Some("close")),
            ("views/list.phtml", 1, 3, None)
        ]
    );
    assert_eq!(
        index.names_used("src/Checkout.php", 3, 3),
        ["Audits", "Logs"],
        "the traits it uses"
    );
    // A fresh index finds them lazily, as parsing everything would.
    for (name, from) in [("owner", "views/list.phtml"), ("mailer", "src/Invoice.php")] {
        let lazy = self::index(&files);
        assert_eq!(
            lazy.definitions_near(name, from, 3),
            index.definitions(name),
            "{name}"
        );
    }
}

/// A Vue or Svelte component: its `<script>` blocks are read where they stand (a
/// definition and a call keep their lines in the file), its template is not (a word
/// there defines nothing); found lazily as parsing everything would.
#[test]
fn component_scripts_are_read_where_they_stand() {
    let api = "export async function saveOrder(order: Order): Promise<void> {\n  await http.post('/orders', order)\n}\n";
    let vue = "<template>\n  <button @click=\"submit()\">function decoy() {}</button>\n</template>\n\n<script setup lang=\"ts\">\nimport { saveOrder } from '../api'\n\nfunction submit() {\n  saveOrder(order.value)\n}\n</script>\n\n<style scoped>\n.a { color: red }\n</style>\n";
    let svelte = "<main class=\"cart\">\n  <h1>Your cart</h1>\n  <p>Check the lines and the address before you order.</p>\n  <button on:click={save}>Save</button>\n</main>\n\n<script>\n  import { saveOrder } from './api'\n  export let order\n  const save = () => saveOrder(order)\n</script>\n";
    let files = [
        ("src/api.ts", api),
        ("src/components/Checkout.vue", vue),
        ("src/Cart.svelte", svelte),
    ];
    let index = index(&files);
    let submit = index.definitions("submit");
    assert_eq!(submit.len(), 1, "{submit:?}");
    assert_eq!((submit[0].start, submit[0].end), (8, 10));
    assert!(
        index.definitions("decoy").is_empty(),
        "template text is not code"
    );
    assert_eq!(
        index.names_used("src/components/Checkout.vue", 9, 9),
        ["saveOrder"]
    );
    let callers = index.callers("saveOrder");
    let names: BTreeSet<Option<&str>> = callers.iter().map(|c| c.name.as_deref()).collect();
    assert_eq!(
        names,
        BTreeSet::from([Some("save"), Some("submit")]),
        "{callers:?}"
    );
    assert_eq!(index.definitions("save").len(), 1);
    let lazy = self::index(&files);
    assert_eq!(
        lazy.definitions_near("saveOrder", "src/components/Checkout.vue", 3),
        index.definitions("saveOrder")
    );
    assert_eq!(lazy.callers("saveOrder").len(), 2);
    // After a component, the same parser reads a whole file again (one parse of all
    // three, in path order: `src/Cart.svelte` before `src/api.ts`).
    let all = self::index(&files);
    all.parse_all();
    let ts = all.enclosing("src/api.ts", 2).expect("the function");
    assert_eq!(ts.name.as_deref(), Some("saveOrder"));
    // Astro: the frontmatter is code, the page under it is not.
    let astro = "---\nimport { saveOrder } from '../api'\nfunction heading(title: string) {\n  return saveOrder(title)\n}\n---\n<h1>{heading('Cart')}</h1>\n<p>function decoy() {}</p>\n";
    let page = self::index(&[("src/api.ts", api), ("src/pages/cart.astro", astro)]);
    let heading = page.definitions("heading");
    assert_eq!(heading.len(), 1, "{heading:?}");
    assert_eq!((heading[0].start, heading[0].end), (3, 5));
    assert!(page.definitions("decoy").is_empty());
    assert_eq!(
        page.callers("saveOrder")[0].name.as_deref(),
        Some("heading")
    );
    // An HTML page's module script is code too; its JSON-LD is not.
    let html = "<script type=\"application/ld+json\">{\"name\": \"x\"}</script>\n<script type=\"module\">\nfunction boot() {\n  saveOrder(cart)\n}\n</script>\n";
    let page = self::index(&[("src/api.ts", api), ("public/index.html", html)]);
    let callers = page.callers("saveOrder");
    assert_eq!(callers.len(), 1, "{callers:?}");
    assert_eq!(
        (callers[0].name.as_deref(), callers[0].start),
        (Some("boot"), 3)
    );
    // A component without a script has nothing to tag.
    let bare = self::index(&[("src/Bare.vue", "<template><p>hi</p></template>\n")]);
    assert!(bare.enclosing("src/Bare.vue", 1).is_none());
}

/// A component's template uses what its script defines (`@click="submit"`,
/// `on:click={save}`): those lines are its callers, found lazily (the word index holds
/// the template's names), and a changed template line uses them.
#[test]
fn component_templates_use_what_their_scripts_define() {
    let vue = "<template>\n  <form>\n    <p>{{ total(order) }}</p>\n    <button @click=\"submit\">Send</button>\n  </form>\n</template>\n\n<script setup lang=\"ts\">\nfunction submit() {\n  send(order)\n}\n</script>\n";
    let svelte = "<script>\n  import { save } from './api'\n</script>\n\n<h1>Cart</h1>\n<p>Lines</p>\n<p>More</p>\n<p>Even more</p>\n<button on:click={save}>Save</button>\n";
    let api = "export function save() {}\nexport function total(order) {\n  return order.sum\n}\n";
    let files = [
        ("src/api.ts", api),
        ("src/Cart.svelte", svelte),
        ("src/Checkout.vue", vue),
    ];
    let index = index(&files);
    let spans = |name: &str| -> Vec<(String, u32, u32)> {
        index
            .callers(name)
            .into_iter()
            .map(|c| (c.path, c.start, c.end))
            .collect()
    };
    assert_eq!(spans("submit"), [("src/Checkout.vue".to_string(), 1, 7)]);
    assert_eq!(spans("save"), [("src/Cart.svelte".to_string(), 6, 9)]);
    assert_eq!(
        index.names_used("src/Checkout.vue", 3, 4),
        ["order", "submit", "total"]
    );
    let lazy = self::index(&files);
    let near = lazy.callers_near("total", "src/api.ts", 3);
    assert_eq!(near.len(), 1, "{near:?}");
    assert_eq!(
        (near[0].path.as_str(), near[0].start),
        ("src/Checkout.vue", 1)
    );
    assert_eq!(
        lazy.parsed_count(),
        1,
        "the one file whose words hold the name"
    );
    // Angular: the class in its `.ts` file, the template in its `.html`.
    let class = "export class OrderComponent {\n  submit(): void {\n    this.api.save(this.order)\n  }\n}\n";
    let template = "<h1>Order</h1>\n<form (ngSubmit)=\"submit()\">\n</form>\n";
    let angular = self::index(&[
        ("src/app/order.component.ts", class),
        ("src/app/order.component.html", template),
    ]);
    let near = angular.callers_near("submit", "src/app/order.component.ts", 3);
    assert_eq!(near.len(), 1, "{near:?}");
    assert_eq!(
        (near[0].path.as_str(), near[0].start, near[0].end),
        ("src/app/order.component.html", 1, 3)
    );
}

/// A use no definition encloses (a module's top level, an anonymous callback) is a
/// caller too: its lines and three either side, uses whose windows touch read as one.
#[test]
fn uses_outside_any_function_are_callers_with_their_lines() {
    let lib = "export function total(xs) {\n  return xs.length\n}\n";
    let server = "import { total } from './lib'\nconst app = express()\napp.get('/n', (req, res) => {\n  res.json(total(req.body))\n})\nconst first = total([1])\n\n\n\n\n\n\n\nconst last = total([2])\nfunction wrapped() {\n  return total([])\n}\n";
    let index = index(&[("src/lib.js", lib), ("src/server.js", server)]);
    let callers: Vec<_> = index
        .callers("total")
        .into_iter()
        .map(|c| (c.start, c.end, c.name))
        .collect();
    assert_eq!(
        callers,
        [
            (15, 17, Some("wrapped".to_string())),
            (1, 9, None),
            (11, 17, None)
        ]
    );
}

/// A function passed as a value (a route's handler, a callback, a JSX handler, a
/// thread's target, a decorator) is used where it is passed, found lazily too; a
/// variable or parameter of the same name passed is not a use of it, and a passed name
/// is not looked up as one a changed line calls.
#[test]
fn functions_passed_as_values_are_used_where_they_are_passed() {
    let handlers = "export function listUsers(req, res) {}\nexport function normalise(x) { return x }\nexport function submit() {}\n";
    let routes = "const { listUsers, normalise } = require('./handlers')\nrouter.get('/users', listUsers)\n\n\n\n\n\nfunction clean(rows) {\n  return rows.map(\n    normalise,\n  )\n}\nfunction local(listUsers) {\n  return wrap(listUsers)\n}\n";
    let form = "import { submit } from './handlers'\nexport function Form() {\n  return <button onClick={submit}>Send</button>\n}\n";
    let jobs = "from threading import Thread\nfrom auth import login_required\n\ndef start(worker):\n    Thread(target=worker).start()\n\ndef flush():\n    pass\n\ndef run():\n    Thread(target=flush).start()\n\n@login_required\ndef view(request):\n    return request\n";
    let files = [
        ("src/handlers.js", handlers),
        ("src/routes.js", routes),
        ("src/Form.jsx", form),
        ("app/jobs.py", jobs),
    ];
    let index = index(&files);
    let callers = |name: &str| -> Vec<(String, u32, Option<String>)> {
        index
            .callers(name)
            .into_iter()
            .map(|c| (c.path, c.start, c.name))
            .collect()
    };
    assert_eq!(
        callers("listUsers"),
        [("src/routes.js".to_string(), 1, None)],
        "the route (the module's import is no variable), not the parameter passed in `local`"
    );
    assert_eq!(
        callers("normalise"),
        [("src/routes.js".to_string(), 8, Some("clean".to_string()))]
    );
    assert_eq!(
        callers("submit"),
        [("src/Form.jsx".to_string(), 2, Some("Form".to_string()))]
    );
    assert_eq!(
        callers("flush"),
        [("app/jobs.py".to_string(), 10, Some("run".to_string()))]
    );
    assert!(callers("worker").is_empty(), "a parameter passed");
    assert_eq!(
        callers("login_required"),
        [("app/jobs.py".to_string(), 10, None)],
        "a decorator, around its line"
    );
    assert_eq!(
        index.names_used("src/routes.js", 10, 10),
        Vec::<String>::new()
    );
    let lazy = self::index(&files);
    assert_eq!(
        lazy.callers_near("normalise", "src/handlers.js", 3).len(),
        1
    );
    assert_eq!(lazy.callers_near("submit", "src/handlers.js", 3).len(), 1);
}

/// A function a changed line passes (a callback, a thread's target) is looked up as one
/// it reads, its definition found lazily; a parameter passed is not, nor a name that
/// stands where a definition could in more files than a function's name would (a
/// module's `config`, assigned in each).
#[test]
fn functions_passed_on_a_line_are_looked_up() {
    let handlers = "export function normalise(x) { return x }\n";
    let routes = "import { normalise } from './handlers'\nexport function clean(rows, fix) {\n  return rows.map(normalise).map(fix)\n}\n";
    let jobs = "config = load()\n\ndef flush():\n    pass\n\ndef run():\n    Thread(target=flush).start()\n    configure(config)\n";
    let mut files = vec![
        ("src/handlers.js", handlers.to_string()),
        ("src/routes.js", routes.to_string()),
        ("app/jobs.py", jobs.to_string()),
    ];
    for n in 0..4 {
        files.push((
            ["app/a.py", "app/b.py", "app/c.py", "app/d.py"][n],
            "config = {}\n".into(),
        ));
    }
    let files: Vec<(&str, &str)> = files.iter().map(|(p, t)| (*p, t.as_str())).collect();
    let index = index(&files);
    assert_eq!(index.names_read("src/routes.js", 3, 3), ["normalise"]);
    assert_eq!(index.names_read("app/jobs.py", 7, 8), ["flush"]);
    // A name the file imports is looked up however many files may define it.
    let importing = "from app.a import config\n\ndef run():\n    configure(config)\n";
    let mut more = files.clone();
    more.push(("app/run.py", importing));
    assert_eq!(
        self::index(&more).names_read("app/run.py", 4, 4),
        ["config"]
    );
    let lazy = self::index(&files);
    let near = lazy.definitions_near("normalise", "src/routes.js", 3);
    assert_eq!(near, index.definitions("normalise"));
    assert_eq!(
        (near[0].path.as_str(), near[0].start),
        ("src/handlers.js", 1)
    );
}

/// A name defined in many places is looked up first where the file using it imports it
/// from, before homonyms in its own directory, lazily as parsing everything would rank
/// them.
#[test]
fn a_name_is_defined_first_where_it_is_imported_from() {
    let validate = |what: &str| format!("export function validate(x) {{\n  return {what}(x)\n}}\n");
    let (order, form, user, shared) = (
        validate("order"),
        validate("form"),
        validate("user"),
        validate("shared"),
    );
    let checkout = "import { validate } from '../../lib/shared/rules'\nexport function submit(o) {\n  return validate(o)\n}\n";
    let files = [
        ("src/checkout/submit.js", checkout),
        ("src/checkout/order.js", order.as_str()),
        ("src/checkout/form.js", form.as_str()),
        ("src/accounts/user.js", user.as_str()),
        ("lib/shared/rules.js", shared.as_str()),
    ];
    let index = index(&files);
    let near = index.definitions_near("validate", "src/checkout/submit.js", 3);
    let paths: Vec<&str> = near.iter().map(|s| s.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "lib/shared/rules.js",
            "src/checkout/form.js",
            "src/checkout/order.js"
        ]
    );
    let lazy = self::index(&files);
    assert_eq!(
        lazy.definitions_near("validate", "src/checkout/submit.js", 1),
        near[..1]
    );
    assert_eq!(
        lazy.parsed_count(),
        3,
        "the two beside the importing file and the module imported, not the one elsewhere"
    );
}

/// A C# `using` names a namespace, not a type: the class comes first from the directory
/// the namespace is laid out in, ahead of a homonym in path order; and a Python module
/// imported whole (`import shop.rules`) is where `shop.rules.validate` is defined.
#[test]
fn a_name_is_defined_first_in_the_namespace_or_module_imported_whole() {
    let class = |ns: &str| {
        format!(
            "namespace {ns}\n{{\n    public class Invoice\n    {{\n        public int Total() {{ return 1; }}\n    }}\n}}\n"
        )
    };
    let (legacy, billing) = (class("Acme.Archive"), class("Acme.Billing"));
    let controller = "using Acme.Billing;\n\nnamespace Acme.Web\n{\n    public class Home\n    {\n        public Invoice Show() { return new Invoice(); }\n    }\n}\n";
    let files = [
        ("src/Acme.Archive/Invoice.cs", legacy.as_str()),
        ("src/Acme.Billing/Invoice.cs", billing.as_str()),
        ("src/Acme.Web/Home.cs", controller),
    ];
    let near = index(&files).definitions_near("Invoice", "src/Acme.Web/Home.cs", 2);
    let paths: Vec<&str> = near.iter().map(|s| s.path.as_str()).collect();
    assert_eq!(
        paths,
        ["src/Acme.Billing/Invoice.cs", "src/Acme.Archive/Invoice.cs"]
    );

    // C# looks in the namespaces a file is in (its own, then their parents) before
    // those its `using`s bring: `Acme.Web`'s `Invoice`, not `Acme.Billing`'s.
    let web = class("Acme.Web");
    let home = controller.replace("namespace Acme.Web\n", "namespace Acme.Web.Controllers\n");
    let files = [
        ("src/Acme.Billing/Invoice.cs", billing.as_str()),
        ("src/Acme.Web/Invoice.cs", web.as_str()),
        ("src/Acme.Web/Controllers/Home.cs", home.as_str()),
    ];
    let near = index(&files).definitions_near("Invoice", "src/Acme.Web/Controllers/Home.cs", 2);
    let paths: Vec<&str> = near.iter().map(|s| s.path.as_str()).collect();
    assert_eq!(
        paths,
        ["src/Acme.Web/Invoice.cs", "src/Acme.Billing/Invoice.cs"]
    );

    let rules = |what: &str| format!("def validate(x):\n    return {what}(x)\n");
    let (forms, shop) = (rules("form"), rules("shop"));
    let checkout = "import shop.rules\n\ndef submit(o):\n    return shop.rules.validate(o)\n";
    let files = [
        ("app/forms/rules.py", forms.as_str()),
        ("app/shop/rules.py", shop.as_str()),
        ("app/checkout.py", checkout),
    ];
    let near = index(&files).definitions_near("validate", "app/checkout.py", 1);
    assert_eq!(near[0].path, "app/shop/rules.py");
}

/// In a monorepo an import names a workspace package (`@acme/billing`), not its
/// directory: the package's `package.json` says where it is, so its definition comes
/// first, and its importers are its first callers, ahead of a homonym's.
#[test]
fn a_workspace_package_is_found_where_its_manifest_is() {
    let convert = |what: &str| format!("export function toInvoice(o) {{\n  return {what}(o)\n}}\n");
    let (admin, billing) = (convert("admin"), convert("billing"));
    let page = "import { toInvoice } from '@acme/billing'\nexport function show(o) {\n  return toInvoice(o)\n}\n";
    let local = "import { toInvoice } from './convert'\nexport function list(o) {\n  return toInvoice(o)\n}\n";
    let files = [
        ("apps/admin/src/convert.js", admin.as_str()),
        ("apps/admin/src/list.js", local),
        ("apps/web/src/page.js", page),
        (
            "packages/billing/package.json",
            r#"{"name": "@acme/billing"}"#,
        ),
        ("packages/billing/src/convert.js", billing.as_str()),
    ];
    let index = index(&files);
    let near = index.definitions_near("toInvoice", "apps/web/src/page.js", 1);
    assert_eq!(near[0].path, "packages/billing/src/convert.js");
    let callers = index.callers_near("toInvoice", "packages/billing/src/convert.js", 1);
    assert_eq!(callers[0].path, "apps/web/src/page.js");
}

/// A Rust name used from its crate's root (`use crate::Error;`, which the root
/// re-exports) is the crate's own, wherever in it: each crate of a workspace defines an
/// `Error`, and the one meant is not the first in path order, nor guessed from afar.
#[test]
fn a_rust_name_from_the_crates_root_is_that_crates() {
    let mut files: Vec<(String, String)> = Vec::new();
    for name in ["api", "billing", "cache", "mail", "store"] {
        let manifest = format!("[package]\nname = \"acme-{name}\"\n");
        files.push((format!("crates/{name}/Cargo.toml"), manifest));
        let error = format!("pub enum Error {{\n    {name}(String),\n}}\n");
        files.push((format!("crates/{name}/src/error.rs"), error));
        let lib = "mod error;\npub use error::Error;\n".to_string();
        files.push((format!("crates/{name}/src/lib.rs"), lib));
    }
    let handler = "use crate::Error;\nfn load() -> Result<(), Error> {\n    Err(Error::store(String::new()))\n}\n";
    files.push(("crates/store/src/db/load.rs".into(), handler.into()));
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, t)| (p.as_str(), t.as_str()))
        .collect();
    let index = index(&refs);
    let near = index.definitions_near("Error", "crates/store/src/db/load.rs", 1);
    assert_eq!(near[0].path, "crates/store/src/error.rs", "{near:?}");
    let meant = index.definitions_meant("Error", "crates/store/src/db/load.rs", 2, 3);
    let paths: Vec<&str> = meant.iter().map(|s| s.path.as_str()).collect();
    assert_eq!(paths, ["crates/store/src/error.rs"]);
}

/// A method called on a field whose type the file declares is read in that type's
/// class, ahead of a homonym in another class the file imports: `invoices.create(o)`
/// is `InvoiceService.create`, not `Accounts.create`.
#[test]
fn a_method_is_defined_first_in_its_receivers_class() {
    let class = |name: &str| {
        format!(
            "package app;\n\npublic class {name} {{\n  public Object create(Object o) {{\n    return o;\n  }}\n}}\n"
        )
    };
    let (accounts, invoices) = (class("Accounts"), class("InvoiceService"));
    let orders = "package app.api;\n\nimport app.accounts.Accounts;\nimport app.billing.InvoiceService;\n\npublic class Orders {\n  private final InvoiceService invoices;\n\n  Object place(Object o) {\n    Accounts.check(o);\n    return invoices.create(o);\n  }\n}\n";
    let files = [
        ("src/app/accounts/Accounts.java", accounts.as_str()),
        ("src/app/api/Orders.java", orders),
        ("src/app/billing/InvoiceService.java", invoices.as_str()),
    ];
    let near = index(&files).definitions_near("create", "src/app/api/Orders.java", 2);
    let paths: Vec<&str> = near.iter().map(|s| s.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "src/app/billing/InvoiceService.java",
            "src/app/accounts/Accounts.java"
        ]
    );
}

/// The callers of a changed function are looked for first in the files that import it
/// from its file: ahead of calls of homonyms that come before them in path order.
#[test]
fn callers_are_looked_for_first_where_the_function_is_imported() {
    let rules = "export function validate(x) {\n  return x\n}\n";
    let submit = "import { validate } from '../../lib/shared/rules'\nexport function submit(o) {\n  return validate(o)\n}\n";
    let others: Vec<(String, String)> = (1..=9)
        .map(|n| {
            let text = format!("import {{ validate }} from './v'\nexport function run{n}() {{\n  return validate({n})\n}}\n");
            (format!("a/x{n}.js"), text)
        })
        .collect();
    let mut files = vec![
        ("lib/shared/rules.js", rules),
        ("src/checkout/submit.js", submit),
    ];
    files.extend(others.iter().map(|(p, t)| (p.as_str(), t.as_str())));
    let index = index(&files);
    let near = index.callers_near("validate", "lib/shared/rules.js", 8);
    assert_eq!(near.len(), 8);
    assert_eq!(
        (near[0].path.as_str(), near[0].name.as_deref()),
        ("src/checkout/submit.js", Some("submit"))
    );
}

/// A module imported by many files: eight callers are found without parsing every file
/// that imports it.
#[test]
fn a_widely_imported_functions_callers_parse_no_more_than_they_need() {
    let util = "export function helper(x) {\n  return x\n}\n";
    let importers: Vec<(String, String)> = (0..40)
        .map(|n| {
            let text = format!("import {{ helper }} from '../lib/util'\nexport function use{n}() {{\n  return helper({n})\n}}\n");
            (format!("src/use{n:02}.js"), text)
        })
        .collect();
    let mut files = vec![("lib/util.js", util)];
    files.extend(importers.iter().map(|(p, t)| (p.as_str(), t.as_str())));
    let index = index(&files);
    assert_eq!(index.callers_near("helper", "lib/util.js", 8).len(), 8);
    assert!(
        index.parsed_count() <= 17,
        "{} files parsed",
        index.parsed_count()
    );
}

/// A changed method's callers: the files that import its class (not the method) from its
/// file come before calls of homonyms earlier in path order.
#[test]
fn a_methods_callers_are_looked_for_first_where_its_class_is_imported() {
    let order = "class Order:\n    def total(self):\n        return 0\n";
    let cart =
        "from shop.order import Order\n\ndef checkout(order: Order):\n    return order.total()\n";
    let others: Vec<(String, String)> = (1..=9)
        .map(|n| {
            (
                format!("app/r{n}.py"),
                format!("from .t import T\n\ndef run{n}(t):\n    return t.total()\n"),
            )
        })
        .collect();
    let mut files = vec![("shop/order.py", order), ("web/cart.py", cart)];
    files.extend(others.iter().map(|(p, t)| (p.as_str(), t.as_str())));
    let index = index(&files);
    let near = index.callers_near("total", "shop/order.py", 8);
    assert_eq!(
        (near[0].path.as_str(), near[0].name.as_deref()),
        ("web/cart.py", Some("checkout")),
        "{near:?}"
    );
}

/// A method a changed line calls on an object of a class it imports: the definition in
/// the class's file comes before homonyms in the changed file's own directory.
#[test]
fn a_method_is_defined_first_in_the_file_its_class_is_imported_from() {
    let order = "class Order:\n    def total(self):\n        return 0\n";
    let cart =
        "from shop.order import Order\n\ndef checkout(order: Order):\n    return order.total()\n";
    let beside = "class Basket:\n    def total(self):\n        return 1\n";
    let files = [
        ("shop/order.py", order),
        ("web/cart.py", cart),
        ("web/basket.py", beside),
    ];
    let index = index(&files);
    let near = index.definitions_near("total", "web/cart.py", 2);
    let paths: Vec<&str> = near.iter().map(|s| s.path.as_str()).collect();
    assert_eq!(paths, ["shop/order.py", "web/basket.py"]);
}

/// The same in the other languages with functions as values: Rust's handlers and
/// mappers (but for what a pattern binds: a parameter, a `let`, a closure's, a match
/// arm's, an `if let`'s, a struct pattern's), Go's handlers, C's and C++'s function
/// pointers, Java's method references, C#'s method groups; a parameter passed is no use
/// of a function.
#[test]
fn functions_passed_in_other_languages() {
    let files = [
        (
            "src/lib.rs",
            "fn parse(s: &str) -> u8 { 0 }\nfn run(xs: Vec<&str>, worker: u8) {\n    xs.iter().map(parse);\n    spawn(worker);\n    let total = 1;\n    if let Some(head) = xs.first() { use_head(head, total); }\n    match xs.len() { n => keep(n) }\n    let P { x, y: b } = p;\n    xs.iter().for_each(|row| emit(row, x, b));\n}\nasync fn serve() {\n    Router::new().route(\"/\", get(list_users));\n    run(service_fn(handle_event));\n}\n",
        ),
        (
            "main.go",
            "package main\nfunc handler(w int) {}\nfunc serve(next int) {\n    http.HandleFunc(\"/\", handler)\n    wrap(next)\n}\n",
        ),
        (
            "src/sort.c",
            "static int compare(const void *a, const void *b) { return 0; }\nvoid sort_all(int *v, int n, int cmp) {\n    qsort(v, n, sizeof *v, compare);\n    use(cmp);\n}\n",
        ),
        (
            "src/order.cc",
            "bool less(int a, int b) { return a < b; }\nvoid order(std::vector<int>& v, int& by) {\n  std::sort(v.begin(), v.end(), less);\n  use(by);\n}\n",
        ),
        (
            "src/A.java",
            "class A {\n  void handle(int x) {}\n  void run(java.util.List<Integer> xs) {\n    xs.forEach(this::handle);\n  }\n}\n",
        ),
        (
            "src/B.cs",
            "class B {\n  void Handle(int x) {}\n  void Run(List<int> xs, int other) {\n    xs.ForEach(Handle);\n    Use(other);\n  }\n  void OnClick(object s) {}\n  void Wire(Button button, Action done) {\n    button.Click += OnClick;\n    this.Done = done;\n  }\n}\n",
        ),
    ];
    let index = index(&files);
    let mut wrong = Vec::new();
    for (name, caller) in [
        ("parse", Some("run")),
        ("worker", None),
        ("total", None),
        ("head", None),
        ("n", None),
        ("x", None),
        ("b", None),
        ("row", None),
        ("list_users", Some("serve")),
        ("handle_event", Some("serve")),
        ("handler", Some("serve")),
        ("next", None),
        ("compare", Some("sort_all")),
        ("cmp", None),
        ("less", Some("order")),
        ("by", None),
        ("handle", Some("run")),
        ("Handle", Some("Run")),
        ("other", None),
        ("OnClick", Some("Wire")),
        ("done", None),
    ] {
        let callers = index.callers(name);
        let names: Vec<_> = callers.iter().map(|c| c.name.as_deref()).collect();
        let expected: Vec<_> = caller.into_iter().map(Some).collect();
        if names != expected {
            wrong.push(format!("{name}: {callers:?}"));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}

/// A Python attribute read without a call may be a `@property`: it is read, and its
/// definition found; an attribute that is called is used, not only read.
#[test]
fn python_attribute_reads_find_properties() {
    let order = "class Order:\n    @property\n    def owner(self):\n        return self._users.get(self.owner_id)\n";
    let mailer = "def notify(order):\n    deliver(order.owner.email, order.lines.count())\n";
    let files = [("shop/order.py", order), ("shop/mailer.py", mailer)];
    let index = index(&files);
    assert_eq!(
        index.names_used("shop/mailer.py", 2, 2),
        ["count", "deliver"]
    );
    assert_eq!(
        index.names_read("shop/mailer.py", 2, 2),
        ["email", "lines", "owner"]
    );
    let owner = index.definitions("owner");
    assert_eq!(owner.len(), 1, "{owner:?}");
    let lazy = self::index(&files);
    assert_eq!(lazy.definitions_near("owner", "shop/mailer.py", 3), owner);
}

/// A Python name given a lambda is a definition, as one defined with `def` is: a change
/// that removes one from a file and adds it to another has not left its callers without
/// it.
#[test]
fn a_python_lambda_given_a_name_is_a_definition() {
    let rules = "order_total = lambda order: sum(l.price for l in order.lines)\nsort_key: object = lambda row: row.rank\nrows.sort(key=lambda r: r.rank)\n";
    let files = [("shop/rules.py", rules)];
    let index = index(&files);
    let total = index.definitions("order_total");
    assert_eq!(total.len(), 1, "{total:?}");
    assert_eq!((total[0].start, total[0].end), (1, 1));
    assert_eq!(index.definitions("sort_key").len(), 1);
    assert!(index.definitions("r").is_empty());
}

/// A JavaScript member read may be a getter, and a TypeScript name may hold `$`: both
/// found lazily as parsing everything would.
#[test]
fn javascript_member_reads_find_getters_and_names_may_hold_dollars() {
    let order =
        "export class Order {\n  get owner() {\n    return users.get(this.ownerId);\n  }\n}\n";
    let mailer =
        "export function notify(order) {\n  deliver(order.owner.email, order.lines.count());\n}\n";
    let schemas = "export class $ZodType {\n  static init(x) {}\n}\n";
    let uses = "export function make(x: number) {\n  return core.$ZodType.init(x);\n}\n";
    let files = [
        ("shop/order.js", order),
        ("shop/mailer.js", mailer),
        ("core/schemas.ts", schemas),
        ("app/use.ts", uses),
    ];
    let index = index(&files);
    assert_eq!(
        index.names_used("shop/mailer.js", 2, 2),
        ["count", "deliver"]
    );
    assert_eq!(
        index.names_read("shop/mailer.js", 2, 2),
        ["email", "lines", "owner"]
    );
    assert_eq!(index.names_read("app/use.ts", 2, 2), ["$ZodType"]);
    for (name, from) in [("owner", "shop/mailer.js"), ("$ZodType", "app/use.ts")] {
        let all = index.definitions(name);
        assert_eq!(all.len(), 1, "{name}: {all:?}");
        let lazy = self::index(&files);
        assert_eq!(lazy.definitions_near(name, from, 3), all, "{name}");
    }
}

/// JavaScript with JSX is read by the TSX grammar; TypeScript by its own, where a
/// generic arrow function or a type assertion does not hide what follows it.
#[test]
fn jsx_in_javascript_and_generic_arrows_in_typescript_keep_what_follows() {
    let index = index(&[
        (
            "app.js",
            "const view = (x) => <div className=\"a\">{x}</div>;\nfunction helper(x) {\n  return view(x);\n}\n",
        ),
        (
            "lib.ts",
            "export const identity = <T>(x: T): T => x;\nconst n = <number>someValue;\nexport function later(): number {\n  return 1;\n}\n",
        ),
    ]);
    assert_eq!(index.definitions("helper").len(), 1);
    assert_eq!(index.callers("view").len(), 1);
    assert_eq!(index.definitions("later").len(), 1);
}

#[test]
fn other_languages_are_kept_for_their_text_only() {
    let index = index(&[("notes.md", "# helper\n")]);
    assert_eq!(index.word_count(), 0);
    assert!(index.definitions("helper").is_empty());
    assert_eq!(index.files(), 1);
}

/// Questions parse only the files they need, and get the answers parsing everything
/// first would give.
#[test]
fn files_are_parsed_when_a_question_needs_them() {
    let mut files: Vec<(String, String)> = (0..40)
        .map(|i| {
            (
                format!("src/m{i:02}/lib.rs"),
                format!(
                    "pub struct S{i};\nimpl S{i} {{\n    pub fn new() -> Self {{ S{i} }}\n}}\n"
                ),
            )
        })
        .collect();
    files.push((
        "src/m07/use.rs".into(),
        "fn caller() {\n    let s = new();\n    unique_helper();\n}\n".into(),
    ));
    files.push((
        "src/other/helper.rs".into(),
        "pub fn unique_helper() {}\n".into(),
    ));
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, t)| (p.as_str(), t.as_str()))
        .collect();
    let lazy = index(&refs);
    assert_eq!(lazy.parsed_count(), 0, "building parses nothing");

    let near = lazy.definitions_near("new", "src/m07/use.rs", 3);
    // The same directory first, then the rest in path order, as the default ranking.
    let everything = index(&refs);
    let mut expected = everything.definitions("new");
    assert_eq!(expected.len(), 40);
    expected.sort_by_key(|span| nearness(&span.path, "src/m07/use.rs"));
    expected.truncate(3);
    assert_eq!(near, expected);
    assert_eq!(near[0].path, "src/m07/lib.rs");
    assert!(
        lazy.parsed_count() < 40,
        "{} files parsed for three definitions",
        lazy.parsed_count()
    );

    let helper = lazy.definitions("unique_helper");
    assert_eq!(helper.len(), 1);
    assert_eq!(helper[0].path, "src/other/helper.rs");
    let callers = lazy.callers("unique_helper");
    assert_eq!(callers.len(), 1);
    assert_eq!(callers[0].name.as_deref(), Some("caller"));

    lazy.parse_all();
    assert_eq!(lazy.parsed_count(), files.len());
    assert_eq!(lazy.definitions("new"), everything.definitions("new"));
}

/// A name many files define (`render` in six widgets) is shown in the context only
/// where something ties one to the file using it: the file itself, its import, its
/// directory. Far away, the first in path order would be a guess, and those files are
/// not parsed for it. A name few files define is shown wherever it is; a tool call that
/// names it gets every definition.
#[test]
fn a_name_many_files_define_is_not_guessed_far_away() {
    let mut files: Vec<(String, String)> = (0..6)
        .map(|i| {
            let widget =
                format!("pub struct W{i};\nimpl W{i} {{\n    pub fn render(&self) {{}}\n}}\n");
            (format!("src/widgets/w{i}/mod.rs"), widget)
        })
        .collect();
    files.push((
        "src/billing/totals.rs".into(),
        "pub fn totalize(xs: &[u64]) -> u64 { 0 }\n".into(),
    ));
    files.push((
        "src/app/page.rs".into(),
        "fn show(p: Page) {\n    p.render();\n    totalize(&[]);\n}\n".into(),
    ));
    files.push((
        "src/views/list.rs".into(),
        "use crate::widgets::w4::W4;\nfn show(w: W4) {\n    w.render();\n}\n".into(),
    ));
    files.push((
        "src/widgets/w2/card.rs".into(),
        "fn show(c: Card) {\n    c.render();\n}\n".into(),
    ));
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, t)| (p.as_str(), t.as_str()))
        .collect();

    let lazy = index(&refs);
    assert_eq!(
        lazy.definitions_meant("render", "src/app/page.rs", 2, 3),
        vec![]
    );
    assert_eq!(lazy.parsed_count(), 0, "no far file parsed for a guess");
    let asked = lazy.definitions_near_line("render", "src/app/page.rs", 2, 3);
    assert_eq!(asked.len(), 3, "a tool call still gets them: {asked:?}");
    let totalize = lazy.definitions_meant("totalize", "src/app/page.rs", 3, 3);
    assert_eq!(totalize.len(), 1, "defined in one file: shown anywhere");
    assert_eq!(totalize[0].path, "src/billing/totals.rs");

    let lazy = index(&refs);
    let imported = lazy.definitions_meant("render", "src/views/list.rs", 3, 3);
    let paths: Vec<&str> = imported.iter().map(|s| s.path.as_str()).collect();
    assert_eq!(
        paths,
        ["src/widgets/w4/mod.rs"],
        "tied by the import of its type"
    );
    let beside = lazy.definitions_meant("render", "src/widgets/w2/card.rs", 2, 3);
    let paths: Vec<&str> = beside.iter().map(|s| s.path.as_str()).collect();
    assert_eq!(paths, ["src/widgets/w2/mod.rs"], "in its directory");
    for (path, line) in [("src/app/page.rs", 2), ("src/views/list.rs", 3)] {
        let shown: Vec<String> = lazy
            .definitions_near_line("render", path, line, usize::MAX)
            .into_iter()
            .filter(|span| lazy.definition_meant("render", path, line, &span.path))
            .map(|span| span.path)
            .collect();
        let meant: Vec<String> = lazy
            .definitions_meant("render", path, line, usize::MAX)
            .into_iter()
            .map(|span| span.path)
            .collect();
        assert_eq!(
            shown, meant,
            "the bench's rule is the context's, from {path}"
        );
    }
}

/// Questions asked from async code on a multi-threaded runtime (a Lambda function,
/// `parley serve`) parse off the runtime's hands, and get the same answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn questions_from_a_multi_threaded_runtime_parse_off_its_hands() {
    let index = index(&[
        ("src/a.rs", "pub fn helper() {}\n"),
        ("src/b.rs", "fn main() {\n    helper();\n}\n"),
    ]);
    let defs = index.definitions_near("helper", "src/b.rs", 3);
    assert_eq!(defs.len(), 1);
    assert_eq!(index.callers("helper")[0].name.as_deref(), Some("main"));
    assert_eq!(index.parsed_count(), 2);
}

/// A C# generic call (`s.Get<User>(1)`, `Get<User>(1)`) is a call like any other: its
/// type arguments stand between the name and the `(`.
#[test]
fn csharp_generic_calls_are_calls() {
    let index = index(&[
        (
            "Svc.cs",
            "class Svc {\n  public T Get<T>(int id) => default;\n}\n",
        ),
        (
            "App.cs",
            "class App {\n  void Main(Svc s) {\n    var u = s.Get<User>(1);\n  }\n  T Local<T>() => Get<T>(2);\n}\n",
        ),
    ]);
    assert!(
        index
            .names_used("App.cs", 3, 3)
            .contains(&"Get".to_string())
    );
    let callers = index.callers("Get");
    let names: Vec<_> = callers.iter().filter_map(|c| c.name.as_deref()).collect();
    assert_eq!(names, ["Main", "Local"], "{callers:?}");
}
