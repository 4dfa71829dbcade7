//! A model that answers from a script and keeps every request it saw: the double for unit
//! tests of what asks a model (structured output, reading with tools).

use crate::ports::llm::{CutOff, Llm, LlmError, LlmRequest, LlmResponse, Usage};
use async_trait::async_trait;
use std::collections::VecDeque;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

pub(crate) struct ScriptedLlm {
    replies: Mutex<VecDeque<Result<LlmResponse, LlmError>>>,
    seen: Mutex<Vec<LlmRequest>>,
    unused_tool_turns: AtomicUsize,
}

impl ScriptedLlm {
    /// Whole replies (tool calls, usage and all) in order; a request past the script is
    /// a 500.
    pub(crate) fn replying(replies: Vec<LlmResponse>) -> Self {
        Self::script(replies.into_iter().map(Ok).collect())
    }

    /// Text replies `(text, cut off at the token limit)`, each 100 tokens in, 10 out, or
    /// errors.
    pub(crate) fn new(replies: Vec<Result<(&str, bool), LlmError>>) -> Self {
        Self::script(
            replies
                .into_iter()
                .map(|r| {
                    r.map(|(text, truncated)| LlmResponse {
                        cut_off: truncated.then_some(CutOff::OutputLimit),
                        ..LlmResponse::answer(text, Usage::new(100, 10), "fake-model")
                    })
                })
                .collect(),
        )
    }

    fn script(replies: VecDeque<Result<LlmResponse, LlmError>>) -> Self {
        Self {
            replies: Mutex::new(replies),
            seen: Mutex::new(Vec::new()),
            unused_tool_turns: AtomicUsize::new(0),
        }
    }

    pub(crate) fn seen(&self) -> Vec<LlmRequest> {
        self.seen.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// How often it was told a turn of reading went unused ([`Llm::tools_went_unused`]).
    pub(crate) fn unused_tool_turns(&self) -> usize {
        self.unused_tool_turns.load(Ordering::SeqCst)
    }
}

#[async_trait]
impl Llm for ScriptedLlm {
    async fn complete(&self, request: &LlmRequest) -> Result<LlmResponse, LlmError> {
        self.seen
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(request.clone());
        self.replies
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pop_front()
            .unwrap_or_else(|| {
                Err(LlmError::Server {
                    status: 500,
                    message: "script exhausted".to_owned(),
                })
            })
    }

    fn model(&self) -> &str {
        "fake-model"
    }

    fn supports_tools(&self) -> bool {
        true
    }

    fn tools_went_unused(&self) {
        self.unused_tool_turns.fetch_add(1, Ordering::SeqCst);
    }
}
