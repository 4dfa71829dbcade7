//! What a server's error says: its kind and message, and whether a refusal is about the
//! reply format or the tools (then a weaker mode, or no tools, is worth a try) rather
//! than about the prompt.

use crate::http::{self, ErrorInfo, RawResponse};
use parley_core::ports::llm::LlmError;
use serde::Deserialize;

pub(super) fn error_info(response: &RawResponse) -> ErrorInfo {
    #[derive(Deserialize)]
    struct Envelope {
        error: Detail,
    }
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Detail {
        Object {
            #[serde(default)]
            message: String,
            #[serde(rename = "type", default)]
            kind: Option<String>,
            /// A string on OpenAI, a number on some compatible servers.
            #[serde(default)]
            code: Option<serde_json::Value>,
        },
        /// Some servers (older Ollama) send `{"error": "message"}`.
        Text(String),
    }
    match serde_json::from_slice::<Envelope>(&response.body) {
        Ok(Envelope {
            error:
                Detail::Object {
                    message,
                    kind,
                    code,
                },
        }) => {
            let code = match code {
                Some(serde_json::Value::String(code)) => Some(code),
                _ => None,
            };
            ErrorInfo {
                // The code is the more specific of the two (`insufficient_quota` comes with
                // type `insufficient_quota`, `model_not_found` with `invalid_request_error`).
                kind: code.or(kind).unwrap_or_default(),
                message: http::truncate(&message),
            }
        }
        Ok(Envelope {
            error: Detail::Text(message),
        }) => ErrorInfo {
            kind: String::new(),
            message: http::truncate(&message),
        },
        Err(_) => ErrorInfo::from_raw(&response.body),
    }
}

/// Whether a refusal is about `response_format` (an unsupported mode), not about the
/// prompt: only then is a weaker mode worth trying. A 400-class refusal may say so in
/// loose words; a 5xx must name the field, as llama-cpp-python's server does (it answers
/// its own request-validation error with a 500), so that an ordinary server error is
/// still retried.
pub(super) fn refuses_format(err: &LlmError) -> bool {
    let (message, hints): (&str, &[&str]) = match err {
        LlmError::InvalidRequest(message) => (message, &LOOSE_HINTS),
        LlmError::Server { status, message } if (400..500).contains(status) => {
            (message, &LOOSE_HINTS)
        }
        LlmError::Server { message, .. } => (message, &NAMED_HINTS),
        _ => return false,
    };
    let message = message.to_ascii_lowercase();
    hints.iter().any(|hint| message.contains(hint))
}

/// Whether a refusal is about the tool definitions: a 4xx (or llama.cpp's 500 without
/// `--jinja`) that names tools. Only asked of requests that carried tools.
pub(super) fn refuses_tools(err: &LlmError) -> bool {
    let message = match err {
        LlmError::InvalidRequest(message) => message,
        LlmError::Server { message, .. } => message,
        _ => return false,
    };
    let message = message.to_ascii_lowercase();
    ["tool", "function call", "--jinja"]
        .iter()
        .any(|hint| message.contains(hint))
}

const NAMED_HINTS: [&str; 3] = ["response_format", "json_schema", "json_object"];
const LOOSE_HINTS: [&str; 5] = [
    "response_format",
    "json_schema",
    "json_object",
    "response format",
    "schema",
];
