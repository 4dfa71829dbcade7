//! The contract of `Claims`: one winner per key, expiry, owned claims.

use super::*;

crate::common::on_both_adapters!(
    store;
    check_claim_release_is_claimed,
    check_claims_expire,
    check_concurrent_claims_have_one_winner,
    check_owned_claims,
    check_concurrent_owned_claims_have_one_winner,
);

async fn check_claim_release_is_claimed(store: Arc<dyn Store>) {
    let key = keys::delivery("d-1");
    assert!(!store.is_claimed(&key).await.unwrap(), "fresh key is free");

    assert_eq!(store.claim(&key, HOUR).await.unwrap(), Claim::Won);
    assert!(store.is_claimed(&key).await.unwrap());
    assert_eq!(
        store.claim(&key, HOUR).await.unwrap(),
        Claim::AlreadyClaimed
    );
    assert!(
        store.is_claimed(&key).await.unwrap(),
        "a lost claim keeps it"
    );

    let other = keys::delivery("d-2");
    assert!(
        !store.is_claimed(&other).await.unwrap(),
        "keys are independent"
    );
    assert_eq!(store.claim(&other, HOUR).await.unwrap(), Claim::Won);

    store.release(&key).await.unwrap();
    assert!(!store.is_claimed(&key).await.unwrap(), "released");
    assert!(
        store.is_claimed(&other).await.unwrap(),
        "release is per key"
    );
    assert_eq!(
        store.claim(&key, HOUR).await.unwrap(),
        Claim::Won,
        "a released key can be claimed again"
    );

    store
        .release("never-claimed")
        .await
        .expect("releasing an unclaimed key is not an error");
}

async fn check_claims_expire(store: Arc<dyn Store>) {
    let short = "reply#short";
    let long = "reply#long";
    assert_eq!(
        store.claim(short, Duration::from_secs(1)).await.unwrap(),
        Claim::Won
    );
    assert_eq!(store.claim(long, HOUR).await.unwrap(), Claim::Won);
    assert_eq!(
        store.claim(short, Duration::from_secs(1)).await.unwrap(),
        Claim::AlreadyClaimed,
        "a short claim holds while it lasts"
    );
    assert!(store.is_claimed(short).await.unwrap());

    // Claims lapse on whole seconds, rounded up: a 1 s claim is gone within 2 s.
    tokio::time::sleep(Duration::from_millis(2_300)).await;

    assert!(
        !store.is_claimed(short).await.unwrap(),
        "a lapsed claim reads as absent although its record is still there"
    );
    assert!(
        store.is_claimed(long).await.unwrap(),
        "only the short one lapsed"
    );
    assert_eq!(
        store.claim(long, HOUR).await.unwrap(),
        Claim::AlreadyClaimed
    );

    // Several callers retrying the same lapsed work: still exactly one wins.
    let outcomes = race(&store, |store| async move {
        store.claim("reply#short", HOUR).await.unwrap()
    })
    .await;
    assert_eq!(won(&outcomes), 1, "one winner takes over a lapsed claim");
    assert!(
        store.is_claimed(short).await.unwrap(),
        "the new claim holds"
    );
}

async fn check_concurrent_claims_have_one_winner(store: Arc<dyn Store>) {
    for round in 0..3 {
        let key = format!("delivery#race-{round}");
        let outcomes = race(&store, move |store| {
            let key = key.clone();
            async move { store.claim(&key, HOUR).await.unwrap() }
        })
        .await;
        assert_eq!(won(&outcomes), 1, "round {round}: {outcomes:?}");
    }
}

async fn check_owned_claims(store: Arc<dyn Store>) {
    let key = "run#octo/app#5#abc";
    assert_eq!(
        store.claim_as(key, "delivery-1", HOUR).await.unwrap(),
        Claim::Won
    );
    assert_eq!(
        store.claim_as(key, "delivery-1", HOUR).await.unwrap(),
        Claim::Won,
        "the owner's retry resumes its own claim"
    );
    assert_eq!(
        store.claim_as(key, "delivery-2", HOUR).await.unwrap(),
        Claim::AlreadyClaimed,
        "another owner is locked out"
    );
    assert_eq!(
        store.claim(key, HOUR).await.unwrap(),
        Claim::AlreadyClaimed,
        "an owned claim also blocks a plain claim"
    );
    assert!(store.is_claimed(key).await.unwrap());

    // A lapsed owned claim goes to whoever asks next.
    let short = "run#octo/app#5#def";
    assert_eq!(
        store
            .claim_as(short, "delivery-1", Duration::from_secs(1))
            .await
            .unwrap(),
        Claim::Won
    );
    tokio::time::sleep(Duration::from_millis(2100)).await;
    assert_eq!(
        store.claim_as(short, "delivery-2", HOUR).await.unwrap(),
        Claim::Won
    );
    assert_eq!(
        store.claim_as(short, "delivery-1", HOUR).await.unwrap(),
        Claim::AlreadyClaimed,
        "the old owner lost it once it lapsed and was taken"
    );
}

async fn check_concurrent_owned_claims_have_one_winner(store: Arc<dyn Store>) {
    let outcomes = race(&store, |store| async move {
        let owner = uuid::Uuid::new_v4().to_string();
        store.claim_as("run#race", &owner, HOUR).await.unwrap()
    })
    .await;
    assert_eq!(won(&outcomes), 1, "{outcomes:?}");
}
