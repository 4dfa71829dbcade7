//! SDK errors into the port's [`QueueError`], by what the caller can do about them: a stale
//! receipt is expected after a slow job and is only logged; a missing queue or denied
//! access needs an operator; anything else may pass and is worth a retry.

use aws_sdk_sqs::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};
use parley_core::ports::QueueError;

/// Error codes meaning "this receipt no longer holds the message". FIFO queues reject an
/// expired handle with `InvalidParameterValue` ("The receipt handle has expired"), so that
/// code counts when its message is about the receipt handle.
const STALE_RECEIPT_CODES: &[&str] = &[
    "ReceiptHandleIsInvalid",
    "InvalidIdFormat",
    "MessageNotInflight",
];

const CONFIG_CODES: &[&str] = &[
    "QueueDoesNotExist",
    "AWS.SimpleQueueService.NonExistentQueue",
    "InvalidAddress",
    "InvalidSecurity",
    "AccessDenied",
    "AccessDeniedException",
];

pub(crate) fn queue_error<E, R>(operation: &str, queue_url: &str, err: SdkError<E, R>) -> QueueError
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    R: std::fmt::Debug,
{
    let code = err.code().unwrap_or_default().to_string();
    let message = err.message().unwrap_or_default().to_string();
    let detail = format!("{operation} on {queue_url}: {}", DisplayErrorContext(&err));
    let about_receipt = message.contains("ReceiptHandle") || message.contains("receipt handle");
    if STALE_RECEIPT_CODES.contains(&code.as_str())
        || (code == "InvalidParameterValue" && about_receipt)
    {
        QueueError::StaleReceipt(detail)
    } else if CONFIG_CODES.contains(&code.as_str()) {
        QueueError::Config(detail)
    } else {
        QueueError::Unavailable(detail)
    }
}
