//! Does a comment mention the bot?
//!
//! A mention is `@handle` where the handle matches case-insensitively and is not part of a
//! longer word: `@parley,` counts; `@parley-dev`, `@parleybot` and `me@parley.dev` do not.

/// The handles that summon Parley: the App's slug, plus optional aliases such as `claude`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Handles {
    names: Vec<String>,
}

impl Handles {
    /// `slug` is the App's slug (its bot login without `[bot]`); aliases are bare names.
    pub fn new(slug: &str, aliases: &[String]) -> Self {
        let mut names = vec![slug.trim().trim_start_matches('@').to_ascii_lowercase()];
        for alias in aliases {
            let alias = alias.trim().trim_start_matches('@').to_ascii_lowercase();
            if !alias.is_empty() && !names.contains(&alias) {
                names.push(alias);
            }
        }
        names.retain(|n| !n.is_empty());
        Handles { names }
    }

    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// The handle people type: the App's slug. Every App has its own (GitHub App names
    /// are unique), so the commands Parley suggests are spelt with it, never with
    /// `@parley`, which would name someone else.
    pub fn slug(&self) -> &str {
        self.names.first().map_or("parley", String::as_str)
    }

    /// A command as Parley suggests it in its own comments: `` `@<slug> <words>` ``, in
    /// code so it neither notifies anyone nor summons Parley from its own text.
    pub fn command(&self, words: &str) -> String {
        format!("`@{} {words}`", self.slug())
    }

    /// The bot's own login as GitHub shows it on comments: `<slug>[bot]`.
    pub fn bot_login(&self) -> Option<String> {
        self.names.first().map(|slug| format!("{slug}[bot]"))
    }

    /// Whether `login` is Parley itself.
    pub fn is_self(&self, login: &str) -> bool {
        self.bot_login()
            .is_some_and(|own| own.eq_ignore_ascii_case(login))
    }

    pub fn mentioned_in(&self, text: &str) -> bool {
        self.names.iter().any(|name| mentions(text, name))
    }
}

/// Whether `text` contains `@name` as a whole handle.
pub fn mentions(text: &str, name: &str) -> bool {
    mention_spans(text, name).next().is_some()
}

/// Byte ranges of every `@name` mention in `text`, `@` included.
pub fn mention_spans<'a>(
    text: &'a str,
    name: &'a str,
) -> impl Iterator<Item = std::ops::Range<usize>> + 'a {
    let bytes = text.as_bytes();
    let name_len = name.len();
    text.match_indices('@').filter_map(move |(at, _)| {
        let start = at + 1;
        let end = start + name_len;
        let candidate = text.get(start..end)?;
        if !candidate.eq_ignore_ascii_case(name) {
            return None;
        }
        // Not the tail of an e-mail address or another word.
        if at > 0 && is_handle_char(bytes[at - 1]) {
            return None;
        }
        // Not the head of a longer handle (`@parley-dev`). A trailing `[bot]` still counts.
        match bytes.get(end) {
            Some(&next) if is_handle_char(next) || next == b'-' => None,
            _ => Some(at..end),
        }
    })
}

/// A byte of a GitHub login or of the word around one: what makes `@` part of an e-mail
/// address, or a handle longer than the one looked for.
pub(crate) fn is_handle_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_handles_only() {
        let h = Handles::new("parley", &[]);
        assert!(h.mentioned_in("@parley is this right?"));
        assert!(h.mentioned_in("hey @Parley, look"));
        assert!(h.mentioned_in("(@parley)"));
        assert!(h.mentioned_in("cc @parley[bot]"));
        assert!(!h.mentioned_in("@parley-dev please"));
        assert!(!h.mentioned_in("@parleybot please"));
        assert!(!h.mentioned_in("mail me@parley.dev"));
        assert!(!h.mentioned_in("parley without at"));
        assert!(!h.mentioned_in("@claude what now"));
    }

    #[test]
    fn suggested_commands_use_the_slug_not_an_alias() {
        let h = Handles::new("@Acme-Review", &["claude".to_string()]);
        assert_eq!(h.slug(), "acme-review");
        assert_eq!(h.command("dismiss f_1"), "`@acme-review dismiss f_1`");
        assert_eq!(Handles::new("", &[]).slug(), "parley");
    }

    #[test]
    fn aliases_are_opt_in() {
        let h = Handles::new("parley", &["claude".to_string()]);
        assert!(h.mentioned_in("@claude what now"));
        assert!(h.mentioned_in("@parley what now"));
    }

    #[test]
    fn own_login() {
        let h = Handles::new("parley", &[]);
        assert!(h.is_self("parley[bot]"));
        assert!(h.is_self("Parley[bot]"));
        assert!(!h.is_self("parley"));
    }

    #[test]
    fn multibyte_text_is_safe() {
        let h = Handles::new("parley", &[]);
        assert!(!h.mentioned_in("@♥♥♥ @"));
        assert!(h.mentioned_in("♥ @parley ♥"));
    }
}
