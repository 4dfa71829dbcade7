//! Environment variables as every Parley binary reads them.
//!
//! Each adapter's settings read their variables through a lookup function (the process
//! environment in production, a map in tests, so no test mutates the environment); this
//! is the one rule they all apply to what the lookup returns.

/// A variable's value as settings use it: trimmed, and `None` when unset or blank, so
/// `FOO=` in a template or an `.env` file means "the default", never an empty name, URL
/// or key.
pub fn value(raw: Option<String>) -> Option<String> {
    raw.map(|v| v.trim().to_owned()).filter(|v| !v.is_empty())
}

#[cfg(test)]
mod tests {
    use super::value;

    #[test]
    fn blank_is_unset_and_values_are_trimmed() {
        assert_eq!(value(None), None);
        assert_eq!(value(Some(String::new())), None);
        assert_eq!(value(Some("  \n".into())), None);
        assert_eq!(
            value(Some(" https://x/ \n".into())),
            Some("https://x/".into())
        );
    }
}
