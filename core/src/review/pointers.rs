//! Changed files whose diff is only a pointer to content kept elsewhere: a submodule's
//! commit, or a Git LFS pointer. Neither shows a line of this repository's code: five
//! passes paid to read `-Subproject commit 1a2b…` / `+Subproject commit 3c4d…` can only
//! guess ("is this version compatible?") and add noise. The summary names them instead.
//!
//! Only a diff made of nothing else counts, on both sides: a patch that removes code and
//! writes a pointer in its place is reviewed like any other (what it removes may matter).

use crate::review::diff::{LineKind, Patch};

/// What a pointer-only diff points at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pointer {
    /// A submodule moved to another commit (`from`: none when it is new here).
    Submodule { from: Option<String>, to: String },
    /// A file kept in Git LFS: the diff is its pointer (version, oid, size).
    Lfs,
}

/// The pointer `patch` changes, when it changes nothing else.
pub fn of(patch: &Patch) -> Option<Pointer> {
    let changed: Vec<(LineKind, &str)> = patch
        .lines()
        .filter(|l| l.kind != LineKind::Context)
        .map(|l| (l.kind, l.text.trim_end()))
        .collect();
    if changed.is_empty() {
        return None;
    }
    submodule(&changed).or_else(|| lfs(&changed))
}

/// `Subproject commit <sha>` lines, one added and at most one removed: how git shows a
/// submodule's commit in its parent's diff.
fn submodule(changed: &[(LineKind, &str)]) -> Option<Pointer> {
    let commit = |text: &str| {
        let sha = text.strip_prefix("Subproject commit ")?;
        let sha = sha.strip_suffix("-dirty").unwrap_or(sha);
        (sha.len() == 40 && sha.bytes().all(|b| b.is_ascii_hexdigit())).then(|| sha.to_string())
    };
    let (mut from, mut to) = (None, None);
    for (kind, text) in changed {
        let slot = if *kind == LineKind::Added {
            &mut to
        } else {
            &mut from
        };
        if slot.is_some() {
            return None;
        }
        *slot = Some(commit(text)?);
    }
    Some(Pointer::Submodule { from, to: to? })
}

/// Git LFS's pointer lines (<https://github.com/git-lfs/git-lfs/blob/main/docs/spec.md>):
/// every changed line one of them, and the added side a whole pointer.
fn lfs(changed: &[(LineKind, &str)]) -> Option<Pointer> {
    const VERSION: &str = "version https://git-lfs.github.com/spec/v1";
    let is_pointer_line = |text: &str| {
        text == VERSION
            || text
                .strip_prefix("oid sha256:")
                .is_some_and(|oid| oid.len() == 64 && oid.bytes().all(|b| b.is_ascii_hexdigit()))
            || text
                .strip_prefix("size ")
                .is_some_and(|size| !size.is_empty() && size.bytes().all(|b| b.is_ascii_digit()))
    };
    if !changed.iter().all(|(_, text)| is_pointer_line(text)) {
        return None;
    }
    let added = |prefix: &str| {
        changed
            .iter()
            .any(|(kind, text)| *kind == LineKind::Added && text.starts_with(prefix))
    };
    (added("oid ") || added(VERSION)).then_some(Pointer::Lfs)
}

impl std::fmt::Display for Pointer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let short = |sha: &str| sha.chars().take(7).collect::<String>();
        match self {
            Pointer::Submodule {
                from: Some(from),
                to,
            } => write!(
                f,
                "a submodule, moved from `{}` to `{}` (another repository's code)",
                short(from),
                short(to)
            ),
            Pointer::Submodule { from: None, to } => write!(
                f,
                "a submodule, added at `{}` (another repository's code)",
                short(to)
            ),
            Pointer::Lfs => f.write_str("a Git LFS pointer (its content is not in the diff)"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::review::diff::parse_hunks;

    const OLD: &str = "1a2b3c4d5e6f7a8b9c0d1a2b3c4d5e6f7a8b9c0d";
    const NEW: &str = "3c4d5e6f7a8b9c0d1a2b3c4d5e6f7a8b9c0d1a2b";
    const OID: &str = "4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393";

    fn pointer(patch: &str) -> Option<Pointer> {
        of(&parse_hunks(patch).unwrap())
    }

    #[test]
    fn a_submodules_commit_is_a_pointer() {
        assert_eq!(
            pointer(&format!(
                "@@ -1 +1 @@\n-Subproject commit {OLD}\n+Subproject commit {NEW}"
            )),
            Some(Pointer::Submodule {
                from: Some(OLD.into()),
                to: NEW.into()
            })
        );
        let added = pointer(&format!("@@ -0,0 +1 @@\n+Subproject commit {NEW}-dirty")).unwrap();
        assert_eq!(
            added.to_string(),
            "a submodule, added at `3c4d5e6` (another repository's code)"
        );
    }

    #[test]
    fn an_lfs_pointer_is_a_pointer() {
        let updated = format!(
            "@@ -1,3 +1,3 @@\n version https://git-lfs.github.com/spec/v1\n-oid sha256:{OID}\n-size 12345\n+oid sha256:{}\n+size 12346",
            OID.replace('4', "5")
        );
        assert_eq!(pointer(&updated), Some(Pointer::Lfs));
        let new = format!(
            "@@ -0,0 +1,3 @@\n+version https://git-lfs.github.com/spec/v1\n+oid sha256:{OID}\n+size 7"
        );
        assert_eq!(pointer(&new), Some(Pointer::Lfs));
    }

    #[test]
    fn code_beside_or_in_place_of_a_pointer_is_reviewed() {
        for patch in [
            // Code replaced by a pointer: what it removes may matter.
            format!("@@ -1 +1 @@\n-if !authorized {{ return; }}\n+Subproject commit {NEW}"),
            format!(
                "@@ -1 +1,3 @@\n-check();\n+version https://git-lfs.github.com/spec/v1\n+oid sha256:{OID}\n+size 7"
            ),
            // A pointer and a line of code.
            format!("@@ -0,0 +1,2 @@\n+Subproject commit {NEW}\n+run()"),
            // Not a commit, not an oid.
            "@@ -0,0 +1 @@\n+Subproject commit main".to_string(),
            "@@ -0,0 +1,2 @@\n+oid sha256:abc\n+size 7".to_string(),
            // Two commits on one side is no submodule git writes.
            format!("@@ -0,0 +1,2 @@\n+Subproject commit {OLD}\n+Subproject commit {NEW}"),
            // Only a size, with no version or oid added.
            "@@ -1 +1 @@\n-size 7\n+size 8".to_string(),
        ] {
            assert_eq!(pointer(&patch), None, "{patch}");
        }
    }
}
