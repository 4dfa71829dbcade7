//! The GitHub ids the fakes give a repository and an owner, so that webhook payloads, the
//! fake's pull requests and the store keys a test reads all agree (the store keys records
//! by id: see `parley_core::tenancy`).

/// A stable id for a name (FNV-1a, lower-cased as GitHub compares names), never 0.
const fn id_of(name: &str) -> u64 {
    let bytes = name.as_bytes();
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut i = 0;
    while i < bytes.len() {
        hash ^= bytes[i].to_ascii_lowercase() as u64;
        hash = hash.wrapping_mul(0x0100_0000_01b3);
        i += 1;
    }
    hash % 1_000_000_000 + 1
}

/// The id the fakes give repository `owner/name`.
pub const fn repo_id(full_name: &str) -> u64 {
    id_of(full_name)
}

/// The id the fakes give account `login`.
pub const fn owner_id(login: &str) -> u64 {
    id_of(login) + 1_000_000_000
}

/// The store key of repository `owner/name` (its findings, runs, counters, memory,
/// corpora).
pub fn key(full_name: &str) -> String {
    let (owner, name) = full_name.split_once('/').unwrap_or(("", full_name));
    parley_core::tenancy::Tenant::of(repo_id(full_name), owner_id(owner), owner, name).repo
}

/// The memory partition of organisation `login`'s learnings.
pub fn org(login: &str) -> String {
    parley_core::tenancy::Tenant::of(0, owner_id(login), login, "").org
}

/// Give a webhook payload's repository (and its owner) the fakes' ids.
pub fn stamp(payload: &mut serde_json::Value) {
    let Some(full_name) = payload["repository"]["full_name"]
        .as_str()
        .map(str::to_owned)
    else {
        return;
    };
    let owner = full_name.split_once('/').map_or("", |(o, _)| o).to_owned();
    payload["repository"]["id"] = repo_id(&full_name).into();
    payload["repository"]["owner"]["id"] = owner_id(&owner).into();
}
