//! DynamoDB-only behaviour: the tables `create_tables` makes are the ones the SAM
//! template declares, and making them twice is harmless.

use crate::common;

use aws_sdk_dynamodb::types::{
    AttributeValue, BillingMode, KeyType, ProjectionType, ScalarAttributeType, TimeToLiveStatus,
};
use parley_store::create_tables;

#[tokio::test]
async fn create_tables_builds_the_documented_schema_and_is_idempotent() {
    let client = common::dynamo_client().await;
    let tables = common::dynamo_tables(&client).await;
    create_tables(&client, &tables)
        .await
        .expect("second call ignores existing tables");

    let expect = [
        (&tables.idempotency, None),
        (&tables.conversations, Some("sk")),
        (&tables.findings, Some("sk")),
        (&tables.memory, Some("sk")),
        (&tables.installations, None),
        (&tables.snippets, Some("sk")),
    ];
    for (name, sort_key) in expect {
        let table = client
            .describe_table()
            .table_name(name)
            .send()
            .await
            .unwrap()
            .table
            .unwrap();
        let keys: Vec<(String, KeyType)> = table
            .key_schema()
            .iter()
            .map(|k| (k.attribute_name().to_owned(), k.key_type().clone()))
            .collect();
        let mut want = vec![("pk".to_owned(), KeyType::Hash)];
        if let Some(sk) = sort_key {
            want.push((sk.to_owned(), KeyType::Range));
        }
        assert_eq!(keys, want, "{name}");
        assert_eq!(
            table.billing_mode_summary().and_then(|b| b.billing_mode()),
            Some(&BillingMode::PayPerRequest),
            "{name}"
        );

        let ttl = client
            .describe_time_to_live()
            .table_name(name)
            .send()
            .await
            .unwrap();
        let ttl = ttl.time_to_live_description().unwrap();
        assert_eq!(ttl.attribute_name(), Some("expires_at"), "{name}");
        assert!(
            matches!(
                ttl.time_to_live_status(),
                Some(TimeToLiveStatus::Enabled | TimeToLiveStatus::Enabling)
            ),
            "{name}: {ttl:?}"
        );
    }

    let findings = client
        .describe_table()
        .table_name(&tables.findings)
        .send()
        .await
        .unwrap()
        .table
        .unwrap();
    let index = findings
        .global_secondary_indexes()
        .iter()
        .find(|i| i.index_name() == Some("by_comment"))
        .expect("by_comment index");
    let keys: Vec<(&str, &KeyType)> = index
        .key_schema()
        .iter()
        .map(|k| (k.attribute_name(), k.key_type()))
        .collect();
    assert_eq!(
        keys,
        [("repo", &KeyType::Hash), ("comment_id", &KeyType::Range)]
    );
    assert_eq!(
        index.projection().and_then(|p| p.projection_type()),
        Some(&ProjectionType::All)
    );
    let comment_id_type = findings
        .attribute_definitions()
        .iter()
        .find(|a| a.attribute_name() == "comment_id")
        .map(|a| a.attribute_type().clone());
    assert_eq!(comment_id_type, Some(ScalarAttributeType::N));
}

#[tokio::test]
async fn snippets_have_the_newest_first_local_index() {
    let client = common::dynamo_client().await;
    let tables = common::dynamo_tables(&client).await;
    let snippets = client
        .describe_table()
        .table_name(&tables.snippets)
        .send()
        .await
        .unwrap()
        .table
        .unwrap();
    let index = snippets
        .local_secondary_indexes()
        .iter()
        .find(|i| i.index_name() == Some("newest"))
        .expect("newest index");
    let keys: Vec<(&str, &KeyType)> = index
        .key_schema()
        .iter()
        .map(|k| (k.attribute_name(), k.key_type()))
        .collect();
    assert_eq!(keys, [("pk", &KeyType::Hash), ("newest", &KeyType::Range)]);
    assert_eq!(
        index.projection().and_then(|p| p.projection_type()),
        Some(&ProjectionType::All)
    );
}

