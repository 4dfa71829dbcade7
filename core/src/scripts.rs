//! Scripts written without spaces between words (Chinese, Japanese, Thai, …). Parley
//! finds words by the spaces and punctuation between them: comparing two findings'
//! titles, learned false-positive patterns, lexical search. In these scripts a whole
//! sentence would be one "word", so two wordings of one problem share none. A run of such
//! characters is read instead as its overlapping pairs of characters (a lone character as
//! itself): the unit search engines index those scripts by, needing no dictionary.

/// Call `emit` with each part of `word` (a run without spaces): a stretch of other
/// characters whole, a stretch of an unspaced script as its pairs of characters.
pub fn for_each_part<'a>(word: &'a str, mut emit: impl FnMut(&'a str)) {
    let mut chars = word.char_indices().peekable();
    while let Some((start, first)) = chars.next() {
        if !unspaced(first) {
            let mut end = start + first.len_utf8();
            while let Some(&(at, c)) = chars.peek().filter(|(_, c)| !unspaced(*c)) {
                end = at + c.len_utf8();
                chars.next();
            }
            emit(&word[start..end]);
            continue;
        }
        // A pair starts at each character of the run but its last; a run of one is itself.
        let mut pair_start = start;
        let mut alone = true;
        while let Some(&(at, c)) = chars.peek().filter(|(_, c)| unspaced(*c)) {
            emit(&word[pair_start..at + c.len_utf8()]);
            pair_start = at;
            alone = false;
            chars.next();
        }
        if alone {
            emit(&word[start..start + first.len_utf8()]);
        }
    }
}

/// Whether `text` has a character of a script written without spaces.
pub fn has_unspaced(text: &str) -> bool {
    !text.is_ascii() && text.chars().any(unspaced)
}

/// A letter of a script written without spaces between words.
pub fn unspaced(c: char) -> bool {
    matches!(c,
        '\u{0E00}'..='\u{0EFF}' // Thai, Lao
        | '\u{1000}'..='\u{109F}' // Myanmar
        | '\u{1780}'..='\u{17FF}' // Khmer
        | '\u{3040}'..='\u{30FF}' // Hiragana, Katakana
        | '\u{31F0}'..='\u{31FF}' // Katakana extensions
        | '\u{3400}'..='\u{4DBF}' // CJK extension A
        | '\u{4E00}'..='\u{9FFF}' // CJK unified ideographs
        | '\u{F900}'..='\u{FAFF}' // CJK compatibility ideographs
        | '\u{FF66}'..='\u{FF9F}' // half-width Katakana
        | '\u{20000}'..='\u{3134F}' // CJK extensions B to G
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(word: &str) -> Vec<&str> {
        let mut out = Vec::new();
        for_each_part(word, |part| out.push(part));
        out
    }

    #[test]
    fn unspaced_runs_are_read_as_pairs_and_the_rest_whole() {
        assert_eq!(
            parts("unwrapの使用"),
            ["unwrap", "の使", "使用"],
            "a Latin word inside Japanese stays whole"
        );
        assert_eq!(parts("式"), ["式"]);
        assert_eq!(parts("a式b"), ["a", "式", "b"]);
        assert_eq!(parts("ไม่ปลอดภัย").len(), "ไม่ปลอดภัย".chars().count() - 1);
        assert_eq!(parts("plain_word"), ["plain_word"]);
        assert_eq!(parts(""), Vec::<&str>::new());
        assert!(has_unspaced("SQLインジェクション"));
        assert!(!has_unspaced("Straße ñandú 한국어"));
    }
}
