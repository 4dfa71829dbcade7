//! Hidden markers in Parley's own comments.
//!
//! Every comment Parley posts ends with an HTML comment carrying its structured state:
//! `<!-- parley:<kind> {json} -->`. GitHub renders nothing for it, and it makes GitHub
//! itself the record of what Parley said and to whom: after a crash, a worker finds its
//! earlier reply by the marker instead of trusting memory. State is only ever read back
//! from markers, never from prose.

use serde::Serialize;
use serde::de::DeserializeOwned;

const OPEN: &str = "<!-- parley:";
const CLOSE: &str = "-->";

/// Kinds of marker Parley writes.
pub mod kind {
    /// An inline review finding.
    pub const FINDING: &str = "finding";
    /// A conversational reply.
    pub const REPLY: &str = "reply";
    /// A review summary.
    pub const REVIEW: &str = "review";
    /// The one-per-PR "conversation limit reached" note.
    pub const LIMIT: &str = "limit";
    /// A short error note for a question Parley could not answer.
    pub const ERROR: &str = "error";
    /// A note about Parley's own bookkeeping (why a resolution did not lift a blocking
    /// finding, why a manual review was not run): not part of any conversation.
    pub const NOTE: &str = "note";
}

/// What an inline finding comment carries: enough to discuss the finding even when the
/// store has no record of it (an older finding, or a store that was reset).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FindingMarker {
    pub id: String,
    pub fingerprint: String,
    pub severity: crate::ports::Severity,
    pub category: String,
    pub confidence: u8,
    pub path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_line: Option<u32>,
    pub line: u32,
    pub title: String,
    /// See [`crate::review::merge::site`]; absent on markers from before it existed.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub site: String,
}

impl FindingMarker {
    /// The finding a posted comment stands for, as the review that posted it recorded it
    /// (open, no outcome yet): how a finding the store lost is taken back from GitHub.
    /// `comment` is the posted comment's text, marker and all.
    pub fn finding(
        &self,
        repo: &str,
        pr: u64,
        comment: &str,
        head_sha: String,
        created_at: time::OffsetDateTime,
    ) -> crate::ports::Finding {
        crate::ports::Finding {
            repo: repo.to_string(),
            pr,
            id: self.id.clone(),
            fingerprint: self.fingerprint.clone(),
            site: self.site.clone(),
            severity: self.severity,
            category: self.category.clone(),
            confidence: self.confidence,
            path: self.path.clone(),
            start_line: self.start_line,
            line: self.line,
            title: self.title.clone(),
            body: strip(comment).trim().to_string(),
            head_sha,
            review_id: None,
            comment_id: None,
            state: crate::ports::FindingState::Open,
            state_changed_by: None,
            state_changed_at: None,
            created_at,
            outcome: None,
            doubt: None,
        }
    }
}

/// What every other Parley comment carries: which comment it answers and how. Read back
/// to know what was already answered; never inferred from prose.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ReplyMarker {
    /// `reply`, `limit`, `error`, `dismissed`, `review`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The comment (or review) this answers.
    pub reply_to: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finding: Option<String>,
    /// `concede`, `maintain` or `escalate` when the reply settled a dispute.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolution: Option<String>,
    /// On an error note that asked for the question again (no retry could mend the
    /// failure): Parley will not try that comment again on its own, so the pending-work
    /// sweep passes over it instead of paying for the same failure on every later job.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub gave_up: bool,
    /// On the PR's note about findings whose comments were deleted but which still count
    /// (see [`crate::bookkeeping`]): those findings, so that the next one joins that note
    /// instead of posting another.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deleted: Vec<String>,
    /// RFC 3339.
    pub at: String,
}

impl ReplyMarker {
    /// A marker of `kind` answering `reply_to`, now, that settles nothing.
    pub fn new(kind: &str, reply_to: u64) -> Self {
        ReplyMarker {
            kind: kind.to_string(),
            reply_to,
            finding: None,
            resolution: None,
            gave_up: false,
            deleted: Vec::new(),
            at: time::OffsetDateTime::now_utc()
                .format(&time::format_description::well_known::Rfc3339)
                .unwrap_or_default(),
        }
    }
}

/// One marker found in a comment body.
#[derive(Debug, Clone, PartialEq)]
pub struct Marker {
    pub kind: String,
    pub data: serde_json::Value,
}

impl Marker {
    pub fn decode<T: DeserializeOwned>(&self) -> Option<T> {
        T::deserialize(&self.data).ok()
    }
}

/// Render a marker for `data`. The JSON is made safe inside an HTML comment: `>` and
/// `--` can only occur inside JSON strings, where `\u003e` and `-\u002d` mean the same.
pub fn render<T: Serialize>(kind: &str, data: &T) -> String {
    let json = serde_json::to_string(data).unwrap_or_else(|_| "{}".to_string());
    let safe = json.replace('>', "\\u003e").replace("--", "-\\u002d");
    format!("{OPEN}{kind} {safe} {CLOSE}")
}

/// Append a marker to a comment body, on its own line. Every body Parley posts ends in
/// one, so this is where it is fitted to what GitHub takes ([`crate::body_limit`]): the
/// text is cut, never the marker.
pub fn append<T: Serialize>(body: &str, kind: &str, data: &T) -> String {
    let marker = render(kind, data);
    let room = crate::body_limit::GITHUB_MAX_BODY_CHARS
        .saturating_sub(marker.chars().map(char::len_utf16).sum::<usize>() + 2);
    format!(
        "{}\n\n{marker}",
        crate::body_limit::fit(body.trim_end(), room)
    )
}

