//! Which repository a call is about (through which installation), and how much of a listing
//! to fetch.

use crate::job::RepoRef;

/// A repository as seen through one App installation. Every repository call carries one,
/// so a token for one tenant can never be used on another's repository.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RepoScope {
    pub installation_id: u64,
    pub owner: String,
    pub name: String,
    /// GitHub's ids of the repository and its owner, 0 when unknown (a scope typed by
    /// hand): what the store keys the repository's records by ([`RepoScope::tenant`]).
    pub repo_id: u64,
    pub owner_id: u64,
}

impl RepoScope {
    pub fn new(installation_id: u64, owner: impl Into<String>, name: impl Into<String>) -> Self {
        RepoScope {
            installation_id,
            owner: owner.into(),
            name: name.into(),
            repo_id: 0,
            owner_id: 0,
        }
    }

    /// The same scope with GitHub's ids, once they are known.
    pub fn with_ids(mut self, repo_id: u64, owner_id: u64) -> Self {
        self.repo_id = repo_id;
        self.owner_id = owner_id;
        self
    }

    /// From the repository a job names and the installation the webhook came through.
    pub fn for_repo(installation_id: u64, repo: &RepoRef) -> Self {
        RepoScope::new(installation_id, repo.owner.clone(), repo.name.clone())
            .with_ids(repo.id, repo.owner_id)
    }

    /// Where this repository's records live in the store.
    pub fn tenant(&self) -> crate::tenancy::Tenant {
        crate::tenancy::Tenant::of(self.repo_id, self.owner_id, &self.owner, &self.name)
    }

    /// `owner/name`.
    pub fn full_name(&self) -> String {
        format!("{}/{}", self.owner, self.name)
    }
}

/// How much of a paginated listing to fetch. Both bounds always apply, so no listing is
/// ever unbounded: a PR with 3 000 review comments costs at most what the caller allowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageLimit {
    pub max_items: usize,
    pub max_pages: usize,
}

impl PageLimit {
    /// GitHub's largest page; asking for more per page is silently capped by GitHub.
    pub const MAX_PER_PAGE: usize = 100;

    /// At most `max_items` items. Pages are requested `min(max_items, 100)` at a time, so
    /// GitHub normally needs `ceil(max_items / 100)` of them; should it return short pages,
    /// paging goes on, but never past `max_items` pages (each page must add an item, an
    /// empty page ends the listing).
    pub const fn items(max_items: usize) -> Self {
        PageLimit {
            max_items,
            max_pages: max_items,
        }
    }

    /// At most `max_pages` full pages of 100.
    pub const fn pages(max_pages: usize) -> Self {
        PageLimit {
            max_items: max_pages.saturating_mul(Self::MAX_PER_PAGE),
            max_pages,
        }
    }

    /// Items requested per page: never more than the caller wants in total.
    pub fn per_page(&self) -> usize {
        self.max_items.clamp(1, Self::MAX_PER_PAGE)
    }
}

/// A listing cut at its [`PageLimit`]. `truncated` says GitHub had more, so a caller can
/// report "N files not reviewed" instead of silently working on part of the data.
#[derive(Debug, Clone, PartialEq)]
pub struct Listing<T> {
    pub items: Vec<T>,
    pub truncated: bool,
}
