//! Conversation worker Lambda: ConversationQueue.fifo → mentions, thread replies,
//! disputes, `@parley review` requests, bookkeeping.

use parley_core::conversation::ConversationHandler;

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    parley_runtime::sqs_batch::run_worker(ConversationHandler::new).await
}