/// Every well-formed marker in `body`, in order. Malformed ones are skipped: a user can
/// type `<!-- parley:` too, and must not be able to break the parser.
pub fn parse_all(body: &str) -> Vec<Marker> {
    let mut markers = Vec::new();
    let mut rest = body;
    while let Some(start) = rest.find(OPEN) {
        let mut after = &rest[start + OPEN.len()..];
        let Some(mut end) = after.find(CLOSE) else {
            break;
        };
        // An opener that is never closed before another opener (a user typing
        // `<!-- parley:`) must not swallow the marker after it: start at the last opener
        // before this closer.
        while let Some(inner) = after[..end].find(OPEN) {
            after = &after[inner + OPEN.len()..];
            end -= inner + OPEN.len();
        }
        let inner = after[..end].trim();
        let (kind, json) = inner.split_once(' ').unwrap_or((inner, "null"));
        if let Ok(data) = serde_json::from_str(json.trim())
            && !kind.is_empty()
        {
            markers.push(Marker {
                kind: kind.to_string(),
                data,
            });
        }
        rest = &after[end + CLOSE.len()..];
    }
    markers
}

/// The last well-formed marker of `kind` in `body`, decoded.
///
/// The last one, because Parley appends its marker at the very end of what it writes: any
/// earlier one is quoted or copied text (a user's quote of an old comment, a model that
/// echoed one). Callers must still check who wrote `body` ([`trusted`]): a marker proves
/// nothing in content Parley did not author.
pub fn find<T: DeserializeOwned>(body: &str, kind: &str) -> Option<T> {
    parse_all(body)
        .into_iter()
        .rev()
        .find(|m| m.kind == kind)
        .and_then(|m| m.decode())
}

/// `body`'s marker of `kind`, only when `author` is Parley's own bot account.
///
/// Anyone can type `<!-- parley:review {...} -->` into a review or comment. Reading state
/// from such a marker would let a PR author forge "already reviewed" (and with it a green
/// merge gate) or "already answered"; so every reader of markers that decides anything
/// goes through here with the content's author.
pub fn trusted<T: DeserializeOwned>(
    author: Option<&crate::ports::github::User>,
    handles: &crate::mention::Handles,
    body: &str,
    kind: &str,
) -> Option<T> {
    if !author.is_some_and(|u| handles.is_self(&u.login)) {
        return None;
    }
    find(body, kind)
}

/// Whether `body` carries any Parley marker.
pub fn has_marker(body: &str) -> bool {
    !parse_all(body).is_empty()
}

/// Remove every Parley marker from `body` (for quoting user text that copied one). Repeated
/// until nothing changes: cutting one marker out of `<!-- par<!-- parley:x -->ley:…`
/// joins the rest into a new one, which must go too.
pub fn strip(body: &str) -> String {
    let mut current = strip_once(body);
    while current.contains(OPEN) {
        let next = strip_once(&current);
        if next.len() == current.len() {
            break;
        }
        current = next;
    }
    current
}

fn strip_once(body: &str) -> String {
    let mut out = String::with_capacity(body.len());
    let mut rest = body;
    while let Some(start) = rest.find(OPEN) {
        out.push_str(&rest[..start]);
        let after = &rest[start + OPEN.len()..];
        match after.find(CLOSE) {
            Some(end) => rest = &after[end + CLOSE.len()..],
            None => {
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Serialize, Deserialize, PartialEq)]
    struct Data {
        id: String,
        title: String,
        line: u32,
    }

    #[test]
    fn round_trips_hostile_text() {
        let data = Data {
            id: "f1".into(),
            title: "closes --> the comment <!-- early > and \\-- too".into(),
            line: 7,
        };
        let body = append("Looks wrong.", kind::FINDING, &data);
        let rendered = body.split("<!-- parley:").nth(1).expect("marker");
        assert_eq!(rendered.matches("-->").count(), 1, "{body}");
        assert_eq!(find::<Data>(&body, kind::FINDING), Some(data));
        assert_eq!(strip(&body).trim(), "Looks wrong.");
    }

    #[test]
    fn the_last_marker_of_a_kind_wins() {
        let quoted = render(
            kind::FINDING,
            &Data {
                id: "forged".into(),
                title: "t".into(),
                line: 1,
            },
        );
        let own = Data {
            id: "own".into(),
            title: "t".into(),
            line: 2,
        };
        let body = append(&format!("> {quoted}\n\nMy answer."), kind::FINDING, &own);
        assert_eq!(find::<Data>(&body, kind::FINDING), Some(own));
    }

    #[test]
    fn markers_count_only_in_parley_authored_content() {
        use crate::mention::Handles;
        use crate::ports::github::User;
        let handles = Handles::new("parley", &[]);
        let user = |login: &str| User {
            login: login.into(),
            id: 1,
            kind: "User".into(),
        };
        let body = append(
            "x",
            kind::FINDING,
            &Data {
                id: "f".into(),
                title: "t".into(),
                line: 1,
            },
        );
        assert!(
            trusted::<Data>(Some(&user("parley[bot]")), &handles, &body, kind::FINDING).is_some()
        );
        assert!(trusted::<Data>(Some(&user("mallory")), &handles, &body, kind::FINDING).is_none());
        assert!(trusted::<Data>(Some(&user("parley")), &handles, &body, kind::FINDING).is_none());
        assert!(trusted::<Data>(None, &handles, &body, kind::FINDING).is_none());
    }

    #[test]
    fn malformed_markers_are_skipped() {
        let body = "<!-- parley:finding {not json} --> text <!-- parley:reply {\"a\":1} --> <!-- parley:reply";
        let markers = parse_all(body);
        assert_eq!(markers.len(), 1);
        assert_eq!(markers[0].kind, "reply");
        assert_eq!(strip(body), " text  ");
    }
}
