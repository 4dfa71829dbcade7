//! The JSON the fake serves, built from GitHub's documented examples with the fields a
//! test cares about overwritten, and the test data it is given (patches, tarballs).

use serde_json::{Value, json};

/// The body of a documented example from the REST corpus (the shared one, or this
/// repository's `tests/corpora` for the operations it adds).
pub fn example(file: &str) -> Value {
    let shared = crate::corpora().join("github-rest").join(file);
    let path = if shared.exists() {
        shared
    } else {
        std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("corpora/github-rest")
            .join(file)
    };
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let doc: Value = serde_json::from_slice(&bytes).expect("example json");
    doc["body"].clone()
}

/// Set a comment's timestamps.
pub(super) fn backdate(comment: &mut Value, when: time::OffsetDateTime) {
    let text = when
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default();
    comment["created_at"] = text.clone().into();
    comment["updated_at"] = text.into();
}

pub(super) fn now() -> String {
    time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

pub(super) fn user_json(login: &str) -> Value {
    let kind = if login.ends_with("[bot]") {
        "Bot"
    } else {
        "User"
    };
    json!({ "login": login, "id": 1, "type": kind, "site_admin": false })
}

#[allow(clippy::too_many_arguments)]
pub(super) fn review_comment_json(
    id: u64,
    repo: &str,
    pr: u64,
    author: &str,
    body: &str,
    in_reply_to: Option<u64>,
    path: &str,
    line: u64,
) -> Value {
    let mut c = example("pulls__get-review-comment.200.default.json");
    c["id"] = id.into();
    c["node_id"] = format!("PRRC_{id}").into();
    c["body"] = body.into();
    c["user"] = user_json(author);
    c["path"] = path.into();
    c["line"] = line.into();
    c["original_line"] = line.into();
    // One line: GitHub gives a range's start only for a comment on several.
    c["start_line"] = Value::Null;
    c["original_start_line"] = Value::Null;
    c["side"] = "RIGHT".into();
    c["created_at"] = now().into();
    c["updated_at"] = now().into();
    c["html_url"] = format!("https://github.com/{repo}/pull/{pr}#discussion_r{id}").into();
    c["pull_request_url"] = format!("https://api.github.com/repos/{repo}/pulls/{pr}").into();
    match in_reply_to {
        Some(parent) => c["in_reply_to_id"] = parent.into(),
        None => {
            if let Some(map) = c.as_object_mut() {
                map.remove("in_reply_to_id");
            }
        }
    }
    c
}

pub(super) fn issue_comment_json(
    id: u64,
    repo: &str,
    number: u64,
    author: &str,
    body: &str,
) -> Value {
    let mut c = example("issues__get-comment.200.default.json");
    c["id"] = id.into();
    c["body"] = body.into();
    c["user"] = user_json(author);
    c["created_at"] = now().into();
    c["updated_at"] = now().into();
    c["html_url"] = format!("https://github.com/{repo}/pull/{number}#issuecomment-{id}").into();
    c["issue_url"] = format!("https://api.github.com/repos/{repo}/issues/{number}").into();
    c
}

pub(super) fn merge(target: &mut Value, patch: &Value) {
    if let (Some(target), Some(patch)) = (target.as_object_mut(), patch.as_object()) {
        for (k, v) in patch {
            target.insert(k.clone(), v.clone());
        }
    }
}

/// Line numbers on the right side of a unified-diff patch (added and context lines): the
/// lines GitHub accepts inline comments on.
pub fn right_side_lines(patch: &str) -> Vec<u64> {
    let mut lines = Vec::new();
    let mut current = 0u64;
    for line in patch.lines() {
        if let Some(header) = line.strip_prefix("@@") {
            // @@ -a,b +c,d @@
            current = header
                .split_whitespace()
                .find_map(|part| part.strip_prefix('+'))
                .and_then(|spec| spec.split(',').next())
                .and_then(|start| start.parse().ok())
                .unwrap_or(0);
            continue;
        }
        if line.starts_with('-') {
            continue;
        }
        if line.starts_with('+') || line.starts_with(' ') || line.is_empty() {
            lines.push(current);
            current += 1;
        }
    }
    lines
}

/// A gzipped tarball as GitHub builds one: `files` under `octo-repo-<sha>/`.
pub fn tarball(files: &[(&str, &str)]) -> Vec<u8> {
    let mut builder = tar::Builder::new(flate2::write::GzEncoder::new(
        Vec::new(),
        flate2::Compression::fast(),
    ));
    for (path, text) in files {
        let mut header = tar::Header::new_gnu();
        header.set_size(text.len() as u64);
        header.set_mode(0o644);
        header.set_entry_type(tar::EntryType::Regular);
        // The name written raw: the builder's own checks would refuse a hostile one
        // (`..`), which is what some tests serve.
        let name = format!("octo-repo-abc/{path}");
        header.as_old_mut().name[..name.len()].copy_from_slice(name.as_bytes());
        header.set_cksum();
        builder.append(&header, text.as_bytes()).expect("append");
    }
    builder
        .into_inner()
        .and_then(|gz| gz.finish())
        .expect("tarball")
}
