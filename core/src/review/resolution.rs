//! Who may lift a blocking finding, and when: the rule that keeps the merge gate honest.
//!
//! A blocking finding keeps "Parley review" at `failure` until it is fixed or someone
//! entitled decides it stands no more. Resolving a review thread, winning a dispute with
//! the model and `@parley dismiss` all lift it, so each is weighed here:
//!
//! - a finding that does not block (its severity is not in `gate.blockOn`) is lifted by
//!   anyone: it never held the gate;
//! - the PR's author lifts a blocking finding only when the code at the finding's lines
//!   changed since it was posted. Otherwise the author alone could resolve every thread
//!   (or talk the model round) and turn a required check green without touching the code;
//! - anyone else needs at least `gate.resolveBy` (default `write`) on the repository.
//!
//! The permission lookup and the compare are GitHub calls; a transient failure is the
//! caller's error (the job is retried), any other failure counts as "not allowed": the gate
//! fails closed on findings.

use crate::config::{GateConfig, PermissionLevel};
use crate::ports::Finding;
use crate::ports::github::{
    ChangedFile, Comparison, FileStatus, GitHub, GitHubError, Permission, RepoScope,
};
use crate::review::diff::{self, LineKind, Patch};
use crate::review::{merge, rebased};

/// Whether a resolution (or concession, or dismissal) by someone lifts a finding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// It counts: the finding is no longer open.
    Lifts,
    /// The PR's author, and the code at the finding's lines has not changed since it was
    /// posted.
    NeedsCodeChange,
    /// Someone without `gate.resolveBy` on the repository (their level, the level needed).
    NeedsPermission { has: Permission, needs: Permission },
}

impl Decision {
    pub fn lifts(&self) -> bool {
        *self == Decision::Lifts
    }

    /// One sentence for the person whose action did not count.
    pub fn explain(&self, finding: &Finding) -> Option<String> {
        match self {
            Decision::Lifts => None,
            Decision::NeedsCodeChange => Some(format!(
                "`{}` is a blocking finding and the code at `{}:{}` has not changed since it was posted, so it still counts for the merge gate. Push a fix, or ask someone with write access to resolve it.",
                finding.id, finding.path, finding.line
            )),
            Decision::NeedsPermission { has, needs } => Some(format!(
                "`{}` is a blocking finding; lifting it without a code change needs {} permission (you have {}), so it still counts for the merge gate.",
                finding.id,
                level_name(*needs),
                level_name(*has)
            )),
        }
    }
}

/// Decide whether `actor` lifting `finding` counts. `pr_author` is the PR's author and
/// `head_sha` its current head (what "the code now" means).
pub async fn decide(
    github: &dyn GitHub,
    scope: &RepoScope,
    gate: &GateConfig,
    finding: &Finding,
    actor: &str,
    pr_author: Option<&str>,
    head_sha: &str,
) -> Result<Decision, GitHubError> {
    if !gate.block_on.contains(&finding.severity) {
        return Ok(Decision::Lifts);
    }
    if pr_author.is_some_and(|author| author.eq_ignore_ascii_case(actor)) {
        return Ok(if code_changed(github, scope, finding, head_sha).await? {
            Decision::Lifts
        } else {
            Decision::NeedsCodeChange
        });
    }
    let needs = permission(gate.resolve_by);
    let has = level(github, scope, actor).await?;
    Ok(if has >= needs {
        Decision::Lifts
    } else {
        Decision::NeedsPermission { has, needs }
    })
}

/// Whether the code at the finding's lines changed between the commit it was found on and
/// `head_sha`. Unknown (the file's patch is missing) reads as "changed" only where GitHub
/// says the file itself changed. Where the head no longer descends from that commit (a
/// rebase, a force-push) the compare says nothing of those lines, so the head's copy of
/// the file is read instead: changed only when the finding's code is nowhere in it
/// ([`gone_from_the_head`]); a file GitHub will not give reads as "not changed" (fail
/// closed: a rebase alone must not lift a blocking finding).
pub async fn code_changed(
    github: &dyn GitHub,
    scope: &RepoScope,
    finding: &Finding,
    head_sha: &str,
) -> Result<bool, GitHubError> {
    if finding.head_sha == head_sha {
        return Ok(false);
    }
    match since(github, scope, &finding.head_sha, head_sha).await? {
        Some(comparison) => Ok(changed_in(Some(&comparison), finding)),
        None => gone_from_the_head(github, scope, finding, head_sha).await,
    }
}

