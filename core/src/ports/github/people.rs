//! Accounts, the App itself, and what a person may do in a repository.

use crate::job::Actor;
use serde::{Deserialize, Deserializer, Serialize};

/// A GitHub account as it appears on comments, PRs and reviews.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct User {
    pub login: String,
    #[serde(default)]
    pub id: u64,
    /// `User`, `Bot` or `Organization`.
    #[serde(rename = "type", default)]
    pub kind: String,
}

impl User {
    /// The domain's view of an author, for gates such as "never answer a bot".
    pub fn to_actor(&self) -> Actor {
        Actor {
            login: self.login.clone(),
            kind: self.kind.clone(),
        }
    }
}

/// The GitHub App Parley runs as (`GET /app`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct App {
    pub id: u64,
    /// URL name of the App; the bot account is `<slug>[bot]`.
    #[serde(default)]
    pub slug: Option<String>,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub html_url: String,
    #[serde(default)]
    pub owner: Option<User>,
    /// What the App asks installations for (`contents` → `read`, …): what `parley doctor`
    /// holds against what Parley uses.
    #[serde(default, deserialize_with = "super::null_as_default")]
    pub permissions: std::collections::BTreeMap<String, String>,
    /// The webhook events the App subscribes to.
    #[serde(default, deserialize_with = "super::null_as_default")]
    pub events: Vec<String>,
}

/// The App's installation on a repository (`GET /repos/{owner}/{repo}/installation`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Installation {
    pub id: u64,
    /// What the installation has accepted, which lags what the App asks for until its
    /// owner accepts a new permission.
    #[serde(default, deserialize_with = "super::null_as_default")]
    pub permissions: std::collections::BTreeMap<String, String>,
    #[serde(default, deserialize_with = "super::null_as_default")]
    pub events: Vec<String>,
}

impl App {
    /// The login the App's comments are authored by, used to recognise its own comments.
    pub fn bot_login(&self) -> Option<String> {
        self.slug.as_ref().map(|slug| format!("{slug}[bot]"))
    }
}

/// Repository access levels, ordered so `level >= Permission::Write` reads as intended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Permission {
    None,
    Read,
    Triage,
    Write,
    Maintain,
    Admin,
}

impl Permission {
    /// A built-in level by name; anything else is `None`, because an access gate must
    /// fail closed on a value it does not understand.
    pub fn from_name(name: &str) -> Permission {
        match name {
            "admin" => Permission::Admin,
            "maintain" => Permission::Maintain,
            "write" => Permission::Write,
            "triage" => Permission::Triage,
            "read" => Permission::Read,
            _ => Permission::None,
        }
    }
}

impl<'de> Deserialize<'de> for Permission {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = Option::<String>::deserialize(deserializer)?;
        Ok(name.map_or(Permission::None, |name| Permission::from_name(&name)))
    }
}

/// `GET /orgs/{org}/memberships/{username}`: someone's membership of an organisation.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct OrgMembership {
    /// `active`, or `pending` for an invitation not yet accepted.
    pub state: String,
    /// `admin`, `member` or `billing_manager`.
    pub role: String,
}

impl OrgMembership {
    /// An owner of the organisation, and not only invited to be one.
    pub fn is_active_admin(&self) -> bool {
        self.state == "active" && self.role == "admin"
    }
}

/// `GET /repos/{owner}/{repo}/collaborators/{username}/permission`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct CollaboratorPermission {
    /// GitHub's legacy level: only `admin`, `write`, `read` or `none` (maintain shows as
    /// write, triage as read).
    pub permission: Permission,
    /// The finer role (`maintain`, `triage`, or a custom role's name), when GitHub sent it.
    #[serde(default)]
    pub role_name: Option<String>,
    #[serde(default)]
    pub user: Option<User>,
}

impl CollaboratorPermission {
    /// The most precise level known: `role_name` when it names a built-in role (it tells
    /// maintain from write, triage from read), the legacy `permission` otherwise. Custom
    /// roles fall back to `permission`, which GitHub maps to their base level.
    pub fn level(&self) -> Permission {
        match self.role_name.as_deref().map(Permission::from_name) {
            Some(Permission::None) | None => self.permission,
            Some(role) => role,
        }
    }
}
