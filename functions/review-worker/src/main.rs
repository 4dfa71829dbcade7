//! Review worker Lambda: ReviewQueue.fifo → full and incremental reviews, findings, the
//! check-run gate; and EmbeddingQueue.fifo → embedding the documents reviews stored
//! (a second event source, routed by job kind).

use parley_core::embedding::{EmbeddingHandler, WithEmbedding};
use parley_core::review::ReviewHandler;

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    parley_runtime::sqs_batch::run_worker(|services| {
        WithEmbedding::new(
            ReviewHandler::new(services.clone()),
            EmbeddingHandler::new(services),
        )
    })
    .await
}
