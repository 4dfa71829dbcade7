//! The names a component's template uses: `@click="submit"` and `{{ total(order) }}` in
//! Vue, `on:click={save}` and `{#if ready(cart)}` in Svelte, `{posts.map(card)}` in Astro,
//! `onclick="boot()"` in an HTML page, `(click)="submit()"` and `{{ total() }}` in an
//! Angular component's template (whose class, in its own `.ts` file, defines them). A
//! function its script defines is often used only there, so a change that removes or
//! renames it breaks the page where no tags query looks; and a changed template line
//! calls what its script defines.
//!
//! No grammar reads a template's expressions (tree-sitter's Vue and Svelte grammars
//! would each cost a worker what one language does), and a use is all that is wanted of
//! them: the identifiers of each expression, less what cannot name a function of the
//! script (keywords, members read, an object's keys, strings, a tag's name). A
//! template's own variable (`v-for="item in items"`) is read as a use too: a name a
//! question asks about is rarely one.

use std::ops::Range;

/// How a file's markup holds code.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Markup {
    /// `{{ … }}`, and the values of directives (`@x`, `:x`, `v-x`, `#x`).
    Vue,
    /// `{ … }` anywhere outside the script and style (Svelte, Astro).
    Braces,
    /// The values of event handler attributes (`onclick`); in an Angular component's
    /// template, `{{ … }}` and its bindings (`(click)`, `[value]`, `*ngIf`).
    Html,
}

impl Markup {
    fn of(path: &str) -> Markup {
        let extension = path.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase());
        match extension.as_deref() {
            Some("vue") => Markup::Vue,
            Some("svelte" | "astro") => Markup::Braces,
            _ => Markup::Html,
        }
    }
}

/// Each name the template of `text` (a file at `path`) uses, with its byte offset, in
/// the file's order.
pub(crate) fn uses<'a>(path: &str, text: &'a str) -> Vec<(usize, &'a str)> {
    let markup = Markup::of(path);
    let mut out = Vec::new();
    for part in markup_parts(text) {
        for expression in expressions(text, part, markup) {
            names(text, expression, &mut out);
        }
    }
    out.sort_unstable_by_key(|(at, _)| *at);
    out
}

/// The byte ranges of `text` that are markup: all but its frontmatter and its
/// `<script>` and `<style>` elements (whatever their language: a JSON-LD block is not
/// template either) and its comments.
fn markup_parts(text: &str) -> Vec<Range<usize>> {
    let lower = text.to_ascii_lowercase();
    let mut skipped: Vec<Range<usize>> = super::embedded::frontmatter(text).into_iter().collect();
    for (open, close) in [
        ("<script", "</script"),
        ("<style", "</style"),
        ("<!--", "-->"),
    ] {
        let mut from = 0;
        while let Some(at) = lower[from..].find(open).map(|at| from + at) {
            let end = lower[at..]
                .find(close)
                .map_or(text.len(), |found| at + found + close.len());
            skipped.push(at..end);
            from = end;
        }
    }
    skipped.sort_by_key(|range| range.start);
    let mut parts = Vec::new();
    let mut at = 0;
    for range in skipped {
        if range.start > at {
            parts.push(at..range.start);
        }
        at = at.max(range.end);
    }
    if at < text.len() {
        parts.push(at..text.len());
    }
    parts
}

/// The expressions in one stretch of markup.
fn expressions(text: &str, part: Range<usize>, markup: Markup) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    braces(text, part.clone(), markup != Markup::Braces, &mut out);
    if markup != Markup::Braces {
        attributes(text, part, markup, &mut out);
    }
    out
}

/// Every outermost `{ … }` of `part`, strings inside skipped for the closing brace; only
/// `{{ … }}` when `double` (Vue's and Angular's interpolation, in text that may hold a
/// brace of its own).
fn braces(text: &str, part: Range<usize>, double: bool, out: &mut Vec<Range<usize>>) {
    let bytes = text.as_bytes();
    let mut at = part.start;
    while at < part.end {
        if bytes[at] != b'{' || (double && bytes.get(at + 1) != Some(&b'{')) {
            at += 1;
            continue;
        }
        let start = at + 1;
        let mut depth = 1;
        at = start;
        while at < part.end && depth > 0 {
            match bytes[at] {
                b'{' => depth += 1,
                b'}' => depth -= 1,
                quote @ (b'\'' | b'"' | b'`') => at = string_end(bytes, at, quote, part.end) - 1,
                _ => {}
            }
            at += 1;
        }
        let end = if depth == 0 { at - 1 } else { part.end };
        out.push(start..end);
    }
}

