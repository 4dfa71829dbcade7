//! Records ↔ DynamoDB items, and SDK errors ↔ [`StoreError`].

use aws_sdk_dynamodb::config::http::HttpResponse;
use aws_sdk_dynamodb::error::{DisplayErrorContext, SdkError};
use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::AttributeValue;
use parley_core::ports::StoreError;
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::collections::HashMap;

pub(crate) type Item = HashMap<String, AttributeValue>;

/// Serialise a record and add its keys.
///
/// `None` fields are dropped rather than stored as NULL: DynamoDB refuses a NULL in an
/// index key (a finding not yet posted has no `comment_id`), and serde reads a missing
/// `Option` back as `None` anyway.
pub(crate) fn encode<T: Serialize>(
    record: &T,
    keys: &[(&str, &str)],
    what: &str,
) -> Result<Item, StoreError> {
    let mut item: Item = serde_dynamo::aws_sdk_dynamodb_1::to_item(record).map_err(|e| {
        // Our own types always serialise; reaching this means a type changed shape.
        StoreError::Config(format!("encoding {what} for DynamoDB: {e}"))
    })?;
    item.retain(|_, value| !value.is_null());
    for (name, value) in keys {
        item.insert((*name).to_owned(), s(value));
    }
    Ok(item)
}

/// Decode a record; `location` names the item in the error so an operator can find it.
pub(crate) fn decode<T: DeserializeOwned>(item: Item, location: &str) -> Result<T, StoreError> {
    serde_dynamo::aws_sdk_dynamodb_1::from_item(item).map_err(|e| StoreError::Corrupt {
        key: location.to_owned(),
        reason: e.to_string(),
    })
}

/// Read a numeric attribute, distinguishing "absent" from "not a number".
pub(crate) fn number<N: std::str::FromStr>(
    item: &Item,
    attribute: &str,
    location: &str,
) -> Result<Option<N>, StoreError>
where
    N::Err: std::fmt::Display,
{
    let Some(value) = item.get(attribute) else {
        return Ok(None);
    };
    let corrupt = |reason: String| StoreError::Corrupt {
        key: location.to_owned(),
        reason,
    };
    let text = value
        .as_n()
        .map_err(|other| corrupt(format!("`{attribute}` is not a number: {other:?}")))?;
    text.parse()
        .map(Some)
        .map_err(|e| corrupt(format!("`{attribute}` = {text}: {e}")))
}

pub(crate) fn s(value: &str) -> AttributeValue {
    AttributeValue::S(value.to_owned())
}

pub(crate) fn n(value: impl std::fmt::Display) -> AttributeValue {
    AttributeValue::N(value.to_string())
}

/// Any SDK failure (network, throttling after retries, validation) as `Unavailable`,
/// keeping the service's own message: it is what names the missing table or bad key.
pub(crate) fn unavailable(operation: &str, error: &dyn std::error::Error) -> StoreError {
    StoreError::Unavailable(format!(
        "dynamodb {operation}: {}",
        DisplayErrorContext(error)
    ))
}

/// A conditional write's answer: `Some` when it was written, `None` when its condition did
/// not hold (a claim taken, a record changed since it was read, a ceiling reached). That is
/// an answer, not a failure; anything else is [`unavailable`].
pub(crate) fn conditional<T, E>(
    result: Result<T, SdkError<E, HttpResponse>>,
    operation: &str,
) -> Result<Option<T>, StoreError>
where
    E: ConditionFailed + std::error::Error + 'static,
{
    match result {
        Ok(output) => Ok(Some(output)),
        Err(e) if e.as_service_error().is_some_and(E::condition_failed) => Ok(None),
        Err(e) => Err(unavailable(operation, &e)),
    }
}

/// The errors of the write operations that take a condition; the SDK gives each its own
/// type with the same question.
pub(crate) trait ConditionFailed {
    fn condition_failed(&self) -> bool;
}

impl ConditionFailed for PutItemError {
    fn condition_failed(&self) -> bool {
        self.is_conditional_check_failed_exception()
    }
}

impl ConditionFailed for UpdateItemError {
    fn condition_failed(&self) -> bool {
        self.is_conditional_check_failed_exception()
    }
}
