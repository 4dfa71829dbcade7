//! Five review passes against a real self-hosted server (llama.cpp), in the old layout
//! (each pass's focus first, in its system prompt: no two requests share a prefix) and in
//! the one Parley sends (one system prompt, the shared message, the focus last, with
//! `cache_prompt`), one after another as a one-slot server serves them. Prints the wall
//! time of each and their ratio.
//!
//! Needs a running server: `LLM_BASE_URL=http://127.0.0.1:8080/v1 LLM_MODEL=… cargo bench
//! -p parley-llm --bench local_prefix` (the README says how the figure was made).

use parley_core::ports::llm::{Llm, LlmRequest, Message};
use parley_core::review::prompts;
use parley_llm::{OpenAiLlm, RetryPolicy};
use std::time::{Duration, Instant};

fn main() {
    let base = std::env::var("LLM_BASE_URL").unwrap_or_else(|_| "http://127.0.0.1:8080/v1".into());
    let model = std::env::var("LLM_MODEL").unwrap_or_else(|_| "smollm2".into());
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        let llm = |cache_prompt: bool| {
            OpenAiLlm::new(
                &base,
                None,
                model.clone(),
                Duration::from_secs(600),
                RetryPolicy::default(),
            )
            .expect("client")
            .with_cache_prompt(cache_prompt)
        };
        // A small PR's shared part: about 1,500 tokens of diff.
        let mut shared = String::from(
            "Repository: octo-org/hello\nPull request title: Add a cache\n\nThe diff:\n",
        );
        for i in 0..120 {
            shared.push_str(&format!(
                "{:>5} +    let value_{i} = lookup(&table, \"key-{i}\").unwrap_or_default();\n",
                i + 1
            ));
        }
        let passes = [
            &prompts::SECURITY,
            &prompts::CORRECTNESS,
            &prompts::TESTS,
            &prompts::STYLE,
            &prompts::GUIDELINES,
        ];
        let request = |system: String, user: Message| {
            let mut r = LlmRequest::new(system, vec![user]);
            r.options.max_tokens = 64;
            r.options.temperature = Some(0.0);
            r
        };
        // Warm the server once (model load), then measure.
        let warm = llm(false);
        let _ = warm
            .complete(&request("hi".into(), Message::user("hi")))
            .await;

        let old = llm(false);
        let started = Instant::now();
        for pass in passes {
            let r = request(
                format!("{}\n\n{}", pass.focus, prompts::system()),
                Message::user(shared.clone()),
            );
            old.complete(&r).await.expect("old layout");
        }
        let old_wall = started.elapsed();

        let new = llm(true);
        let started = Instant::now();
        for pass in passes {
            let r = request(
                prompts::system(),
                Message::user_with_shared(&shared, &prompts::focus(pass)),
            );
            new.complete(&r).await.expect("shared prefix");
        }
        let new_wall = started.elapsed();
        println!("local_prefix: five passes one after another on {model} at {base}");
        println!(
            "  old layout (focus first):        {:>7.2} s",
            old_wall.as_secs_f64()
        );
        println!(
            "  shared prefix + cache_prompt:    {:>7.2} s",
            new_wall.as_secs_f64()
        );
        println!(
            "  ratio:                           {:>7.2}",
            new_wall.as_secs_f64() / old_wall.as_secs_f64()
        );
    });
}
