//! Code inside a file of markup: the `<script>` blocks of a Vue, Svelte or Astro
//! component, and an Astro component's frontmatter (its server-side script between the
//! `---` fences that open the file). A component's logic (`<script setup lang="ts">`, Svelte's `<script>`) calls
//! the stores, composables and API helpers a change is most often wrong about, and its
//! template around it is not code a tags query reads. So only the blocks are read: their
//! words for the word index, and the parse limited to their byte ranges (tree-sitter's
//! included ranges), so every definition and call keeps its line in the whole file. They
//! are read with TypeScript's grammar, which reads a plain JavaScript block as well.

use std::ops::Range;

/// The byte ranges of `text`'s code: its frontmatter, where the file opens with one,
/// then its `<script>` blocks after it.
pub(crate) fn code_blocks(text: &str) -> Vec<Range<usize>> {
    let Some(front) = frontmatter(text) else {
        return script_blocks(text);
    };
    let after = front.end;
    let mut blocks = vec![front];
    blocks.extend(
        script_blocks(&text[after..])
            .into_iter()
            .map(|block| block.start + after..block.end + after),
    );
    blocks
}

/// What stands between a `---` line that opens the file and the next `---` line.
pub(crate) fn frontmatter(text: &str) -> Option<Range<usize>> {
    let first_line = text.lines().next()?;
    if first_line.trim_end() != "---" {
        return None;
    }
    let start = first_line.len() + usize::from(text[first_line.len()..].starts_with("\r\n")) + 1;
    let mut at = start.min(text.len());
    for line in text[at..].split_inclusive('\n') {
        if line.trim_end() == "---" {
            return Some(start..at);
        }
        at += line.len();
    }
    None
}

/// The byte ranges of the contents of `text`'s `<script>` blocks, in order. A block left
/// unclosed, with nothing in it (`<script src="…"></script>`), or not of JavaScript or
/// TypeScript (`type="application/ld+json"`, `type="text/x-template"`, `lang="coffee"`)
/// has none.
pub(crate) fn script_blocks(text: &str) -> Vec<Range<usize>> {
    let lower = text.to_ascii_lowercase();
    let mut blocks = Vec::new();
    let mut from = 0;
    while let Some(found) = lower[from..].find("<script") {
        let tag = from + found;
        let after_name = tag + "<script".len();
        // `<scripts>` or `<script-x>` is another element.
        if !lower[after_name..].starts_with(|c: char| c == '>' || c.is_ascii_whitespace()) {
            from = after_name;
            continue;
        }
        let Some(open_end) = lower[after_name..].find('>').map(|at| after_name + at + 1) else {
            break;
        };
        let Some(close) = lower[open_end..].find("</script").map(|at| open_end + at) else {
            break;
        };
        if !text[open_end..close].trim().is_empty() && is_script(&lower[after_name..open_end]) {
            blocks.push(open_end..close);
        }
        from = close + "</script".len();
    }
    blocks
}

/// Whether an opening `<script …>` tag's attributes (lowercased) say JavaScript or
/// TypeScript: no `type` or `lang`, or one of theirs.
fn is_script(attributes: &str) -> bool {
    // `<script\nlang="coffee">`: any white space before a name.
    let attributes = attributes.replace(|c: char| c.is_ascii_whitespace(), " ");
    let value = |name: &str| {
        let at = attributes.find(&format!("{name}="))? + name.len() + 1;
        let rest = attributes[at..].trim_start_matches(['"', '\'']);
        let end = rest
            .find(|c: char| matches!(c, '"' | '\'' | '>') || c.is_ascii_whitespace())
            .unwrap_or(rest.len());
        Some(rest[..end].to_string())
    };
    let type_ok = value(" type").is_none_or(|t| {
        matches!(
            t.as_str(),
            "module"
                | "text/javascript"
                | "application/javascript"
                | "text/typescript"
                | "text/babel"
        )
    });
    let lang_ok = value(" lang").is_none_or(|l| {
        matches!(
            l.as_str(),
            "ts" | "js" | "tsx" | "jsx" | "typescript" | "javascript"
        )
    });
    type_ok && lang_ok
}

