//! Who owns a file, by the repository's `CODEOWNERS`: the people GitHub itself asks to
//! review a change to it. A dispute Parley cannot settle goes to them when the team named
//! no one in `dispute.humanReviewers`, so "I'll ask a human" reaches one out of the box.
//!
//! Read from the default branch, where GitHub reads it too: a PR cannot choose who is
//! asked about its own findings. The patterns are gitignore's with GitHub's exceptions
//! (no `!`, no `[ ]`; `docs/*` matches files directly in `docs/`, not deeper), written here
//! as globs; the last pattern that matches a path names its owners, and one that names
//! none leaves the path without owners. Email owners are left out: a review is requested
//! by login or team.

use crate::ports::github::{GitHub, GitHubError, RepoScope};
use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

/// Where GitHub looks, in its order: the first found is the one in force.
pub const PLACES: [&str; 3] = [".github/CODEOWNERS", "CODEOWNERS", "docs/CODEOWNERS"];

/// The rules of one `CODEOWNERS` file, in its order.
#[derive(Debug, Default)]
pub struct CodeOwners {
    rules: Vec<(GlobSet, Vec<String>)>,
}

impl CodeOwners {
    /// Each line's pattern and owners (`@login`, `@org/team`); a line whose pattern is
    /// not one Parley can read is left out, as GitHub leaves out a line it cannot parse.
    pub fn parse(text: &str) -> Self {
        let rules = text
            .lines()
            .filter_map(|line| {
                let line = line.trim();
                if line.is_empty() || line.starts_with('#') {
                    return None;
                }
                // An unescaped `#` starts a comment.
                let line = line.split(" #").next().unwrap_or(line);
                let mut words = line.split_whitespace();
                let matcher = matcher(words.next()?)?;
                let owners = words
                    .filter_map(|owner| owner.strip_prefix('@'))
                    .map(str::to_string)
                    .collect();
                Some((matcher, owners))
            })
            .collect();
        CodeOwners { rules }
    }

    /// The owners of `path` (repository-relative, no leading `/`), as written without `@`.
    pub fn owners_of(&self, path: &str) -> &[String] {
        self.rules
            .iter()
            .rev()
            .find(|(matcher, _)| matcher.is_match(path))
            .map_or(&[], |(_, owners)| owners.as_slice())
    }
}

/// The `CODEOWNERS` in force on `branch`; `None` when there is none (or it is not text).
/// GitHub's trouble is the caller's to say: the first place it would not answer for may
/// hold the file in force.
pub async fn read(
    github: &dyn GitHub,
    scope: &RepoScope,
    branch: &str,
) -> Result<Option<CodeOwners>, GitHubError> {
    for place in PLACES {
        if let Some(file) = github.get_file_contents(scope, place, branch).await? {
            return Ok(file.text().map(CodeOwners::parse));
        }
    }
    Ok(None)
}

/// One pattern as globs: anchored to the root when it starts with `/` or holds a `/`
/// before its end, else at any depth; a directory (no wildcard in its last part) also
/// owns everything under it.
fn matcher(pattern: &str) -> Option<GlobSet> {
    if pattern.starts_with('!') || pattern.contains('[') {
        return None;
    }
    let trimmed = pattern.trim_end_matches('/');
    let anchored = pattern.starts_with('/') || trimmed.trim_start_matches('/').contains('/');
    let body = trimmed.trim_start_matches('/');
    if body.is_empty() {
        return None;
    }
    let base = if anchored || body.starts_with("**") {
        body.to_string()
    } else {
        format!("**/{body}")
    };
    let last = body.rsplit('/').next().unwrap_or(body);
    let mut globs = Vec::new();
    if !pattern.ends_with('/') {
        globs.push(base.clone());
    }
    if !last.contains('*') || last == "**" {
        globs.push(format!("{base}/**"));
    }
    let mut set = GlobSetBuilder::new();
    for glob in globs {
        let glob = GlobBuilder::new(&glob)
            .literal_separator(true)
            .build()
            .ok()?;
        set.add(glob);
    }
    set.build().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "\
# Everyone's default.
*       @octo-org/everyone
*.js    @js-owner # JavaScript
/build/logs/ @doctocat
docs/*  docs@example.com @docs-lead
apps/   @octocat
/scripts/ @doctocat @octo-org/ops
**/logs @logger
/vendor/
";

    #[test]
    fn the_last_matching_pattern_names_the_owners() {
        let owners = CodeOwners::parse(FILE);
        let of = |path: &str| owners.owners_of(path).to_vec();
        assert_eq!(of("src/main.rs"), ["octo-org/everyone"]);
        assert_eq!(of("web/app.js"), ["js-owner"], "at any depth");
        assert_eq!(
            of("build/logs/today.txt"),
            ["logger"],
            "a later pattern wins"
        );
        assert_eq!(
            of("docs/getting-started.md"),
            ["docs-lead"],
            "no email owner"
        );
        assert_eq!(
            of("docs/build-app/troubleshooting.md"),
            ["octo-org/everyone"],
            "`docs/*` is not nested"
        );
        assert_eq!(of("apps/web/index.ts"), ["octocat"]);
        assert_eq!(of("lib/apps/x.rs"), ["octocat"], "unanchored directory");
        assert_eq!(of("scripts/deploy.sh"), ["doctocat", "octo-org/ops"]);
        assert_eq!(
            of("tools/scripts/x.sh"),
            ["octo-org/everyone"],
            "anchored to the root"
        );
        assert_eq!(of("deeply/nested/logs/a.txt"), ["logger"]);
        assert!(
            of("vendor/lib.c").is_empty(),
            "a rule with no owners leaves none"
        );
    }

    #[test]
    fn what_cannot_be_read_is_left_out() {
        let owners = CodeOwners::parse("!keep.rs @a\n[ab].rs @b\n* @c\n");
        assert_eq!(owners.owners_of("keep.rs"), ["c"]);
        assert_eq!(owners.owners_of("a.rs"), ["c"]);
        assert!(CodeOwners::default().owners_of("x").is_empty());
    }
}
