//! What `parley review` was asked to review: a PR by URL or `owner/repo#N`.

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PullRef {
    pub owner: String,
    pub name: String,
    pub number: u64,
}

impl fmt::Display for PullRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}#{}", self.owner, self.name, self.number)
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error(
    "{0:?} is not a pull request: give its URL (https://github.com/OWNER/REPO/pull/N) or OWNER/REPO#N"
)]
pub struct BadReference(pub String);

/// `https://HOST/OWNER/REPO/pull/N[/files…]` (any host: GitHub Enterprise too) or
/// `OWNER/REPO#N`.
pub fn parse(text: &str) -> Result<PullRef, BadReference> {
    let bad = || BadReference(text.to_string());
    let trimmed = text.trim();
    let (repo, number) = if let Some(rest) = trimmed
        .strip_prefix("https://")
        .or_else(|| trimmed.strip_prefix("http://"))
    {
        let mut parts = rest.split('/');
        let _host = parts.next().ok_or_else(bad)?;
        let owner = parts.next().ok_or_else(bad)?;
        let name = parts.next().ok_or_else(bad)?;
        if parts.next() != Some("pull") {
            return Err(bad());
        }
        let number = parts.next().ok_or_else(bad)?;
        (
            format!("{owner}/{name}"),
            number
                .split(['?', '#'])
                .next()
                .unwrap_or_default()
                .to_string(),
        )
    } else {
        let (repo, number) = trimmed.split_once('#').ok_or_else(bad)?;
        (repo.to_string(), number.to_string())
    };
    let (owner, name) = repo.split_once('/').ok_or_else(bad)?;
    let valid = |s: &str| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    };
    if !valid(owner) || !valid(name) {
        return Err(bad());
    }
    let number: u64 = number.parse().map_err(|_| bad())?;
    if number == 0 {
        return Err(bad());
    }
    Ok(PullRef {
        owner: owner.to_string(),
        name: name.to_string(),
        number,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_and_short_references() {
        for text in [
            "https://github.com/octo-org/hello-world/pull/42",
            "https://github.com/octo-org/hello-world/pull/42/files",
            "https://github.com/octo-org/hello-world/pull/42#discussion_r1",
            "octo-org/hello-world#42",
            " octo-org/hello-world#42\n",
        ] {
            assert_eq!(
                parse(text),
                Ok(PullRef {
                    owner: "octo-org".into(),
                    name: "hello-world".into(),
                    number: 42
                }),
                "{text}"
            );
        }
        assert_eq!(
            parse("https://ghe.example.com/a/b.c/pull/7").map(|p| p.to_string()),
            Ok("a/b.c#7".to_string())
        );
    }

    #[test]
    fn anything_else_is_refused_with_the_expected_forms() {
        for text in [
            "",
            "42",
            "octo-org#42",
            "octo-org/hello-world",
            "octo-org/hello-world#x",
            "octo-org/hello-world#0",
            "https://github.com/octo-org/hello-world/issues/42",
            "https://github.com/octo-org/hello-world",
            "octo org/hello#1",
        ] {
            let err = parse(text).unwrap_err();
            assert!(err.to_string().contains("OWNER/REPO#N"), "{text}: {err}");
        }
    }
}
