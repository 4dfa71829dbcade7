//! A Rust `use` declaration's tree (`crate::store::{load, billing::{a, b as c}}`) read
//! down to its leaves: each name the file can use, with the module path it comes from.

/// The names of a Rust use tree under `prefix`, each with its module path.
pub(super) fn flatten_use<'a>(
    tree: &'a str,
    prefix: &mut Vec<&'a str>,
    out: &mut Vec<(Vec<&'a str>, &'a str)>,
) {
    let (head, group) = match tree.find('{') {
        Some(open) if tree.ends_with('}') => (&tree[..open], Some(&tree[open + 1..tree.len() - 1])),
        _ => (tree, None),
    };
    let segments: Vec<&str> = head.split("::").filter(|s| !s.is_empty()).collect();
    let depth = prefix.len();
    match group {
        Some(group) => {
            prefix.extend(&segments);
            for item in split_top_level(group) {
                flatten_use(item, prefix, out);
            }
        }
        None => {
            if let Some((last, module)) = segments.split_last() {
                // `save as persist`: the code calls `persist`, the name it has here.
                let name = last.rsplit(" as ").next().unwrap_or(last);
                if name != "*" && name != "self" {
                    let mut module_path = prefix.clone();
                    module_path.extend(module);
                    out.push((module_path, name));
                }
            }
        }
    }
    prefix.truncate(depth);
}

/// `text` without white space, but for one space between two words (`save as persist`).
pub(super) fn squeeze(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut space = false;
    for c in text.chars() {
        if c.is_whitespace() {
            space = true;
            continue;
        }
        let word = |c: char| c.is_alphanumeric() || c == '_';
        if space && word(c) && out.chars().last().is_some_and(word) {
            out.push(' ');
        }
        space = false;
        out.push(c);
    }
    out
}

/// The items of a use group (`a, b::{c, d}, e`), split at its top-level commas.
fn split_top_level(group: &str) -> Vec<&str> {
    let mut items = Vec::new();
    let (mut depth, mut start) = (0usize, 0);
    for (at, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                items.push(&group[start..at]);
                start = at + 1;
            }
            _ => {}
        }
    }
    items.push(&group[start..]);
    items.into_iter().filter(|item| !item.is_empty()).collect()
}
