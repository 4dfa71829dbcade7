//! A PR that changes the rules Parley reviews by. A PR is always reviewed by the default
//! branch's `.parley.yml` and `.gitattributes` (a PR cannot change its own rules), but once
//! it is merged its version is what every later PR is reviewed by: a `review.skipPaths`
//! that takes in `src/**`, a `gate.blockOn` without `high`, a `.gitattributes` that marks
//! real code generated would silence later findings without anyone deciding so in a
//! setting's own place. So the review says, above its findings, what would change, and the
//! person who merges it decides knowingly.
//!
//! Only what the PR's head would put in force is compared, setting by setting (the keys
//! of `@parley configuration`), and for `.gitattributes` the lines that mark files
//! generated or vendored. Read at the head from GitHub; a file that cannot be read is
//! said to have changed without the detail, never passed over. Guideline files
//! (`CLAUDE.md`, `AGENTS.md`) steer every pass in their directory: a change to one is
//! named, its diff is in the review for anyone to read.

use crate::config::{self, PassDeadline, RepoConfig};
use crate::ports::github::{ChangedFile, FileStatus, GitHub, RepoScope};
use crate::repo::attributes;
use crate::repo::{Attributes, GUIDELINE_FILES};
use crate::sanitize;

/// A setting's value shown at most this long (lists of globs can be long).
const MAX_VALUE_CHARS: usize = 160;

/// What the default branch has in force, to compare the PR's head with.
pub struct InForce<'a> {
    pub config: &'a RepoConfig,
    /// What the repository's `.parley.yml` is read over (the organisation's settings, or
    /// Parley's defaults): the head's version is read over it too, so a key the
    /// organisation sets is not said to change back to Parley's default.
    pub under: &'a RepoConfig,
    pub attributes: &'a Attributes,
    pub deadline: PassDeadline,
}

/// One line for each rule the PR would change once merged; empty when it changes none.
pub async fn rules_changed(
    github: &dyn GitHub,
    scope: &RepoScope,
    head_sha: &str,
    changed: &[ChangedFile],
    in_force: &InForce<'_>,
) -> Vec<String> {
    // Renamed away counts too: the file is then gone at the head.
    let touched = |name: &str| {
        changed
            .iter()
            .find(|file| file.filename == name || file.previous_filename.as_deref() == Some(name))
    };
    let mut lines = Vec::new();
    if let Some(file) = touched(config::FILE_NAME) {
        let text = at_head(github, scope, head_sha, file, config::FILE_NAME).await;
        lines.extend(config_changes(scope, text.as_deref(), in_force));
    }
    // The root's `.gitattributes` and any directory's (each speaks for what is under it).
    let mut attribute_files: Vec<&str> = changed
        .iter()
        .flat_map(|file| {
            [
                Some(file.filename.as_str()),
                file.previous_filename.as_deref(),
            ]
        })
        .flatten()
        .filter(|path| attributes::dir_of(path).is_some())
        .collect();
    attribute_files.sort_unstable();
    attribute_files.dedup();
    for name in attribute_files {
        let (Some(file), Some(dir)) = (touched(name), attributes::dir_of(name)) else {
            continue;
        };
        match at_head(github, scope, head_sha, file, name).await {
            Some(text) => lines.extend(marks_added(
                dir,
                in_force.attributes,
                &Attributes::parse_in(dir, &text),
            )),
            None => lines.push(format!(
                "`{}` changes (its new version could not be read)",
                shown(name)
            )),
        }
    }
    for file in changed {
        let moved_away = file
            .previous_filename
            .as_deref()
            .filter(|previous| is_guideline(previous) && *previous != file.filename);
        if let Some(previous) = moved_away {
            lines.push(format!(
                "`{}` is moved to `{}`: later reviews of code under it no longer follow it there",
                shown(previous),
                shown(&file.filename)
            ));
        }
        if is_guideline(&file.filename) {
            lines.push(format!(
                "`{}` {}: later reviews of code under it follow its new text",
                shown(&file.filename),
                if file.status == FileStatus::Removed {
                    "is deleted"
                } else {
                    "changes"
                }
            ));
        }
    }
    lines
}

/// A file the passes read as the repository's guidelines (see [`crate::repo::GUIDELINE_FILES`]).
fn is_guideline(path: &str) -> bool {
    GUIDELINE_FILES.contains(&path)
        || ["CLAUDE.md", "AGENTS.md"].iter().any(|name| {
            path.strip_suffix(name)
                .is_some_and(|dir| dir.ends_with('/'))
        })
}