/// `blocks` as the ranges tree-sitter parses, each with the row and column it starts and
/// ends at in `text`.
pub(crate) fn parse_ranges(text: &str, blocks: &[Range<usize>]) -> Vec<tree_sitter::Range> {
    blocks
        .iter()
        .map(|block| tree_sitter::Range {
            start_byte: block.start,
            end_byte: block.end,
            start_point: point(text, block.start),
            end_point: point(text, block.end),
        })
        .collect()
}

fn point(text: &str, at: usize) -> tree_sitter::Point {
    let before = &text.as_bytes()[..at];
    let row = before.iter().filter(|b| **b == b'\n').count();
    let line_start = before
        .iter()
        .rposition(|b| *b == b'\n')
        .map_or(0, |i| i + 1);
    tree_sitter::Point {
        row,
        column: at - line_start,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_components_script_blocks_and_nothing_else() {
        let vue = "<template>\n  <button @click=\"save()\">Save</button>\n</template>\n\n<script setup lang=\"ts\">\nimport { save } from './api'\n</script>\n<SCRIPT>\nexport default {}\n</SCRIPT>\n<style>\n.a { color: red }\n</style>\n";
        let blocks = script_blocks(vue);
        let texts: Vec<&str> = blocks.iter().map(|b| &vue[b.clone()]).collect();
        assert_eq!(
            texts,
            ["\nimport { save } from './api'\n", "\nexport default {}\n"]
        );
        let ranges = parse_ranges(vue, &blocks);
        assert_eq!(
            (ranges[0].start_point.row, ranges[0].start_point.column),
            (4, 24)
        );
        assert_eq!(
            (ranges[0].end_point.row, ranges[0].end_point.column),
            (6, 0)
        );
        assert_eq!(ranges[1].start_point.row, 7);
    }

    #[test]
    fn an_astro_components_frontmatter_and_scripts() {
        let astro = "---\nimport Layout from '../layouts/Layout.astro'\nconst posts = await getPosts()\n---\n<Layout>{posts.map((p) => <a>{p.title}</a>)}</Layout>\n<script>\n  track('view')\n</script>\n";
        let texts: Vec<&str> = code_blocks(astro).into_iter().map(|b| &astro[b]).collect();
        assert_eq!(
            texts,
            [
                "import Layout from '../layouts/Layout.astro'\nconst posts = await getPosts()\n",
                "\n  track('view')\n"
            ]
        );
        // No frontmatter, or one never closed: the scripts alone.
        assert_eq!(code_blocks("<script>a()</script>").len(), 1);
        assert!(code_blocks("---\nconst a = 1\n").is_empty());
        let crlf = "---\r\nconst a = 1\r\n---\r\n<p/>";
        assert_eq!(&crlf[code_blocks(crlf)[0].clone()], "const a = 1\r\n");
    }

    #[test]
    fn only_blocks_of_javascript_or_typescript_are_code() {
        let page = "<script type=\"application/ld+json\">{\"@type\": \"Product\"}</script>\n<script type='module'>\nimport { start } from './app.js'\n</script>\n<script type=\"text/x-template\" id=\"row\"><td>{{ a }}</td></script>\n<script\nlang=\"coffee\">\nsquare = (x) -> x * x\n</script>\n<script\n  lang=\"ts\">\nlet n: number = 1\n</script>\n";
        let texts: Vec<&str> = script_blocks(page).into_iter().map(|b| &page[b]).collect();
        assert_eq!(
            texts,
            [
                "\nimport { start } from './app.js'\n",
                "\nlet n: number = 1\n"
            ]
        );
    }

    #[test]
    fn empty_unclosed_and_lookalike_tags_have_no_block() {
        assert!(script_blocks("<script src=\"/app.js\"></script>").is_empty());
        assert!(script_blocks("<scripts>x</scripts>").is_empty());
        assert!(script_blocks("<template><p>no script</p></template>").is_empty());
        assert!(script_blocks("<script>\nlet a = 1\n").is_empty());
        assert!(script_blocks("<script").is_empty());
        // Text before a block in another script (multi-byte) keeps the offsets right.
        let text = "<p>café ✓</p>\n<script>\nlet a = 1\n</script>\n";
        let blocks = script_blocks(text);
        assert_eq!(&text[blocks[0].clone()], "\nlet a = 1\n");
    }
}
