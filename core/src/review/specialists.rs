//! Running the specialist passes, all at once.
//!
//! The passes are independent LLM calls of several seconds each, so they run
//! concurrently: a five-pass review costs about one pass of wall time. A pass that fails
//! (provider down, unusable JSON after the helper's retry) is reported as failed and the
//! others' findings are still published.

use crate::config::ReviewConfig;
use crate::ports::llm::{Llm, LlmError, LlmRequest, Message};
use crate::review::findings::{RawFinding, pass_output};
use crate::review::prompts::{self, SpecialistPrompt};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

/// The specialists `review.specialists` asks for; guideline compliance only when the
/// repository has guideline files to comply with.
pub fn select(config: &ReviewConfig, has_guidelines: bool) -> Vec<&'static SpecialistPrompt> {
    prompts::ALL
        .into_iter()
        .filter(|s| config.specialists.iter().any(|name| name == s.name))
        .filter(|s| s.name != prompts::GUIDELINES.name || has_guidelines)
        .collect()
}

/// How one pass went.
#[derive(Debug)]
pub struct PassResult {
    pub specialist: &'static str,
    pub outcome: Result<Vec<RawFinding>, LlmError>,
    pub elapsed: Duration,
}

/// Output budget per pass: a list of findings with bodies and suggestions.
const MAX_OUTPUT_TOKENS: u32 = 4096;

/// Run every specialist on the same user message, concurrently.
pub async fn run_all(
    llm: &dyn Llm,
    specialists: &[&'static SpecialistPrompt],
    user_message: &str,
) -> Vec<PassResult> {
    let passes = specialists
        .iter()
        .map(|specialist| run_one(llm, specialist, user_message))
        .collect();
    join_all(passes).await
}

async fn run_one(
    llm: &dyn Llm,
    specialist: &'static SpecialistPrompt,
    user_message: &str,
) -> PassResult {
    let started = Instant::now();
    let mut request = LlmRequest::new(
        prompts::system(specialist),
        vec![Message::user(user_message)],
    );
    request.options.max_tokens = MAX_OUTPUT_TOKENS;
    request.options.temperature = Some(0.0);
    let outcome = pass_output()
        .ask(llm, request)
        .await
        .map(|reply| reply.value.findings);
    match &outcome {
        Ok(findings) => tracing::info!(
            pass = specialist.name,
            findings = findings.len(),
            "review pass done"
        ),
        Err(err) => {
            tracing::warn!(pass = specialist.name, error = %err, "review pass failed; the others go on")
        }
    }
    PassResult {
        specialist: specialist.name,
        outcome,
        elapsed: started.elapsed(),
    }
}

type BoxedPass<'a> = Pin<Box<dyn Future<Output = PassResult> + Send + 'a>>;

/// Poll every pass until all are done, results in input order: `futures::join_all`
/// without pulling the `futures` crate into the domain for one function. The passes run
/// concurrently on the caller's task, so nothing needs `'static` or a runtime handle.
async fn join_all<'a, F>(passes: Vec<F>) -> Vec<PassResult>
where
    F: Future<Output = PassResult> + Send + 'a,
{
    let mut pending: Vec<Option<BoxedPass<'a>>> = passes
        .into_iter()
        .map(|pass| Some(Box::pin(pass) as BoxedPass<'a>))
        .collect();
    let mut done: Vec<Option<PassResult>> = pending.iter().map(|_| None).collect();
    std::future::poll_fn(move |cx: &mut Context<'_>| {
        for (slot, result) in pending.iter_mut().zip(done.iter_mut()) {
            if let Some(pass) = slot
                && let Poll::Ready(output) = pass.as_mut().poll(cx)
            {
                *result = Some(output);
                *slot = None;
            }
        }
        if pending.iter().all(Option::is_none) {
            Poll::Ready(done.iter_mut().filter_map(Option::take).collect())
        } else {
            Poll::Pending
        }
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ports::llm::{LlmResponse, Usage};
    use async_trait::async_trait;

    /// Answers after a delay that depends on the pass, so completion order differs from
    /// input order.
    struct SlowLlm;

    #[async_trait]
    impl Llm for SlowLlm {
        async fn complete(&self, request: &LlmRequest) -> Result<LlmResponse, LlmError> {
            let delay = if request.system.contains("security") {
                200
            } else {
                50
            };
            tokio::time::sleep(Duration::from_millis(delay)).await;
            if request.system.contains("testing specialist") {
                return Err(LlmError::Server {
                    status: 500,
                    message: "down".into(),
                });
            }
            Ok(LlmResponse {
                text: r#"{"findings": []}"#.into(),
                usage: Usage::new(1, 1),
                model: "m".into(),
                truncated: false,
            })
        }

        fn model(&self) -> &str {
            "m"
        }
    }

    #[tokio::test]
    async fn passes_run_concurrently_in_order_and_fail_alone() {
        let specialists = select(&ReviewConfig::default(), false);
        assert_eq!(
            specialists.len(),
            4,
            "guidelines pass needs guideline files"
        );
        let started = Instant::now();
        let results = run_all(&SlowLlm, &specialists, "diff").await;
        assert!(
            started.elapsed() < Duration::from_millis(400),
            "{:?}",
            started.elapsed()
        );
        let names: Vec<&str> = results.iter().map(|r| r.specialist).collect();
        assert_eq!(names, ["security", "correctness", "tests", "style"]);
        assert!(results[2].outcome.is_err());
        assert!(results[0].outcome.is_ok() && results[3].outcome.is_ok());
    }
}