/// Whether the code at `finding`'s lines is nowhere in its file at `head_sha`, wherever a
/// rebase moved it: its lines are read from its own commit (else, when that commit is
/// gone, its [`merge::site`] is looked for). Lines with nothing but blanks, no such file at
/// the head (removed, or renamed: no code change by itself) or a file GitHub will not
/// give: `false`, not changed.
pub async fn gone_from_the_head(
    github: &dyn GitHub,
    scope: &RepoScope,
    finding: &Finding,
    head_sha: &str,
) -> Result<bool, GitHubError> {
    let path = &finding.path;
    let (then, now) = rebased::texts(github, scope, path, &finding.head_sha, head_sha).await?;
    let Some(now) = now else {
        return Ok(false);
    };
    Ok(match then {
        Some(then) => {
            let start = finding.start_line.unwrap_or(finding.line);
            rebased::became(&then, &now, start, finding.line).gone()
        }
        None => !merge::still_in_text(finding, &now),
    })
}

/// What changed from `base` to `head`, or `None` where GitHub cannot tell it line by line:
/// it cannot compare them (after a force-push the old commit may be gone), or `head` does
/// not descend from `base` (see [`Comparison::descends`]). Read as "not changed" by
/// [`changed_in`]. A transient failure is the caller's.
pub async fn since(
    github: &dyn GitHub,
    scope: &RepoScope,
    base: &str,
    head: &str,
) -> Result<Option<Comparison>, GitHubError> {
    match github.compare_commits(scope, base, head).await {
        Ok(comparison) if comparison.descends() => Ok(Some(comparison)),
        Ok(comparison) => {
            tracing::info!(repo = %scope.full_name(), base, head, status = %comparison.status, "the head does not descend from the commit (rebased or force-pushed): its compare says nothing of that commit's lines");
            Ok(None)
        }
        Err(err) if err.is_transient() => Err(err),
        Err(err) => {
            tracing::info!(repo = %scope.full_name(), base, head, error = %err, "cannot compare the commits; treating the code as unchanged");
            Ok(None)
        }
    }
}

/// What GitHub answered comparing commits with the head, asked once a pair for a whole
/// review: the findings of one commit, weighed for a fix and then for closing, share one
/// compare.
#[derive(Debug, Default)]
pub struct Compares(std::collections::HashMap<(String, String), Option<Comparison>>);

impl Compares {
    /// [`since`], asked once per `(base, head)`.
    pub async fn since(
        &mut self,
        github: &dyn GitHub,
        scope: &RepoScope,
        base: &str,
        head: &str,
    ) -> Result<Option<&Comparison>, GitHubError> {
        let key = (base.to_string(), head.to_string());
        if !self.0.contains_key(&key) {
            let comparison = since(github, scope, base, head).await?;
            self.0.insert(key.clone(), comparison);
        }
        Ok(self.0.get(&key).and_then(Option::as_ref))
    }
}

/// Whether `comparison` (from the finding's commit) changes the code at the finding's
/// lines; see [`code_changed`]. A rename moves the code without changing it: its lines
/// are weighed in the renamed file's patch (whose old side is the finding's file), so an
/// author cannot lift a blocking finding by giving its file another name.
pub fn changed_in(comparison: Option<&Comparison>, finding: &Finding) -> bool {
    let Some(file) = comparison.and_then(|c| file_of(&c.files, &finding.path)) else {
        return false;
    };
    if file.status == FileStatus::Removed {
        return true;
    }
    let Some(patch) = file.patch.as_deref() else {
        // A rename and nothing else: GitHub lists it with no patch and no line changed.
        // Otherwise changed, but GitHub sent no patch (too large, binary): cannot tell
        // the lines.
        return !(file.status == FileStatus::Renamed && file.changes == 0);
    };
    match diff::parse_hunks(patch) {
        Ok(patch) => touches(
            &patch,
            finding.start_line.unwrap_or(finding.line),
            finding.line,
        ),
        Err(_) => true,
    }
}

/// Where `files` (changed since a finding's or a comment's commit) have the file that was
/// `path` then: under that path, or under the name a rename gave it (whose patch's old
/// side is that file).
pub fn file_of<'c>(files: &'c [ChangedFile], path: &str) -> Option<&'c ChangedFile> {
    files.iter().find(|f| {
        f.filename == path
            || (f.status == FileStatus::Renamed && f.previous_filename.as_deref() == Some(path))
    })
}