/// A job's usage is one item a scope, whatever the number of counters: one write where
/// an item per counter made seven.
#[tokio::test]
async fn counters_added_together_are_one_item_per_scope() {
    use parley_core::ports::Counters;
    let client = common::dynamo_client().await;
    let tables = common::dynamo_tables(&client).await;
    let store = parley_store::DynamoStore::new(client.clone(), tables.clone());
    let scope = "usage#octo/app#2026-11";
    let usage = [("calls", 2), ("input", 900), ("output", 80), ("cost", 0)];
    store.add_to_counters(scope, &usage).await.unwrap();
    store.add_to_counters(scope, &usage).await.unwrap();

    let items = client
        .query()
        .table_name(&tables.conversations)
        .key_condition_expression("pk = :pk")
        .expression_attribute_values(":pk", AttributeValue::S(scope.into()))
        .send()
        .await
        .unwrap()
        .items
        .unwrap_or_default();
    assert_eq!(items.len(), 1, "{items:?}");
    let number = |name: &str| items[0].get(name).and_then(|v| v.as_n().ok()).cloned();
    assert_eq!(number("counter#input").as_deref(), Some("1800"));
    assert_eq!(number("counter#cost"), None, "zero deltas are not written");
}

/// A claim against a DynamoDB that never answers fails within the store's timeout: the
/// webhook's claim, send and release then fit GitHub's ten seconds (see `CALL_TIMEOUT`).
#[tokio::test]
async fn a_call_to_a_dynamodb_that_never_answers_fails_in_time() {
    use parley_core::ports::Claims;
    use parley_store::dynamo::{
        ATTEMPT_TIMEOUT, CALL_TIMEOUT, DynamoStore, TableNames, call_timeouts,
    };
    use std::time::{Duration, Instant};

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let endpoint = format!("http://{}", listener.local_addr().expect("addr"));
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    let config = aws_config::defaults(aws_config::BehaviorVersion::latest())
        .endpoint_url(&endpoint)
        .region(aws_config::Region::new("us-east-1"))
        .credentials_provider(aws_sdk_dynamodb::config::Credentials::new(
            "k", "s", None, None, "test",
        ))
        .timeout_config(call_timeouts())
        .load()
        .await;
    let store = DynamoStore::new(
        aws_sdk_dynamodb::Client::new(&config),
        TableNames::default(),
    );
    let started = Instant::now();
    let claimed = store.claim("delivery:d-1", Duration::from_secs(60)).await;
    assert!(claimed.is_err(), "{claimed:?}");
    let took = started.elapsed();
    assert!(
        took >= ATTEMPT_TIMEOUT && took < CALL_TIMEOUT + Duration::from_secs(2),
        "gave up after {took:?}"
    );
}

/// What the Lambda functions build their SDK configuration from, the environment alone
/// (`parley_aws::from_env`, no aws-config chain), reaches DynamoDB: the SDK's own HTTP
/// client, signing and retries come with the client (the Lambda-path tests run the
/// functions so too, end to end).
#[tokio::test]
async fn the_functions_configuration_from_the_environment_reaches_dynamodb() {
    common::dynamo_client().await;
    let config = parley_aws::from_env(
        parley_aws::Overrides {
            timeouts: Some(parley_store::dynamo::call_timeouts()),
            ..Default::default()
        },
        |name| std::env::var(name).ok(),
    );
    let client = aws_sdk_dynamodb::Client::new(&config);
    let tables = common::dynamo_tables(&client).await;
    let store = parley_store::DynamoStore::new(client, tables);
    use parley_core::ports::Claims;
    let claimed = store
        .claim("delivery:env-1", std::time::Duration::from_secs(60))
        .await
        .expect("claim through the functions' configuration");
    assert_eq!(claimed, parley_core::ports::Claim::Won);
}