/// The text of `name` at the head: empty when the PR deletes it or moves it away (its
/// defaults then apply).
async fn at_head(
    github: &dyn GitHub,
    scope: &RepoScope,
    head_sha: &str,
    file: &ChangedFile,
    name: &str,
) -> Option<String> {
    if file.status == FileStatus::Removed || file.filename != name {
        return Some(String::new());
    }
    match github
        .get_file_contents(scope, &file.filename, head_sha)
        .await
    {
        Ok(Some(contents)) => contents.text().map(str::to_string),
        Ok(None) => Some(String::new()),
        Err(err) => {
            tracing::warn!(repo = %scope.full_name(), path = %file.filename, error = %err, "could not read a rules file at the PR's head");
            None
        }
    }
}

/// What `.parley.yml` at the head (`None`: it could not be read) would change: its
/// settings, read over what the repository's file is read over now; in the
/// organisation's `.github` repository, every repository's defaults.
fn config_changes(scope: &RepoScope, head: Option<&str>, in_force: &InForce<'_>) -> Vec<String> {
    let mut lines = match head {
        Some(text) => {
            let (mut head, mut warnings) = config::parse_over(text, in_force.under);
            in_force.deadline.apply(&mut head, &mut warnings);
            settings_changed(in_force.config, &head)
        }
        None => vec![format!(
            "`{}` changes (its new version could not be read)",
            config::FILE_NAME
        )],
    };
    if scope.name == config::layers::ORG_REPO {
        lines.push(format!(
            "`{}` here is the organisation's: once merged, what it sets applies to every repository of `{}` that does not set its own",
            config::FILE_NAME,
            shown(&scope.owner)
        ));
    }
    lines
}

/// `.parley.yml`'s settings that differ, as `key`: old → new.
pub fn settings_changed(in_force: &RepoConfig, head: &RepoConfig) -> Vec<String> {
    let before = config::describe(in_force);
    let after = config::describe(head);
    let mut lines: Vec<String> = before
        .iter()
        .zip(&after)
        .filter(|((_, old), (_, new))| old != new)
        .map(|((key, old), (_, new))| {
            format!(
                "`{}` `{key}`: `{}` → `{}`",
                config::FILE_NAME,
                shown(old),
                shown(new)
            )
        })
        .collect();
    // Described by globs and length only (the text is in the diff): a new wording of the
    // same length is a change all the same.
    let key = "review.instructions";
    if in_force.review.instructions != head.review.instructions
        && !lines.iter().any(|line| line.contains(key))
    {
        lines.push(format!(
            "`{}` `{key}` changes its text: later reviews of the files it names follow the new text",
            config::FILE_NAME
        ));
    }
    lines
}

/// The lines of directory `dir`'s `.gitattributes` (`""`: the root's) that mark files
/// generated or vendored at the head and not in force now: what later reviews would leave
/// out.
pub fn marks_added(dir: &str, in_force: &Attributes, head: &Attributes) -> Vec<String> {
    let file = attributes::file_in(dir);
    head.marking_lines(dir)
        .filter(|line| !in_force.marking_lines(dir).any(|now| now == *line))
        .map(|line| {
            format!(
                "`{}` adds `{}`: files it marks generated or vendored are not reviewed",
                shown(&file),
                shown(line)
            )
        })
        .collect()
}

