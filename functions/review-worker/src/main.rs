//! Review worker Lambda: ReviewQueue.fifo → full and incremental reviews, findings, the
//! check-run gate.

use parley_core::review::ReviewHandler;

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    parley_runtime::sqs_batch::run_worker(ReviewHandler::new).await
}
