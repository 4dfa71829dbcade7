//! Files read at a ref, and the refs themselves.

/// A file read at a ref, already base64-decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileContent {
    pub path: String,
    /// Blob SHA: a cheap cache key for parsed config or guidelines.
    pub sha: String,
    pub bytes: Vec<u8>,
}

impl FileContent {
    /// The content as text, or `None` when it is not UTF-8 (a binary file under a
    /// guideline's name should be skipped, not fed to a prompt as mojibake).
    pub fn text(&self) -> Option<&str> {
        std::str::from_utf8(&self.bytes).ok()
    }
}

/// A branch or tag and the commit it points at (`GET /repos/{o}/{r}/git/matching-refs/…`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
pub struct Reference {
    /// The full name, `refs/heads/…`.
    #[serde(rename = "ref")]
    pub name: String,
    pub object: ReferenceTarget,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
pub struct ReferenceTarget {
    pub sha: String,
}
