//! The contract of `Installations`, and a record that does not decode.

use super::*;

crate::common::on_both_adapters!(
    store;
    check_installations,
);

async fn check_installations(store: Arc<dyn Store>) {
    assert_eq!(store.installation(1).await.unwrap(), None);

    let mut first = common::installation(1);
    // Beyond i64: the SQLite adapter must not lose or confuse it.
    let big = common::installation(u64::MAX - 7);
    store.put_installation(&first).await.unwrap();
    store.put_installation(&big).await.unwrap();
    assert_eq!(store.installation(1).await.unwrap(), Some(first.clone()));
    assert_eq!(
        store.installation(u64::MAX - 7).await.unwrap(),
        Some(big.clone())
    );

    first.suspended = true;
    first.repositories = vec![];
    first.updated_at = datetime!(2024-06-01 08:00:00.5 UTC);
    store.put_installation(&first).await.unwrap();
    assert_eq!(
        store.installation(1).await.unwrap(),
        Some(first),
        "put replaces"
    );

    store.delete_installation(1).await.unwrap();
    assert_eq!(store.installation(1).await.unwrap(), None);
    assert_eq!(
        store.installation(u64::MAX - 7).await.unwrap(),
        Some(big),
        "delete is per id"
    );
    store
        .delete_installation(1)
        .await
        .expect("deleting an absent installation is not an error");
}

async fn check_corrupt_record_is_reported(fixture: common::Fixture) {
    fixture
        .store
        .put_installation(&common::installation(77))
        .await
        .unwrap();
    fixture.vandal.corrupt_installation(77).await;
    match fixture.store.installation(77).await {
        Err(StoreError::Corrupt { key, reason }) => {
            assert!(key.contains("77"), "the error names the record: {key}");
            assert!(!reason.is_empty());
        }
        other => panic!("expected a Corrupt error, got {other:?}"),
    }
    assert_eq!(
        fixture.store.installation(78).await.unwrap(),
        None,
        "one bad record does not poison the others"
    );
}

#[tokio::test]
async fn sqlite_corrupt_record_is_reported() {
    check_corrupt_record_is_reported(common::sqlite()).await;
}

#[tokio::test]
async fn dynamodb_corrupt_record_is_reported() {
    check_corrupt_record_is_reported(common::dynamo().await).await;
}
