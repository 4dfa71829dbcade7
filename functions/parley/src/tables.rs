//! `parley tables create [--template template.yaml] [--stack-name parley-local]`: create
//! the DynamoDB tables and SQS queues of the SAM template in an emulator (moto, DynamoDB
//! Local, LocalStack), exactly as declared: key schemas, GSIs, TTL, FIFO settings, and
//! each queue's redrive policy to its dead-letter queue. Prints `export NAME=value` lines
//! for the functions' variables that point at them (`PARLEY_*_TABLE`, `PARLEY_*_URL`):
//!
//! ```sh
//! eval "$(parley tables create --stack-name parley-local)"
//! ```
//!
//! It refuses to run without `AWS_ENDPOINT_URL`, so it never creates anything in a real
//! account (the stack does that). Creating what exists already is not an error.

use anyhow::{Context, bail};
use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, GlobalSecondaryIndex, KeySchemaElement, KeyType, Projection,
    ProjectionType, ScalarAttributeType, TimeToLiveSpecification,
};
use aws_sdk_sqs::types::QueueAttributeName;
use clap::{Parser, Subcommand};
use serde_norway::Value;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

#[derive(Debug, Parser)]
#[command(
    name = "parley tables",
    about = "Provision the template's tables and queues in an emulator"
)]
pub struct TablesCommand {
    #[command(subcommand)]
    pub action: Action,
}

#[derive(Debug, Subcommand)]
pub enum Action {
    Create {
        #[arg(long, default_value = "template.yaml")]
        template: PathBuf,
        /// Stands for `${AWS::StackName}` in the names.
        #[arg(long, default_value = "parley-local")]
        stack_name: String,
    },
}

#[derive(Debug, thiserror::Error)]
pub enum TemplateError {
    #[error("{0}")]
    Unsupported(String),
    #[error("{resource}: {problem}")]
    Resource { resource: String, problem: String },
}

/// The queue attributes copied from the template (SQS's own names).
const QUEUE_ATTRIBUTES: &[&str] = &[
    "FifoQueue",
    "ContentBasedDeduplication",
    "DeduplicationScope",
    "FifoThroughputLimit",
    "VisibilityTimeout",
    "MessageRetentionPeriod",
    "DelaySeconds",
    "ReceiveMessageWaitTimeSeconds",
];

/// `parley tables …` from the process environment.
pub async fn main(args: &[String]) -> anyhow::Result<()> {
    let command = TablesCommand::try_parse_from(
        std::iter::once("parley tables".to_string()).chain(args.iter().cloned()),
    )
    .unwrap_or_else(|err| err.exit());
    let Action::Create {
        template,
        stack_name,
    } = command.action;
    if std::env::var("AWS_ENDPOINT_URL").map_or(true, |v| v.trim().is_empty()) {
        bail!(
            "AWS_ENDPOINT_URL is not set; refusing to create tables in a real AWS account (the SAM stack does that)"
        );
    }
    let config = aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await;
    let created = create(&template, &stack_name, &config).await?;
    let mut out = std::io::stdout();
    for (name, value) in created.variables {
        writeln!(out, "export {name}={}", shell_quote(&value))?;
    }
    Ok(())
}

/// What was created, by logical id, and the functions' variables that point at it.
#[derive(Debug, Clone, Default)]
pub struct Created {
    /// Logical id to table name.
    pub tables: BTreeMap<String, String>,
    /// Logical id to queue URL.
    pub queues: BTreeMap<String, String>,
    /// `Globals.Function.Environment.Variables` that are literals or `!Ref`s to what was
    /// created; parameters and secrets are left to the caller.
    pub variables: Vec<(String, String)>,
}

