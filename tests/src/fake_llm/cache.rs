//! The providers' prompt caches as the fake emulates them (Anthropic's marked prefixes,
//! OpenAI's automatic prefix reuse), the usage each answer reports, and the count of
//! requests in flight.

use super::state::{CACHE_MIN_TOKENS, Reply, State};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// OpenAI's `usage` for a reply to a request of `request_bytes`, about four bytes a token.
pub(super) fn openai_usage(request_bytes: usize, reply: &Reply, cache: Cache) -> Value {
    let input_tokens = (request_bytes / 4) as u64;
    let output_tokens = match reply {
        Reply::Text(text) => (text.len() / 4) as u64 + 1,
        _ => 0,
    };
    let mut usage = json!({ "prompt_tokens": input_tokens, "completion_tokens": output_tokens });
    if let Cache::Read(cached) = cache {
        usage["prompt_tokens_details"] = json!({ "cached_tokens": cached.min(input_tokens) });
    }
    usage
}

/// How a request's prompt met the cache.
#[derive(Debug, Clone, Copy)]
pub(super) enum Cache {
    None,
    Read(u64),
    Written(u64),
}

/// Counts a request in flight while it is alive (dropped when answered or abandoned).
pub(super) struct InFlight(Arc<Mutex<State>>);

impl InFlight {
    pub(super) fn enter(state: Arc<Mutex<State>>) -> Self {
        {
            let mut s = state.lock().unwrap_or_else(|e| e.into_inner());
            s.in_flight += 1;
            s.most_in_flight = s.most_in_flight.max(s.in_flight);
        }
        InFlight(state)
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let mut s = self.0.lock().unwrap_or_else(|e| e.into_inner());
        s.in_flight = s.in_flight.saturating_sub(1);
    }
}

/// Anthropic's accounting: the prompt up to the last block carrying `cache_control`
/// (system blocks, then message blocks, in order) is the cached prefix, when it is at
/// least the model's minimum. Read if an earlier answer with it has begun; written
/// otherwise, readable from `begins`.
pub(super) fn anthropic_cache(s: &mut State, request: &Value, begins: Instant) -> Cache {
    let mut text = String::new();
    let mut prefix: Option<usize> = None;
    let mut add = |content: &Value, text: &mut String| match content {
        Value::String(t) => text.push_str(t),
        Value::Array(blocks) => {
            for block in blocks {
                text.push_str(block["text"].as_str().unwrap_or_default());
                if block.get("cache_control").is_some() {
                    prefix = Some(text.len());
                }
            }
        }
        _ => {}
    };
    // Anthropic's cache covers the tool definitions first, then the system prompt and the
    // messages: a request offering other tools (or none) shares no prefix with this one.
    if let Some(tools) = request.get("tools").filter(|t| !t.is_null()) {
        text.push_str(&tools.to_string());
    }
    add(&request["system"], &mut text);
    for message in request["messages"].as_array().into_iter().flatten() {
        add(&message["content"], &mut text);
    }
    let Some(end) = prefix else {
        return Cache::None;
    };
    let tokens = end / 4;
    if tokens < CACHE_MIN_TOKENS {
        return Cache::None;
    }
    use std::collections::hash_map::Entry;
    match s.cached_prefixes.entry(text[..end].to_string()) {
        Entry::Occupied(ready) if *ready.get() <= Instant::now() => Cache::Read(tokens as u64),
        Entry::Occupied(mut ready) => {
            let sooner = (*ready.get()).min(begins);
            ready.insert(sooner);
            Cache::Written(tokens as u64)
        }
        Entry::Vacant(entry) => {
            entry.insert(begins);
            Cache::Written(tokens as u64)
        }
    }
}

/// OpenAI's automatic caching, when emulated: the longest prefix shared with an earlier
/// prompt whose answer has begun, in whole 128-token blocks, from 1,024 tokens.
pub(super) fn openai_cached_tokens(s: &mut State, text: &str, begins: Instant) -> Cache {
    let Some(seen) = s.openai_cache.as_mut() else {
        return Cache::None;
    };
    let now = Instant::now();
    let shared = seen
        .iter()
        .filter(|(_, ready)| *ready <= now)
        .map(|(earlier, _)| {
            earlier
                .bytes()
                .zip(text.bytes())
                .take_while(|(a, b)| a == b)
                .count()
        })
        .max()
        .unwrap_or(0);
    seen.push((text.to_string(), begins));
    let tokens = (shared / 4) / 128 * 128;
    if tokens >= 1024 {
        Cache::Read(tokens as u64)
    } else {
        Cache::None
    }
}

/// Anthropic's `usage` for a reply of `text` to a request of `request_bytes`, about four
/// bytes a token: input after the cached prefix, and the prefix as read or written.
pub(super) fn anthropic_usage(request_bytes: usize, text: &str, cache: Cache) -> Value {
    let all_input = (request_bytes / 4) as u64;
    let (read, write) = match cache {
        Cache::Read(tokens) => (tokens, 0),
        Cache::Written(tokens) => (0, tokens),
        Cache::None => (0, 0),
    };
    json!({
        "input_tokens": all_input.saturating_sub(read + write),
        "output_tokens": (text.len() / 4) as u64 + 1,
        "cache_creation_input_tokens": write,
        "cache_read_input_tokens": read
    })
}
