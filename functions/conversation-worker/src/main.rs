//! Conversation worker Lambda: ConversationQueue.fifo → mentions, thread replies,
//! disputes, memory commands, bookkeeping.

use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent};
use lambda_runtime::{Error, LambdaEvent, service_fn};
use parley_core::conversation::ConversationHandler;
use parley_runtime::{Settings, build_adapters, clients, sqs_batch, telemetry};
use std::sync::Arc;

#[tokio::main]
async fn main() -> Result<(), Error> {
    telemetry::init();
    let settings = Settings::from_env()?;
    let adapters = build_adapters(&settings).await?;
    let services =
        clients::services_from_env(&clients::process_env(), &settings, &adapters).await?;
    let handler = Arc::new(ConversationHandler::new(services));

    lambda_runtime::run(service_fn(move |event: LambdaEvent<SqsEvent>| {
        let handler = handler.clone();
        async move {
            let response: SqsBatchResponse =
                sqs_batch::respond(event.payload, handler.as_ref()).await?;
            Ok::<_, Error>(response)
        }
    }))
    .await
}
