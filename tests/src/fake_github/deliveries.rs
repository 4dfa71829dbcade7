//! The App's webhook deliveries (`/app/hook/deliveries`): attempts a test records, listed
//! newest first by an opaque cursor as GitHub pages them, and redeliveries Parley asks for.

use super::shapes::example;
use super::state::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// An attempt to deliver event `guid` `minutes_ago`, answered `status_code` (0: no
/// answer), shaped as GitHub's documented listing item.
pub(super) fn attempt(
    id: u64,
    guid: &str,
    event: &str,
    status_code: u32,
    minutes_ago: i64,
) -> Value {
    let mut item = example("apps__list-webhook-deliveries.200.default.json")[0].clone();
    let at = time::OffsetDateTime::now_utc() - time::Duration::minutes(minutes_ago);
    item["id"] = id.into();
    item["guid"] = guid.into();
    item["event"] = event.into();
    item["delivered_at"] = at
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
        .into();
    item["status_code"] = status_code.into();
    item["status"] = match status_code {
        0 => "timed out".to_string(),
        200..=299 => "OK".to_string(),
        code => format!("Invalid HTTP Response: {code}"),
    }
    .into();
    item["redelivery"] = false.into();
    item
}

/// `GET /app/hook/deliveries`: newest first, `per_page` from the cursor (`c<index>`).
pub(super) fn list(s: &State, per_page: usize, cursor: Option<&str>) -> Response {
    let start: usize = cursor
        .and_then(|c| c.strip_prefix('c').and_then(|n| n.parse().ok()))
        .unwrap_or(0);
    let mut all = s.deliveries.clone();
    all.sort_by(|a, b| {
        (b["delivered_at"].as_str(), b["id"].as_u64())
            .cmp(&(a["delivered_at"].as_str(), a["id"].as_u64()))
    });
    let page: Vec<Value> = all.iter().skip(start).take(per_page).cloned().collect();
    let mut response = (StatusCode::OK, axum::Json(Value::Array(page))).into_response();
    if start + per_page < all.len() {
        let link = format!(
            "<{}/app/hook/deliveries?per_page={per_page}&cursor=c{}>; rel=\"next\"",
            s.base_url,
            start + per_page
        );
        if let Ok(value) = link.parse() {
            response.headers_mut().insert("link", value);
        }
    }
    response
}

/// `POST /app/hook/deliveries/{id}/attempts`: 202, and a new attempt for the same event
/// answered as the test chose (taken, unless redeliveries are set to fail).
pub(super) fn redeliver(s: &mut State, id: &str) -> Response {
    let Some(original) = s
        .deliveries
        .iter()
        .find(|d| d["id"].as_u64().map(|i| i.to_string()).as_deref() == Some(id))
        .cloned()
    else {
        return (
            StatusCode::NOT_FOUND,
            axum::Json(json!({ "message": "Not Found", "status": "404" })),
        )
            .into_response();
    };
    s.redelivery_requests
        .push(original["id"].as_u64().unwrap_or_default());
    let next = s.next_id();
    let guid = original["guid"].as_str().unwrap_or_default().to_string();
    let event = original["event"].as_str().unwrap_or_default().to_string();
    let mut again = attempt(
        next,
        &guid,
        &event,
        s.redelivery_status,
        -s.redelivery_clock_minutes,
    );
    again["redelivery"] = true.into();
    s.deliveries.push(again);
    (StatusCode::ACCEPTED, axum::Json(json!({}))).into_response()
}
