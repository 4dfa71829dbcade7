//! API Gateway HTTP API events (payload format 2.0), written out as AWS documents them
//! rather than built with the types `lambda_http` itself parses them with, so the
//! webhook function is checked against the documented shape.

use base64::Engine;
use serde_json::{Value, json};

/// The event API Gateway sends the function for one request on the `$default` stage.
/// Header names arrive lower-cased; a body that is not UTF-8 arrives base64-encoded.
pub fn http_api_request(method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Value {
    let headers: serde_json::Map<String, Value> = headers
        .iter()
        .map(|(name, value)| (name.to_ascii_lowercase(), Value::String(value.to_string())))
        .collect();
    let (body, is_base64) = match std::str::from_utf8(body) {
        Ok(text) => (text.to_string(), false),
        Err(_) => (base64::engine::general_purpose::STANDARD.encode(body), true),
    };
    let now = time::OffsetDateTime::now_utc();
    let request_id = uuid::Uuid::new_v4().to_string();
    json!({
        "version": "2.0",
        "routeKey": format!("{method} {path}"),
        "rawPath": path,
        "rawQueryString": "",
        "headers": headers,
        "requestContext": {
            "accountId": "123456789012",
            "apiId": "e2eapi",
            "domainName": "e2eapi.execute-api.us-east-1.amazonaws.com",
            "domainPrefix": "e2eapi",
            "http": {
                "method": method,
                "path": path,
                "protocol": "HTTP/1.1",
                "sourceIp": "192.30.252.1",
                "userAgent": "GitHub-Hookshot/e2e"
            },
            "requestId": request_id,
            "routeKey": format!("{method} {path}"),
            "stage": "$default",
            "time": now.format(&time::format_description::well_known::Rfc2822).unwrap_or_default(),
            "timeEpoch": (now.unix_timestamp_nanos() / 1_000_000) as i64
        },
        "body": body,
        "isBase64Encoded": is_base64
    })
}

/// The status code and body of the function's response document, which API Gateway
/// turns into the HTTP response.
pub fn status_and_body(response: &Value) -> (u16, String) {
    let status = response["statusCode"].as_u64().unwrap_or(0) as u16;
    let raw = response["body"].as_str().unwrap_or("").to_string();
    let body = if response["isBase64Encoded"].as_bool() == Some(true) {
        base64::engine::general_purpose::STANDARD
            .decode(raw.as_bytes())
            .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
            .unwrap_or(raw)
    } else {
        raw
    };
    (status, body)
}
