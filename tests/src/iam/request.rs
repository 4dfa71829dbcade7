//! What IAM authorises for one AWS request: its actions and the ARNs they act on, read
//! from the request as AWS reads it (`X-Amz-Target` and the JSON body of the JSON
//! protocols that DynamoDB, SQS and Secrets Manager speak to the Rust SDK).
//!
//! Some operations are authorised as other actions, and the mapping follows the service
//! documentation: SQS's batch operations as their single forms, and DynamoDB's
//! `TransactWriteItems`/`TransactGetItems` item by item as `PutItem`, `UpdateItem`,
//! `DeleteItem`, `ConditionCheckItem` and `GetItem` on each item's table.

use serde_json::Value;
use std::collections::BTreeMap;

/// One authorisation a request needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Need {
    pub action: String,
    pub resource: String,
}

impl std::fmt::Display for Need {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} on {}", self.action, self.resource)
    }
}

/// The stack's resources by the names requests use for them.
#[derive(Debug, Clone, Default)]
pub struct Names {
    /// Table name to ARN.
    pub tables: BTreeMap<String, String>,
    /// Queue URL to ARN.
    pub queues: BTreeMap<String, String>,
    /// Secret name to ARN (a request may name a secret either way).
    pub secrets: BTreeMap<String, String>,
}

/// The authorisations `target` (the `X-Amz-Target` header) with `body` needs, or why
/// the request cannot be read (which the caller treats as denied).
pub fn needs(target: &str, body: &[u8], names: &Names) -> Result<Vec<Need>, String> {
    let body: Value = serde_json::from_slice(body)
        .map_err(|err| format!("{target}: the body is not JSON: {err}"))?;
    let (service, operation) = target
        .split_once('.')
        .ok_or_else(|| format!("X-Amz-Target {target:?} has no operation"))?;
    match service {
        s if s.starts_with("DynamoDB_") => dynamodb(operation, &body, names),
        "AmazonSQS" => sqs(operation, &body, names),
        "secretsmanager" => secrets_manager(operation, &body, names),
        other => Err(format!(
            "{other}.{operation}: a service the IAM check does not know"
        )),
    }
}

fn dynamodb(operation: &str, body: &Value, names: &Names) -> Result<Vec<Need>, String> {
    let table = |name: &str| {
        names
            .tables
            .get(name)
            .cloned()
            .unwrap_or_else(|| format!("(no table {name} in this stack)"))
    };
    let need = |action: &str, resource: String| Need {
        action: format!("dynamodb:{action}"),
        resource,
    };
    let field = |value: &Value, key: &str| {
        value[key]
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| format!("dynamodb:{operation} without {key}"))
    };
    match operation {
        "BatchGetItem" | "BatchWriteItem" => {
            let items = body["RequestItems"]
                .as_object()
                .ok_or_else(|| format!("dynamodb:{operation} without RequestItems"))?;
            Ok(items
                .keys()
                .map(|name| need(operation, table(name)))
                .collect())
        }
        "TransactWriteItems" | "TransactGetItems" => {
            let items = body["TransactItems"]
                .as_array()
                .ok_or_else(|| format!("dynamodb:{operation} without TransactItems"))?;
            items
                .iter()
                .map(|item| {
                    let (kind, inner) = item
                        .as_object()
                        .and_then(|o| o.iter().next())
                        .ok_or_else(|| format!("dynamodb:{operation}: an empty item"))?;
                    let action = match kind.as_str() {
                        "Put" => "PutItem",
                        "Update" => "UpdateItem",
                        "Delete" => "DeleteItem",
                        "ConditionCheck" => "ConditionCheckItem",
                        "Get" => "GetItem",
                        other => return Err(format!("dynamodb:{operation}: item {other}")),
                    };
                    Ok(need(action, table(&field(inner, "TableName")?)))
                })
                .collect()
        }
        _ => {
            let mut resource = table(&field(body, "TableName")?);
            if let Some(index) = body["IndexName"].as_str() {
                resource = format!("{resource}/index/{index}");
            }
            Ok(vec![need(operation, resource)])
        }
    }
}

fn sqs(operation: &str, body: &Value, names: &Names) -> Result<Vec<Need>, String> {
    let url = body["QueueUrl"]
        .as_str()
        .ok_or_else(|| format!("sqs:{operation} without QueueUrl"))?;
    let resource = names
        .queues
        .get(url)
        .cloned()
        .unwrap_or_else(|| format!("(no queue {url} in this stack)"));
    let action = operation.strip_suffix("Batch").unwrap_or(operation);
    Ok(vec![Need {
        action: format!("sqs:{action}"),
        resource,
    }])
}

fn secrets_manager(operation: &str, body: &Value, names: &Names) -> Result<Vec<Need>, String> {
    let id = body["SecretId"]
        .as_str()
        .ok_or_else(|| format!("secretsmanager:{operation} without SecretId"))?;
    let resource = if id.starts_with("arn:") {
        id.to_string()
    } else {
        names
            .secrets
            .get(id)
            .cloned()
            .unwrap_or_else(|| format!("(no secret {id} in this stack)"))
    };
    Ok(vec![Need {
        action: format!("secretsmanager:{operation}"),
        resource,
    }])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names() -> Names {
        Names {
            tables: [("t".to_string(), "arn:table/t".to_string())].into(),
            queues: [("http://q".to_string(), "arn:q".to_string())].into(),
            secrets: [("s".to_string(), "arn:secret:s-abc".to_string())].into(),
        }
    }

    fn read(target: &str, body: Value) -> Vec<String> {
        needs(target, body.to_string().as_bytes(), &names())
            .expect("readable")
            .iter()
            .map(Need::to_string)
            .collect()
    }

    #[test]
    fn operations_are_authorised_as_the_services_document() {
        assert_eq!(
            read(
                "DynamoDB_20120810.Query",
                serde_json::json!({"TableName": "t", "IndexName": "i"})
            ),
            ["dynamodb:Query on arn:table/t/index/i"]
        );
        assert_eq!(
            read(
                "DynamoDB_20120810.TransactWriteItems",
                serde_json::json!({"TransactItems": [
                    {"Put": {"TableName": "t"}}, {"ConditionCheck": {"TableName": "t"}}
                ]})
            ),
            [
                "dynamodb:PutItem on arn:table/t",
                "dynamodb:ConditionCheckItem on arn:table/t"
            ]
        );
        assert_eq!(
            read(
                "AmazonSQS.DeleteMessageBatch",
                serde_json::json!({"QueueUrl": "http://q"})
            ),
            ["sqs:DeleteMessage on arn:q"]
        );
        assert_eq!(
            read(
                "secretsmanager.GetSecretValue",
                serde_json::json!({"SecretId": "s"})
            ),
            ["secretsmanager:GetSecretValue on arn:secret:s-abc"]
        );
    }

    #[test]
    fn what_cannot_be_read_is_an_error() {
        assert!(needs("sts.AssumeRole", b"{}", &names()).is_err());
        assert!(needs("DynamoDB_20120810.PutItem", b"not json", &names()).is_err());
        assert!(needs("DynamoDB_20120810.PutItem", b"{}", &names()).is_err());
    }
}
