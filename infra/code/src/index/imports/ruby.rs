//! Ruby's imports: `require_relative '../billing/invoice'` and `require
//! 'billing/invoice'` (a file, its names unsaid: what it defines is reached through it),
//! and the constants Rails' autoloader (Zeitwerk) finds by their names alone: a
//! constant under its module (`Billing::InvoiceItem`) in `billing/invoice_item.rb`, a
//! top-level one (`InvoiceItem`) in `invoice_item.rb` directly under an autoload root
//! (`app/models/`, `app/services/`, a concern's directory, `lib/`), and the class methods
//! called on either (`InvoiceItem.for_order(…)`) in the same file. A Rails controller
//! names no file it uses: without this, `Invoice.find` or `Admin::Invoice.find` reads
//! whichever `invoice.rb` sits nearest.

use super::{Imports, REQUIRED, Source, dir_of, join, module_of, pattern};
use regex::Regex;
use std::sync::LazyLock;

impl Imports {
    pub(super) fn ruby(&mut self, path: &str, text: &str) {
        static REQUIRE: LazyLock<Regex> =
            LazyLock::new(|| pattern(r#"(?m)^[ \t]*require(_relative)?[ \t(]+['"]([^'"\n]+)['"]"#));
        // `Billing::InvoiceItem`, `Billing::InvoiceItem.for_order`.
        static QUALIFIED: LazyLock<Regex> = LazyLock::new(|| {
            pattern(
                r"(?-u:\b)([A-Z][A-Za-z0-9_]*)::([A-Z][A-Za-z0-9_]*)(?:\.([a-z_][A-Za-z0-9_]*[?!]?))?",
            )
        });
        // A constant after no `::` (`InvoiceItem`, `InvoiceItem.for_order`); what follows
        // it is read apart, for a `::` that makes it a module.
        static BARE: LazyLock<Regex> = LazyLock::new(|| {
            pattern(r"(?:^|[^:A-Za-z0-9_@$])([A-Z][A-Za-z0-9_]*)(?:\.([a-z_][A-Za-z0-9_]*[?!]?))?")
        });
        for found in REQUIRE.captures_iter(text) {
            let spec = &found[2];
            let source = if found.get(1).is_some() {
                Source::File(module_of(&join(dir_of(path), spec)).to_string())
            } else {
                Source::LoadPath(module_of(spec).to_string())
            };
            self.add(REQUIRED, source);
        }
        for found in QUALIFIED.captures_iter(text) {
            let file = Source::Suffix(format!(
                "{}/{}",
                snake_case(&found[1]),
                snake_case(&found[2])
            ));
            if let Some(method) = found.get(3) {
                self.add(method.as_str(), file.clone());
            }
            self.add(&found[2], file);
        }
        for found in BARE.captures_iter(text) {
            let Some(constant) = found.get(1) else {
                continue;
            };
            if text[constant.end()..].starts_with("::") {
                continue;
            }
            let file = Source::Autoload(snake_case(constant.as_str()));
            if let Some(method) = found.get(2) {
                self.add(method.as_str(), file.clone());
            }
            self.add(constant.as_str(), file);
        }
    }
}

/// Whether the file `stem` (a path without its extension) is where the autoloader finds
/// the top-level constant whose file name is `name`: `<root>/name`, the root being a
/// directory of `app/` (`app/models`, `app/services`), its `concerns/`, or `lib/`, in
/// the application or an engine or gem beside it (`engines/billing/app/models`).
pub(super) fn autoloaded(stem: &str, name: &str) -> bool {
    let Some(dir) = stem
        .strip_suffix(name)
        .and_then(|dir| dir.strip_suffix('/'))
    else {
        return false;
    };
    let dir = dir.strip_suffix("/concerns").unwrap_or(dir);
    let mut up = dir.rsplit('/');
    matches!(
        (up.next(), up.next()),
        (Some("lib"), _) | (Some(_), Some("app"))
    )
}

/// Whether the file `stem` is what `require 'spec'` loads from the repository: `spec`
/// under a directory Ruby's load path holds by convention (`lib/`, and `test/` or
/// `spec/`, which test runners add: `require 'test_helper'`), in the application or a
/// gem beside it (`gems/billing/lib/billing/invoice`), or at the root.
pub(super) fn on_load_path(stem: &str, spec: &str) -> bool {
    let Some(dir) = stem.strip_suffix(spec) else {
        return false;
    };
    match dir.strip_suffix('/') {
        None => dir.is_empty(),
        Some(dir) => matches!(dir.rsplit('/').next(), Some("lib" | "test" | "spec")),
    }
}

/// `InvoiceItem` as Rails names its file: `invoice_item`.
fn snake_case(constant: &str) -> String {
    let mut out = String::with_capacity(constant.len() + 4);
    for (at, c) in constant.char_indices() {
        if c.is_ascii_uppercase() {
            if at > 0 {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::{Lang, Packages};
    use super::*;

    #[test]
    fn rails_constants_are_found_where_the_autoloader_finds_them() {
        let text = "class OrdersController < ApplicationController\n  # @param order [Shop::Order]\n  def show(order)\n    @invoice = Invoice.find(params[:id])\n    items = InvoiceItem.for_order(order)\n    Admin::Report.build(@invoice.total)\n    order.ship\n  end\nend\n";
        let packages = Packages::default();
        let imports = Imports::read(
            "app/controllers/orders_controller.rb",
            text,
            Lang::Ruby,
            &packages,
        );
        let holds =
            |name: &str, candidate: &str| imports.tie(name, candidate, &packages) == Some(1);
        let cases = [
            ("InvoiceItem", "app/models/invoice_item.rb", true),
            ("InvoiceItem", "lib/invoice_item.rb", true),
            (
                "InvoiceItem",
                "engines/billing/app/models/invoice_item.rb",
                true,
            ),
            ("InvoiceItem", "app/models/concerns/invoice_item.rb", true),
            ("InvoiceItem", "app/models/admin/invoice_item.rb", false),
            ("InvoiceItem", "invoice_item.rb", false),
            ("for_order", "app/models/invoice_item.rb", true),
            ("for_order", "app/models/admin/invoice_item.rb", false),
            ("build", "app/services/admin/report.rb", true),
            ("Report", "app/services/report.rb", false),
            ("Admin", "app/models/admin.rb", false),
            ("total", "app/models/invoice.rb", true),
            ("total", "app/models/invoice_item.rb", false),
            ("ship", "app/models/shop/order.rb", true),
        ];
        let wrong: Vec<_> = cases
            .iter()
            .filter(|(name, candidate, expected)| holds(name, candidate) != *expected)
            .collect();
        assert_eq!(wrong, Vec::<&(&str, &str, bool)>::new());
    }
}