/// The quoted values of the attributes of `part`'s tags that hold code: Vue's
/// directives, or an HTML event handler.
fn attributes(text: &str, part: Range<usize>, markup: Markup, out: &mut Vec<Range<usize>>) {
    let bytes = text.as_bytes();
    let mut at = part.start;
    while at + 1 < part.end {
        if bytes[at] != b'<' || !bytes[at + 1].is_ascii_alphabetic() {
            at += 1;
            continue;
        }
        // Inside a tag: its name, then `name`, `name=value`, up to `>`.
        at += 1;
        while at < part.end && !bytes[at].is_ascii_whitespace() && !matches!(bytes[at], b'>' | b'/')
        {
            at += 1;
        }
        while at < part.end && bytes[at] != b'>' {
            if bytes[at].is_ascii_whitespace() || bytes[at] == b'/' {
                at += 1;
                continue;
            }
            let name_start = at;
            while at < part.end
                && !bytes[at].is_ascii_whitespace()
                && !matches!(bytes[at], b'=' | b'>' | b'"' | b'\'')
            {
                at += 1;
            }
            let name = &text[name_start..at];
            if at >= part.end || bytes[at] != b'=' {
                at += usize::from(at < part.end && matches!(bytes[at], b'"' | b'\''));
                continue;
            }
            at += 1;
            let Some(&quote @ (b'"' | b'\'')) = bytes.get(at).filter(|_| at < part.end) else {
                // Unquoted: to the next space or `>`; never code worth reading.
                while at < part.end && !bytes[at].is_ascii_whitespace() && bytes[at] != b'>' {
                    at += 1;
                }
                continue;
            };
            let end = memchr(bytes, quote, at + 1, part.end);
            if holds_code(name, markup) {
                out.push(at + 1..end);
            }
            at = (end + 1).min(part.end);
        }
    }
}

fn holds_code(name: &str, markup: Markup) -> bool {
    let lower = name.to_ascii_lowercase();
    match markup {
        Markup::Vue => {
            name.starts_with(['@', ':', '#']) || lower.starts_with("v-") && lower != "v-pre"
        }
        // An event handler (`onclick`), or an Angular template's bindings: `(click)`,
        // `[disabled]`, `[(ngModel)]`, `*ngIf`, `bind-value`.
        Markup::Html => {
            (lower.len() > 2 && lower.starts_with("on"))
                || name.starts_with(['(', '[', '*'])
                || lower.starts_with("bind-")
        }
        Markup::Braces => false,
    }
}

/// Where the string opened by `quote` at `at` ends (after its closing quote), or `end`.
fn string_end(bytes: &[u8], at: usize, quote: u8, end: usize) -> usize {
    let mut i = at + 1;
    while i < end {
        match bytes[i] {
            b'\\' => i += 2,
            b if b == quote => return i + 1,
            _ => i += 1,
        }
    }
    end
}

fn memchr(bytes: &[u8], byte: u8, from: usize, end: usize) -> usize {
    bytes[from..end]
        .iter()
        .position(|&b| b == byte)
        .map_or(end, |found| from + found)
}

/// Words of an expression that are never a script's function or value.
const NOT_NAMES: &[&str] = &[
    "as",
    "async",
    "await",
    "break",
    "case",
    "catch",
    "const",
    "delete",
    "else",
    "false",
    "function",
    "if",
    "in",
    "instanceof",
    "let",
    "new",
    "null",
    "of",
    "return",
    "then",
    "this",
    "true",
    "typeof",
    "undefined",
    "var",
    "void",
];