fn shown(value: &str) -> String {
    sanitize::inline_name(&sanitize::truncate(value, MAX_VALUE_CHARS)).replace('`', "'")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_setting_that_differs_is_one_line() {
        let now = RepoConfig::default();
        let (head, _) = config::parse(
            "gate:\n  blockOn: [critical]\n  incomplete: hold\nreview:\n  minConfidence: 75\n",
        );
        assert_eq!(
            settings_changed(&now, &head),
            [
                "`.parley.yml` `gate.blockOn`: `[critical, high]` → `[critical]`",
                "`.parley.yml` `gate.incomplete`: `pass` → `hold`",
            ],
            "a setting written with its default value is no change"
        );
        assert!(settings_changed(&now, &RepoConfig::default()).is_empty());

        let (now, _) =
            config::parse("review:\n  instructions: [{paths: db/**, text: Reversible.}]\n");
        let (head, _) =
            config::parse("review:\n  instructions: [{paths: db/**, text: Idempotent.}]\n");
        assert_eq!(
            settings_changed(&now, &head),
            [
                "`.parley.yml` `review.instructions` changes its text: later reviews of the files it names follow the new text"
            ],
            "the same globs and length, another text"
        );
        let (head, _) =
            config::parse("review:\n  instructions: [{paths: sql/**, text: Reversible.}]\n");
        assert_eq!(
            settings_changed(&now, &head),
            [
                "`.parley.yml` `review.instructions`: `[db/** (11 characters)]` → `[sql/** (11 characters)]`"
            ]
        );
    }

    /// With an organisation's settings under the repository's, the head's file is read
    /// over them too: a key the organisation sets and neither version of the repository's
    /// file does is no change (read over Parley's defaults, it would be said to go back to
    /// them). In the organisation's own `.github` repository the file is everyone's.
    #[test]
    fn the_heads_file_is_read_over_the_organisations_settings() {
        let layered = config::parse_layered(
            "gate:\n  blockOn: [critical]\n",
            "acme/.github",
            "review:\n  maxInlineComments: 7\n",
        );
        let in_force = InForce {
            config: &layered.config,
            under: &layered.under,
            attributes: &Attributes::default(),
            deadline: PassDeadline::default(),
        };
        let repo = RepoScope::new(1, "acme", "api");
        assert_eq!(
            config_changes(&repo, Some("review:\n  maxInlineComments: 5\n"), &in_force),
            ["`.parley.yml` `review.maxInlineComments`: `7` → `5`"]
        );
        assert_eq!(
            config_changes(&repo, Some(""), &in_force),
            ["`.parley.yml` `review.maxInlineComments`: `7` → `15`"],
            "deleted, the organisation's settings stay"
        );
        let org = RepoScope::new(1, "acme", ".github");
        let lines = config_changes(&org, None, &in_force);
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert_eq!(
            lines[0],
            "`.parley.yml` changes (its new version could not be read)"
        );
        assert!(
            lines[1].contains("applies to every repository of `acme`"),
            "{lines:?}"
        );
    }

    #[test]
    fn long_and_odd_values_stay_on_their_line() {
        let now = RepoConfig::default();
        let globs: Vec<String> = (0..60).map(|i| format!("\"dir{i}/**\"")).collect();
        let (head, _) = config::parse(&format!(
            "review:\n  skipPaths: [{}, \"a`b\"]\n",
            globs.join(", ")
        ));
        let lines = settings_changed(&now, &head);
        assert_eq!(lines.len(), 1, "{lines:#?}");
        assert!(lines[0].starts_with("`.parley.yml` `review.skipPaths`: "));
        assert!(
            lines[0].chars().count() < 2 * MAX_VALUE_CHARS + 80,
            "{}",
            lines[0]
        );
        assert!(!lines[0].contains('\n'));
    }

    #[test]
    fn guideline_files_are_known_by_name_and_place() {
        for path in [
            "CLAUDE.md",
            ".claude/CLAUDE.md",
            "AGENTS.md",
            "src/api/AGENTS.md",
        ] {
            assert!(is_guideline(path), "{path}");
        }
        for path in [
            "docs/NOT_CLAUDE.md",
            "README.md",
            "src/AGENTS.md.bak",
            "XAGENTS.md",
        ] {
            assert!(!is_guideline(path), "{path}");
        }
    }

    #[test]
    fn only_new_marking_lines_are_said() {
        let now = Attributes::parse("api/** linguist-generated\n*.sh text eol=lf\n");
        let head = Attributes::parse(
            "api/** linguist-generated\nsrc/** linguist-generated\nlib/** -linguist-vendored\n*.sh text eol=lf\n",
        );
        assert_eq!(
            marks_added("", &now, &head),
            [
                "`.gitattributes` adds `src/** linguist-generated`: files it marks generated or vendored are not reviewed",
            ],
            "a line that takes a mark away leaves nothing out"
        );
        assert!(
            marks_added("", &head, &now).is_empty(),
            "taking marks away leaves out nothing more"
        );
    }

    /// A directory's `.gitattributes` is compared with that directory's file in force: the
    /// same line in the root's file scopes other files, and is no reason to leave it out.
    #[test]
    fn a_directorys_file_is_compared_with_its_own() {
        let now = Attributes::parse("*.pb.go linguist-generated\n")
            .then(Attributes::parse_in("svc", "old/** linguist-generated\n"));
        let head = Attributes::parse_in(
            "svc",
            "old/** linguist-generated\n*.pb.go linguist-generated\n",
        );
        assert_eq!(
            marks_added("svc", &now, &head),
            [
                "`svc/.gitattributes` adds `*.pb.go linguist-generated`: files it marks generated or vendored are not reviewed",
            ]
        );
    }
}