/// Create every `AWS::DynamoDB::Table` and `AWS::SQS::Queue` of the template at `path`.
pub async fn create(
    path: &Path,
    stack_name: &str,
    config: &aws_config::SdkConfig,
) -> anyhow::Result<Created> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let template: Value =
        serde_norway::from_str(&text).with_context(|| format!("{} is not YAML", path.display()))?;
    let resources = template
        .get("Resources")
        .and_then(Value::as_mapping)
        .with_context(|| format!("{} has no Resources", path.display()))?;
    let of_type = |kind: &str| -> Vec<(String, Value)> {
        resources
            .iter()
            .filter(|(_, r)| r.get("Type").and_then(Value::as_str) == Some(kind))
            .filter_map(|(id, r)| Some((id.as_str()?.to_string(), r.get("Properties")?.clone())))
            .collect()
    };

    let mut created = Created::default();
    let dynamodb = aws_sdk_dynamodb::Client::new(config);
    for (id, properties) in of_type("AWS::DynamoDB::Table") {
        let name = create_table(&dynamodb, &id, &properties, stack_name).await?;
        created.tables.insert(id, name);
    }
    let sqs = aws_sdk_sqs::Client::new(config);
    let parameters = template.get("Parameters").cloned().unwrap_or(Value::Null);
    let queues: BTreeMap<String, Value> = of_type("AWS::SQS::Queue")
        .into_iter()
        .map(|(id, mut properties)| {
            parameter_defaults(&mut properties, &parameters);
            (id, properties)
        })
        .collect();
    let mut arns = BTreeMap::new();
    for id in queues.keys() {
        create_queue(
            &sqs,
            id,
            &queues,
            stack_name,
            &mut created.queues,
            &mut arns,
        )
        .await?;
    }
    created.variables = variables(&template, &created);
    Ok(created)
}

async fn create_table(
    client: &aws_sdk_dynamodb::Client,
    id: &str,
    properties: &Value,
    stack_name: &str,
) -> anyhow::Result<String> {
    let problem = |problem: String| TemplateError::Resource {
        resource: id.to_string(),
        problem,
    };
    let name = match properties.get("TableName") {
        Some(value) => resolve(value, stack_name).map_err(problem)?,
        None => format!("{stack_name}-{}", id.strip_suffix("Table").unwrap_or(id)),
    };
    let mut request = client
        .create_table()
        .table_name(&name)
        .billing_mode(BillingMode::from(
            text(properties, "BillingMode").unwrap_or("PROVISIONED"),
        ));
    for attribute in list(properties, "AttributeDefinitions") {
        request = request.attribute_definitions(
            AttributeDefinition::builder()
                .attribute_name(text(attribute, "AttributeName").unwrap_or_default())
                .attribute_type(ScalarAttributeType::from(
                    text(attribute, "AttributeType").unwrap_or_default(),
                ))
                .build()
                .map_err(|err| problem(err.to_string()))?,
        );
    }
    for key in key_schema(properties).map_err(problem)? {
        request = request.key_schema(key);
    }
    for index in list(properties, "GlobalSecondaryIndexes") {
        let (name, projection, keys) = index_parts(index).map_err(problem)?;
        let gsi = GlobalSecondaryIndex::builder()
            .index_name(name)
            .projection(projection)
            .set_key_schema(Some(keys))
            .build()
            .map_err(|e| problem(e.to_string()))?;
        request = request.global_secondary_indexes(gsi);
    }
    // Local secondary indexes (the Snippets table's newest-first index): same shape.
    for index in list(properties, "LocalSecondaryIndexes") {
        let (name, projection, keys) = index_parts(index).map_err(problem)?;
        let lsi = aws_sdk_dynamodb::types::LocalSecondaryIndex::builder()
            .index_name(name)
            .projection(projection)
            .set_key_schema(Some(keys))
            .build()
            .map_err(|e| problem(e.to_string()))?;
        request = request.local_secondary_indexes(lsi);
    }
    match request.send().await {
        Ok(_) => {}
        Err(err) => {
            let service = err.into_service_error();
            if !service.is_resource_in_use_exception() {
                return Err(
                    anyhow::Error::new(service).context(format!("creating table {name} ({id})"))
                );
            }
        }
    }
    let ttl = properties.get("TimeToLiveSpecification");
    if let Some(ttl) = ttl
        && ttl.get("Enabled").and_then(Value::as_bool) == Some(true)
    {
        client
            .update_time_to_live()
            .table_name(&name)
            .time_to_live_specification(
                TimeToLiveSpecification::builder()
                    .enabled(true)
                    .attribute_name(text(ttl, "AttributeName").unwrap_or("expires_at"))
                    .build()
                    .map_err(|e| problem(e.to_string()))?,
            )
            .send()
            .await
            .map_err(|err| anyhow::Error::new(err.into_service_error()))
            .with_context(|| format!("turning on TTL of {name} ({id})"))?;
    }
    tracing::info!(table = %name, logical_id = id, "table ready");
    Ok(name)
}

