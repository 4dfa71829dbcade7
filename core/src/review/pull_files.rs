//! The files a PR changes and where in them inline comments may go: read once per
//! review, and again by what is remembered of the review for retrieval.

use super::diff::Patch;
use crate::ports::github::ChangedFile;
use std::collections::HashMap;

/// GitHub lists at most 3 000 files per PR; past this many, the rest are "not reviewed".
pub const MAX_FILES: usize = 300;

/// Every file a PR changes, as GitHub lists them (up to [`MAX_FILES`]).
pub struct PullFiles {
    pub files: Vec<ChangedFile>,
    /// GitHub had more than the listing cap.
    pub truncated: bool,
    /// Parsed hunks per path: where inline comments may go.
    pub patches: HashMap<String, Patch>,
    pub paths: Vec<String>,
}

impl PullFiles {
    pub async fn fetch(
        github: &dyn crate::ports::GitHub,
        scope: &crate::ports::RepoScope,
        number: u64,
    ) -> Result<Self, crate::ports::GitHubError> {
        let listing = github
            .list_pull_request_files(
                scope,
                number,
                crate::ports::github::PageLimit::items(MAX_FILES),
            )
            .await?;
        Ok(Self::from_files(listing.items, listing.truncated))
    }

    /// From files read elsewhere (a local git range).
    pub fn from_files(files: Vec<ChangedFile>, truncated: bool) -> Self {
        let patches = files
            .iter()
            .filter_map(|f| {
                Some((
                    f.filename.clone(),
                    super::diff::parse_hunks(f.patch.as_deref()?).ok()?,
                ))
            })
            .collect();
        let paths = files.iter().map(|f| f.filename.clone()).collect();
        PullFiles {
            files,
            truncated,
            patches,
            paths,
        }
    }
}
