//! Which providers and models cache a prompt prefix, and from what length.
//!
//! A review sends the same long prefix (system prompt, the PR's context and diff) to five
//! passes and the judge; a provider that caches bills it once at a premium and then at a
//! tenth. A cache marker below a model's minimum is ignored by the provider (no error,
//! no cache), so none is sent there: what Parley reports as cached is what was.
//!
//! The figures are the providers' documented minimums per cache checkpoint, as of
//! 2026-11 (Anthropic's prompt-caching page; Amazon Bedrock's "Prompt caching for faster
//! model inference", supported models and token minimums). A model not listed for Bedrock
//! gets no `cachePoint`: Bedrock rejects one on a model without caching.

use parley_core::llm::normalise_model_id;

/// Anthropic: every current Claude model caches; the minimum depends on the model.
pub fn anthropic_min_tokens(model: &str) -> usize {
    let id = normalise_model_id(model);
    let has = |part: &str| id.contains(part);
    if has("opus-4-5") || has("opus-4-6") || has("haiku-4-5") {
        4096
    } else if has("sonnet-4-6") || has("3-5-haiku") || has("3-haiku") {
        2048
    } else {
        1024
    }
}

/// Bedrock Converse: the models with prompt caching (`None` for the others).
pub fn bedrock_min_tokens(model: &str) -> Option<usize> {
    let id = normalise_model_id(model);
    let claude = [
        ("claude-3-7-sonnet", 1024),
        ("claude-3-5-haiku", 2048),
        ("claude-sonnet-4", 1024),
        ("claude-opus-4-5", 4096),
        ("claude-opus-4-6", 4096),
        ("claude-opus-4", 1024),
        ("claude-haiku-4-5", 4096),
    ];
    let nova = [
        ("nova-micro", 1000),
        ("nova-lite", 1000),
        ("nova-pro", 1000),
        ("nova-premier", 1000),
    ];
    claude
        .iter()
        .chain(nova.iter())
        .find(|(prefix, _)| id.starts_with(prefix))
        .map(|(_, min)| *min)
        .map(|min| {
            // Sonnet 4.6 needs more than Sonnet 4 / 4.5, which share the prefix above.
            if id.starts_with("claude-sonnet-4-6") {
                2048
            } else {
                min
            }
        })
}

/// OpenAI caches prefixes of 1,024 tokens and more on its own.
pub const OPENAI_MIN_TOKENS: usize = 1024;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minimums_follow_the_model() {
        assert_eq!(anthropic_min_tokens("claude-sonnet-4-5"), 1024);
        assert_eq!(anthropic_min_tokens("claude-haiku-4-5-20251001"), 4096);
        assert_eq!(anthropic_min_tokens("claude-opus-4-5"), 4096);
        assert_eq!(anthropic_min_tokens("claude-3-5-haiku-latest"), 2048);
        assert_eq!(
            bedrock_min_tokens("us.anthropic.claude-sonnet-4-5-20250929-v1:0"),
            Some(1024)
        );
        assert_eq!(
            bedrock_min_tokens("global.anthropic.claude-haiku-4-5-20251001-v1:0"),
            Some(4096)
        );
        assert_eq!(bedrock_min_tokens("amazon.nova-pro-v1:0"), Some(1000));
        assert_eq!(bedrock_min_tokens("meta.llama3-70b-instruct-v1:0"), None);
        assert_eq!(
            bedrock_min_tokens("anthropic.claude-3-haiku-20240307-v1:0"),
            None
        );
    }
}