/// Create queue `id`, its dead-letter queue first (the redrive policy names it by ARN).
async fn create_queue(
    client: &aws_sdk_sqs::Client,
    id: &str,
    all: &BTreeMap<String, Value>,
    stack_name: &str,
    urls: &mut BTreeMap<String, String>,
    arns: &mut BTreeMap<String, String>,
) -> anyhow::Result<()> {
    if urls.contains_key(id) {
        return Ok(());
    }
    let problem = |problem: String| TemplateError::Resource {
        resource: id.to_string(),
        problem,
    };
    let properties = all
        .get(id)
        .ok_or_else(|| problem("no such queue in the template".to_string()))?;
    let mut attributes: Vec<(QueueAttributeName, String)> = QUEUE_ATTRIBUTES
        .iter()
        .filter_map(|name| {
            Some((
                QueueAttributeName::from(*name),
                scalar(properties.get(*name)?)?,
            ))
        })
        .collect();
    if let Some(redrive) = properties.get("RedrivePolicy") {
        let target = redrive
            .get("deadLetterTargetArn")
            .and_then(get_att_resource)
            .ok_or_else(|| {
                problem("deadLetterTargetArn must be a !GetAtt of a queue".to_string())
            })?;
        // Boxed: the dead-letter queue is created by the same function.
        Box::pin(create_queue(client, &target, all, stack_name, urls, arns)).await?;
        let max = redrive
            .get("maxReceiveCount")
            .and_then(scalar)
            .ok_or_else(|| problem("RedrivePolicy needs maxReceiveCount".to_string()))?;
        let policy = serde_json::json!({
            "deadLetterTargetArn": arns.get(&target).cloned().unwrap_or_default(),
            "maxReceiveCount": max.parse::<u32>().map_err(|e| problem(format!("maxReceiveCount: {e}")))?,
        });
        attributes.push((QueueAttributeName::RedrivePolicy, policy.to_string()));
    }
    let mut name = match properties.get("QueueName") {
        Some(value) => resolve(value, stack_name).map_err(problem)?,
        None => format!("{stack_name}-{id}"),
    };
    if properties.get("FifoQueue").and_then(Value::as_bool) == Some(true)
        && !name.ends_with(".fifo")
    {
        name.push_str(".fifo");
    }
    let mut request = client.create_queue().queue_name(&name);
    for (key, value) in attributes {
        request = request.attributes(key, value);
    }
    let url = request
        .send()
        .await
        .map_err(|err| anyhow::Error::new(err.into_service_error()))
        .with_context(|| format!("creating queue {name} ({id})"))?
        .queue_url
        .with_context(|| format!("CreateQueue {name} returned no URL"))?;
    let arn = client
        .get_queue_attributes()
        .queue_url(&url)
        .attribute_names(QueueAttributeName::QueueArn)
        .send()
        .await
        .map_err(|err| anyhow::Error::new(err.into_service_error()))
        .with_context(|| format!("reading the ARN of {name}"))?
        .attributes
        .and_then(|mut a| a.remove(&QueueAttributeName::QueueArn))
        .with_context(|| format!("GetQueueAttributes {name} returned no QueueArn"))?;
    tracing::info!(queue = %url, logical_id = id, "queue ready");
    urls.insert(id.to_string(), url);
    arns.insert(id.to_string(), arn);
    Ok(())
}

/// The functions' variables: literals as they are, `!Ref`s to created resources resolved.
fn variables(template: &Value, created: &Created) -> Vec<(String, String)> {
    let Some(variables) = template
        .get("Globals")
        .and_then(|g| g.get("Function"))
        .and_then(|f| f.get("Environment"))
        .and_then(|e| e.get("Variables"))
        .and_then(Value::as_mapping)
    else {
        return Vec::new();
    };
    variables
        .iter()
        .filter_map(|(name, value)| {
            let name = name.as_str()?.to_string();
            if let Value::String(literal) = value {
                return Some((name, literal.clone()));
            }
            let target = reference(value)?;
            let resolved = created
                .tables
                .get(&target)
                .or_else(|| created.queues.get(&target))?;
            Some((name, resolved.clone()))
        })
        .collect()
}

