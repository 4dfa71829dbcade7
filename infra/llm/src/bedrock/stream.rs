//! ConverseStream, for a request whose caller waits for the answer to begin.
//!
//! A review's first pass is sent alone so that Bedrock caches the shared prefix before
//! the other passes arrive; they may go once Bedrock has begun answering it, which only a
//! stream tells (`messageStart`). The rest of the stream is assembled into the reply
//! Converse would have given: text and tool-use blocks in order (a tool's input arrives
//! as pieces of JSON), the stop reason, and the usage of the closing `metadata` event.
//! An exception inside the stream (`throttlingException`, `modelStreamErrorException`)
//! becomes the error the same exception is as a status.

use super::{BedrockLlm, Call, by_code, classify, tokens};
use crate::stream::{Block, assemble};
use aws_sdk_bedrockruntime::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_bedrockruntime::types::{
    ContentBlockDelta, ContentBlockStart, ConverseStreamOutput, StopReason,
};
use parley_core::ports::llm::{AnswerStarted, CutOff, LlmError, LlmResponse, Usage};
use std::collections::BTreeMap;

impl BedrockLlm {
    /// One streamed attempt, all of it within the call's timeout as a whole reply would
    /// be; `started` is set at `messageStart`.
    pub(super) async fn attempt_streamed(
        &self,
        call: &Call<'_>,
        started: &AnswerStarted,
    ) -> Result<LlmResponse, LlmError> {
        let read = async {
            let output = self
                .client
                .converse_stream()
                .model_id(&self.model)
                .set_messages(Some(call.messages.to_vec()))
                .set_system(call.system.map(|block| vec![block.clone()]))
                .inference_config(call.inference.clone())
                .set_tool_config(call.tools.cloned())
                .send()
                .await
                .map_err(|e| classify(e, &self.model, call.timeout))?;
            let mut events = output.stream;
            let mut reply = Assembled::default();
            loop {
                match events.recv().await {
                    Ok(Some(event)) => reply.add(event, started),
                    Ok(None) => break,
                    Err(SdkError::ServiceError(context)) => {
                        let error = context.into_err();
                        return Err(by_code(
                            error.code(),
                            error.message(),
                            500,
                            &self.model,
                            call.timeout,
                        ));
                    }
                    Err(other) => {
                        return Err(LlmError::Network(format!(
                            "the reply stream broke off: {}",
                            crate::http::error_chain(&other)
                        )));
                    }
                }
            }
            reply.into_response(&self.model)
        };
        // Dropping the call at the deadline closes the connection: Bedrock stops.
        tokio::time::timeout(call.timeout, read)
            .await
            .unwrap_or(Err(LlmError::Timeout(call.timeout)))
    }
}

/// A streamed reply as it arrives.
#[derive(Default)]
struct Assembled {
    /// By content block index, so blocks keep their order whatever order events come in.
    blocks: BTreeMap<i32, Block>,
    stop_reason: Option<StopReason>,
    usage: Option<Usage>,
}

impl Assembled {
    fn add(&mut self, event: ConverseStreamOutput, started: &AnswerStarted) {
        match event {
            ConverseStreamOutput::MessageStart(_) => started.set(),
            ConverseStreamOutput::ContentBlockStart(event) => {
                if let Some(ContentBlockStart::ToolUse(tool)) = event.start() {
                    self.blocks.insert(
                        event.content_block_index(),
                        Block::Tool {
                            id: tool.tool_use_id().to_owned(),
                            name: tool.name().to_owned(),
                            json: String::new(),
                        },
                    );
                }
            }
            ConverseStreamOutput::ContentBlockDelta(event) => {
                let block = self.blocks.entry(event.content_block_index());
                match (event.delta(), block) {
                    (Some(ContentBlockDelta::Text(piece)), block) => {
                        if let Block::Text(text) = block.or_insert(Block::Text(String::new())) {
                            text.push_str(piece);
                        }
                    }
                    (Some(ContentBlockDelta::ToolUse(piece)), block) => {
                        if let std::collections::btree_map::Entry::Occupied(mut tool) = block
                            && let Block::Tool { json, .. } = tool.get_mut()
                        {
                            json.push_str(piece.input());
                        }
                    }
                    _ => {}
                }
            }
            ConverseStreamOutput::MessageStop(event) => {
                self.stop_reason = Some(event.stop_reason().clone());
            }
            ConverseStreamOutput::Metadata(event) => {
                // `inputTokens` leaves out what was read from or written to the cache.
                self.usage = event.usage().map(|u| {
                    Usage::new(tokens(u.input_tokens()), tokens(u.output_tokens())).with_cache(
                        u.cache_read_input_tokens().map_or(0, tokens),
                        u.cache_write_input_tokens().map_or(0, tokens),
                    )
                });
            }
            _ => {}
        }
    }

    fn into_response(self, model: &str) -> Result<LlmResponse, LlmError> {
        let Some(stop_reason) = self.stop_reason else {
            return Err(LlmError::Network(
                "the reply stream ended before messageStop".into(),
            ));
        };
        let (text, tool_calls) = assemble(self.blocks.into_values());
        Ok(LlmResponse {
            text,
            usage: self.usage.unwrap_or_else(|| {
                tracing::warn!(%model, "Bedrock stream carries no usage");
                Usage::default()
            }),
            // ConverseStream does not echo the model; the configured id is what was billed.
            model: model.to_owned(),
            cut_off: matches!(
                stop_reason,
                StopReason::MaxTokens | StopReason::ModelContextWindowExceeded
            )
            .then_some(CutOff::OutputLimit),
            tool_calls,
        })
    }
}