/// Whether `patch` (old side = the finding's commit) removes one of the old lines
/// `start..=end`, or adds lines between two of them.
pub fn touches(patch: &Patch, start: u32, end: u32) -> bool {
    let (start, end) = (start.min(end), start.max(end));
    for hunk in &patch.hunks {
        // The old line an added line follows (the hunk's start - 1 before any).
        let mut last_old = hunk.old_start.saturating_sub(1);
        for line in &hunk.lines {
            match line.kind {
                LineKind::Removed => {
                    if let Some(old) = line.old {
                        if (start..=end).contains(&old) {
                            return true;
                        }
                        last_old = old;
                    }
                }
                LineKind::Added => {
                    // Inserted after old line `last_old`: inside the range when it lands
                    // between its first and last line.
                    if last_old >= start && last_old < end {
                        return true;
                    }
                }
                LineKind::Context => {
                    if let Some(old) = line.old {
                        last_old = old;
                    }
                }
            }
        }
    }
    false
}

pub(crate) async fn level(
    github: &dyn GitHub,
    scope: &RepoScope,
    login: &str,
) -> Result<Permission, GitHubError> {
    match github.get_collaborator_permission(scope, login).await {
        Ok(found) => Ok(found.level()),
        Err(err) if err.is_absent() => Ok(Permission::None),
        Err(err) if err.is_transient() => Err(err),
        Err(err) => {
            tracing::warn!(repo = %scope.full_name(), login, error = %err, "permission lookup failed; treating as none");
            Ok(Permission::None)
        }
    }
}

pub fn permission(level: PermissionLevel) -> Permission {
    match level {
        PermissionLevel::Read => Permission::Read,
        PermissionLevel::Triage => Permission::Triage,
        PermissionLevel::Write => Permission::Write,
        PermissionLevel::Maintain => Permission::Maintain,
        PermissionLevel::Admin => Permission::Admin,
    }
}

fn level_name(level: Permission) -> &'static str {
    match level {
        Permission::None => "no",
        Permission::Read => "read",
        Permission::Triage => "triage",
        Permission::Write => "write",
        Permission::Maintain => "maintain",
        Permission::Admin => "admin",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn patch(text: &str) -> Patch {
        diff::parse_hunks(text).expect("patch")
    }

    #[test]
    fn a_removed_or_replaced_line_in_range_touches_it() {
        let p = patch("@@ -10,3 +10,3 @@\n a\n-b\n+B\n c\n");
        assert!(touches(&p, 11, 11));
        assert!(touches(&p, 9, 12));
        assert!(!touches(&p, 10, 10));
        assert!(!touches(&p, 12, 20));
    }

    #[test]
    fn an_insertion_inside_the_range_touches_it_one_outside_does_not() {
        let p = patch("@@ -10,3 +10,4 @@\n a\n+new\n b\n c\n");
        // Inserted after old line 10, before 11.
        assert!(touches(&p, 10, 11));
        assert!(!touches(&p, 11, 12));
        assert!(!touches(&p, 5, 9));
        // A single-line finding is only touched by removing (or replacing) that line.
        assert!(!touches(&p, 10, 10));
    }

    #[test]
    fn hunks_elsewhere_do_not_touch() {
        let p = patch("@@ -100,2 +100,2 @@\n x\n-y\n+z\n");
        assert!(!touches(&p, 1, 50));
        assert!(touches(&p, 101, 101));
    }
    #[test]
    fn a_rename_changes_the_code_only_where_its_patch_touches_the_lines() {
        // The finding is on line 11 of `src/db.rs`, since renamed to `src/store.rs`.
        let finding = Finding {
            line: 11,
            ..Finding::sample("src/db.rs", "SQL injection")
        };
        let renamed = |patch: Option<&str>| {
            let file = ChangedFile {
                previous_filename: Some("src/db.rs".into()),
                ..ChangedFile::listed("src/store.rs", FileStatus::Renamed, patch)
            };
            Comparison {
                status: "ahead".into(),
                ahead_by: 1,
                behind_by: 0,
                total_commits: 1,
                html_url: String::new(),
                merge_base_commit: None,
                commits: Vec::new(),
                files: vec![file],
            }
        };
        // Only the name changed: GitHub sends no patch.
        assert!(!changed_in(Some(&renamed(None)), &finding));
        assert!(!changed_in(
            Some(&renamed(Some("@@ -100,2 +100,2 @@\n x\n-y\n+z\n"))),
            &finding
        ));
        assert!(changed_in(
            Some(&renamed(Some("@@ -10,3 +10,3 @@\n a\n-b\n+B\n c\n"))),
            &finding
        ));
        // Changed lines GitHub would not show (too large): cannot tell, so changed.
        let mut large = renamed(None);
        large.files[0].changes = 4_000;
        assert!(changed_in(Some(&large), &finding));
        // Removed is changed.
        let mut removed = renamed(None);
        removed.files[0] = ChangedFile::listed("src/db.rs", FileStatus::Removed, None);
        assert!(changed_in(Some(&removed), &finding));
    }
}
