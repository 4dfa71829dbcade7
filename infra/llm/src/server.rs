//! What a self-hosted OpenAI-compatible server says about itself.
//!
//! The llama.cpp server answers `GET /props` with `total_slots`: how many requests it
//! serves at once (`--parallel`). Knowing it, Parley sends that many and queues the rest
//! itself, where no timeout runs yet; guessing, a single-slot server leaves all but one
//! call waiting in its own queue until they time out. `/slots` (one entry per slot) is
//! the fallback for servers built without `/props`. Anything else (Ollama, vLLM, a proxy)
//! answers neither, and the caller adapts instead ([`crate::limit`]).

use serde::Deserialize;
use std::time::Duration;

/// A probe is one short request at start-up; a server that does not answer in this
/// time is treated as one that does not know.
const PROBE_TIMEOUT: Duration = Duration::from_secs(3);

/// A llama.cpp server, as it described itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LocalServer {
    pub slots: usize,
}

/// Ask the server at `base_url` (the API root with its version path, `…/v1`) how many
/// requests it serves at once. `None` when it does not say.
pub async fn probe(base_url: &str) -> Option<LocalServer> {
    let root = base_url.trim_end_matches('/');
    let root = root.strip_suffix("/v1").unwrap_or(root);
    let client = crate::http::client_builder()
        .timeout(PROBE_TIMEOUT)
        .build()
        .ok()?;
    #[derive(Deserialize)]
    struct Props {
        total_slots: Option<usize>,
    }
    if let Some(slots) = get::<Props>(&client, &format!("{root}/props"))
        .await
        .and_then(|props| props.total_slots)
        .filter(|n| *n > 0)
    {
        return Some(LocalServer { slots });
    }
    get::<Vec<serde_json::Value>>(&client, &format!("{root}/slots"))
        .await
        .map(|slots| slots.len())
        .filter(|n| *n > 0)
        .map(|slots| LocalServer { slots })
}

async fn get<T: serde::de::DeserializeOwned>(client: &reqwest::Client, url: &str) -> Option<T> {
    let response = client.get(url).send().await.ok()?;
    if !response.status().is_success() {
        return None;
    }
    response.json::<T>().await.ok()
}