/// A string property: a literal, or `!Sub` with `${AWS::StackName}` (the only intrinsic
/// the names use).
fn resolve(value: &Value, stack_name: &str) -> Result<String, String> {
    // Tags first: `as_str` looks through a tag, and would take `!Sub "…"` as the text.
    let Some(sub) = intrinsic(value, "Sub").and_then(Value::as_str) else {
        return match value {
            Value::String(text) => Ok(text.clone()),
            _ => Err(format!("unsupported name {value:?}: a string or !Sub")),
        };
    };
    let resolved = sub.replace("${AWS::StackName}", stack_name);
    if resolved.contains("${") {
        return Err(format!(
            "!Sub {sub:?} uses a variable other than AWS::StackName"
        ));
    }
    Ok(resolved)
}

/// The argument of `!Name x` (short form) or `{"Fn::Name": x}` (long form).
fn intrinsic<'a>(value: &'a Value, name: &str) -> Option<&'a Value> {
    match value {
        Value::Tagged(tagged) if tagged.tag == name => Some(&tagged.value),
        Value::Mapping(map) if map.len() == 1 => map.get(format!("Fn::{name}")),
        _ => None,
    }
}

/// Replace every `!Ref P` of a template parameter `P` with its default, as a deploy that
/// leaves `P` alone would (the queues' `maxReceiveCount` is a parameter). References to
/// resources stay for the code that creates them.
fn parameter_defaults(value: &mut Value, parameters: &Value) {
    if let Some(default) =
        reference(value).and_then(|name| parameters.get(name.as_str())?.get("Default").cloned())
    {
        *value = default;
        return;
    }
    match value {
        Value::Mapping(map) => map
            .values_mut()
            .for_each(|v| parameter_defaults(v, parameters)),
        Value::Sequence(items) => items
            .iter_mut()
            .for_each(|v| parameter_defaults(v, parameters)),
        Value::Tagged(tagged) => parameter_defaults(&mut tagged.value, parameters),
        _ => {}
    }
}

/// The logical id of `!Ref X` / `{"Ref": X}`.
fn reference(value: &Value) -> Option<String> {
    match value {
        Value::Tagged(tagged) if tagged.tag == "Ref" => tagged.value.as_str().map(str::to_string),
        Value::Mapping(map) if map.len() == 1 => map.get("Ref")?.as_str().map(str::to_string),
        _ => None,
    }
}

/// The resource of `!GetAtt X.Arn` / `{"Fn::GetAtt": [X, Arn]}`.
fn get_att_resource(value: &Value) -> Option<String> {
    let argument = intrinsic(value, "GetAtt")?;
    match argument {
        Value::String(dotted) => dotted.split('.').next().map(str::to_string),
        Value::Sequence(parts) => parts.first()?.as_str().map(str::to_string),
        _ => None,
    }
}

/// What a global and a local secondary index declare alike (name, projection, keys); the
/// SDK gives them builders of different types, so each takes these parts.
fn index_parts(index: &Value) -> Result<(&str, Projection, Vec<KeySchemaElement>), String> {
    let projection = index
        .get("Projection")
        .and_then(|p| text(p, "ProjectionType"))
        .unwrap_or("ALL");
    let projection = Projection::builder()
        .projection_type(ProjectionType::from(projection))
        .build();
    let name = text(index, "IndexName").unwrap_or_default();
    Ok((name, projection, key_schema(index)?))
}

fn key_schema(properties: &Value) -> Result<Vec<KeySchemaElement>, String> {
    list(properties, "KeySchema")
        .into_iter()
        .map(|key| {
            KeySchemaElement::builder()
                .attribute_name(text(key, "AttributeName").unwrap_or_default())
                .key_type(KeyType::from(text(key, "KeyType").unwrap_or_default()))
                .build()
                .map_err(|err| err.to_string())
        })
        .collect()
}

fn list<'a>(value: &'a Value, key: &str) -> Vec<&'a Value> {
    value
        .get(key)
        .and_then(Value::as_sequence)
        .map(|items| items.iter().collect())
        .unwrap_or_default()
}

fn text<'a>(value: &'a Value, key: &str) -> Option<&'a str> {
    value.get(key).and_then(Value::as_str)
}

/// A scalar as SQS wants attribute values: `true`/`false`, numbers, strings.
fn scalar(value: &Value) -> Option<String> {
    match value {
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(n.to_string()),
        Value::String(s) => Some(s.clone()),
        _ => None,
    }
}

fn shell_quote(value: &str) -> String {
    if !value.is_empty()
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./:=@%+,".contains(&b))
    {
        return value.to_string();
    }
    format!("'{}'", value.replace('\'', r"'\''"))
}
