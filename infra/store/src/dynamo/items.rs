//! Records ↔ DynamoDB items, and SDK errors ↔ [`StoreError`].

use aws_sdk_dynamodb::error::DisplayErrorContext;
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
