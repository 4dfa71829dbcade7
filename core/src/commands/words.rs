//! Words as the command parser sees them: runs of non-whitespace, compared without case
//! or apostrophes. Shared by the phrase families and the scope extraction, which both
//! read words and neither should reach into the other for it.

/// The words of `text` (runs of non-whitespace) as byte ranges, found lazily so a match
/// looks at no more of a long line than it needs.
pub(super) fn words(text: &str) -> impl Iterator<Item = (usize, usize)> + '_ {
    let mut pos = 0;
    std::iter::from_fn(move || {
        let rest = text.get(pos..)?;
        let start = pos + (rest.len() - rest.trim_start().len());
        let tail = text.get(start..).filter(|t| !t.is_empty())?;
        pos = start + tail.find(char::is_whitespace).unwrap_or(tail.len());
        Some((start, pos))
    })
}

/// Case-insensitive, apostrophes ignored: `Don’t` is `dont` is `don't`.
pub(super) fn same_word(word: &str, pattern: &str) -> bool {
    let plain = |c: &char| *c != '\'' && *c != '’';
    word.chars()
        .filter(plain)
        .map(|c| c.to_ascii_lowercase())
        .eq(pattern.chars().filter(plain))
}