/// The identifiers of `expression` that may name something the script defines: not a
/// member read (`order.total`, though `order.save()` is a call), a key (`{ active: on }`)
/// or an attribute (`href=` in an Astro expression's markup), a tag's name (`<a>`), the
/// word of a Svelte block (`{#each …}`, `{@html …}`), a number or what a string holds. A
/// Svelte store's `$` (`$cart`) is not part of the name its script defines.
fn names<'a>(text: &'a str, expression: Range<usize>, out: &mut Vec<(usize, &'a str)>) {
    let bytes = text.as_bytes();
    let mut at = expression.start;
    while at < expression.end {
        let b = bytes[at];
        if matches!(b, b'\'' | b'"' | b'`') {
            at = string_end(bytes, at, b, expression.end);
            continue;
        }
        if b.is_ascii_digit() {
            while at < expression.end && (bytes[at].is_ascii_alphanumeric() || bytes[at] == b'.') {
                at += 1;
            }
            continue;
        }
        if !(b.is_ascii_alphabetic() || b == b'_' || b == b'$') {
            at += 1;
            continue;
        }
        let start = at;
        while at < expression.end
            && (bytes[at].is_ascii_alphanumeric() || matches!(bytes[at], b'_' | b'$'))
        {
            at += 1;
        }
        let word = &text[start..at];
        let before = text[expression.start..start].trim_end();
        let after = text[at..expression.end].trim_start();
        let member = before.ends_with('.');
        let tag = text[..start].ends_with('<') || text[..start].ends_with("</");
        let block = matches!(before, "#" | "@" | ":" | "/");
        let next = &text[at..expression.end];
        let key = next.starts_with(':') && !next.starts_with("::");
        let attribute =
            after.starts_with('=') && !after.starts_with("==") && !after.starts_with("=>");
        if NOT_NAMES.contains(&word)
            || tag
            || block
            || key
            || attribute
            || (member && !after.starts_with('('))
        {
            continue;
        }
        let name = word.trim_start_matches('$');
        if !name.is_empty() {
            out.push((at - name.len(), name));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(path: &str, text: &str) -> Vec<String> {
        uses(path, text)
            .into_iter()
            .map(|(_, word)| word.to_string())
            .collect()
    }

    /// Vue's directives and interpolations, and Angular's bindings and interpolations:
    /// the names in each, in the file's order; not a plain attribute's value.
    #[test]
    fn directives_bindings_and_interpolations() {
        let vue = "<template>\n  <form @submit.prevent=\"submit(order)\" :class=\"{ busy: isBusy }\">\n    <li v-for=\"line in lines\" :key=\"line.id\">{{ money(line.total) }}</li>\n    <p title=\"save()\">{{ 'total(' }} {{ store.refresh() }}</p>\n  </form>\n</template>\n<script setup>\nconst hidden = () => decoy()\n</script>\n<style>\n.busy { color: red }\n</style>\n";
        let angular = "<form (ngSubmit)=\"submit(order)\" [class.busy]=\"isBusy\">\n  <li *ngFor=\"let line of lines\">{{ money(line.total) | currency }}</li>\n  <input [(ngModel)]=\"order.email\" bind-title=\"hint\" title=\"plain()\" />\n</form>\n";
        let cases: [(&str, &str, &[&str]); 2] = [
            (
                "src/Order.vue",
                vue,
                &[
                    "submit", "order", "isBusy", "line", "lines", "line", "money", "line", "store",
                    "refresh",
                ],
            ),
            (
                "src/app/order.component.html",
                angular,
                &[
                    "submit", "order", "isBusy", "line", "lines", "money", "line", "currency",
                    "order", "hint",
                ],
            ),
        ];
        for (path, text, expected) in cases {
            assert_eq!(words(path, text), expected, "{path}");
        }
        let offsets = uses("src/Order.vue", vue);
        let (at, _) = offsets.iter().find(|(_, w)| *w == "submit").expect("a use");
        assert_eq!(vue[..*at].matches('\n').count(), 1, "submit is on line 2");
    }

    #[test]
    fn svelte_and_astro_braces_blocks_and_handlers() {
        let svelte = "<script>\n  import { save } from './api'\n</script>\n\n{#each items as item (item.id)}\n  <button on:click={() => save(item)} class=\"a {active ? 'on' : ''}\">{label(item)}</button>\n{:else}\n  <p>none</p>\n{/each}\n{@html render(md)}\n<style>\n  p { margin: 0 }\n</style>\n";
        assert_eq!(
            words("src/List.svelte", svelte),
            [
                "items", "item", "item", "save", "item", "active", "label", "item", "render", "md"
            ]
        );
        let astro = "---\nconst posts = await load()\n---\n<ul>{posts.map((p) => <li><a href={url(p)}>{p.title}</a></li>)}</ul>\n";
        assert_eq!(
            words("src/pages/blog.astro", astro),
            ["posts", "map", "p", "url", "p", "p"]
        );
    }

    #[test]
    fn an_html_pages_event_handlers_only() {
        let html = "<!-- <button onclick=\"old()\"> -->\n<body onload='boot(config)'>\n<p>{ not code } {{ nor this }}</p>\n<a href=\"javascript:void(0)\" onclick=\"track('x'); go()\">go</a>\n<script type=\"application/ld+json\">{\"a\": b}</script>\n</body>\n";
        assert_eq!(
            words("public/index.html", html),
            ["boot", "config", "nor", "track", "go"],
            "an interpolation, as Angular's, is read; a single brace is text"
        );
    }

    #[test]
    fn broken_markup_ends_without_a_panic() {
        for text in [
            "<a @click=\"go(",
            "{{ a(",
            "{",
            "<",
            "<b onclick=",
            "<b :x='",
            "{'",
        ] {
            uses("x.vue", text);
            uses("x.svelte", text);
            uses("x.html", text);
        }
        // Multi-byte text around expressions keeps offsets on character boundaries.
        let text = "<p>café {total(ö)} ✓</p>";
        let found = uses("x.svelte", text);
        assert_eq!(found.iter().map(|(_, w)| *w).collect::<Vec<_>>(), ["total"]);
    }
}
