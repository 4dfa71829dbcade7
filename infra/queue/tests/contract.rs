//! One contract for every `PollingQueue`: each `check_*` takes the port only, and runs
//! against the SQLite queue (a temporary file) and SQS (moto's server, fresh queues per
//! test).
//!
//! The SQS tests need `AWS_ENDPOINT_URL` pointing at moto; without it they fail rather than
//! pass unseen. Where moto does not do what SQS does, the check is run on SQLite only and
//! the gap is written next to the SQS tests below.

use parley_core::ports::{OutgoingMessage, PollingQueue, QueueError, QueueName, ReceivedMessage};
use parley_queue::sqlite::{QueueSettings, SqliteQueue};
use parley_queue::sqs::{SqsQueue, create_fifo_queues};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

const C: QueueName = QueueName::Conversation;
const R: QueueName = QueueName::Review;
const E: QueueName = QueueName::Embedding;

/// Long enough that nothing times out by accident while a check runs.
const HOLD: Duration = Duration::from_secs(30);
/// Short enough to wait for. SQS counts whole seconds.
const SHORT: Duration = Duration::from_secs(1);
/// How long a check waits for something that should happen after a SHORT timeout.
const PATIENCE: Duration = Duration::from_secs(8);
/// Low, so dead-lettering takes few round trips.
const MAX_RECEIVES: u32 = 2;

type Queue = Arc<dyn PollingQueue>;

fn msg(queue: QueueName, group: &str, dedup: &str, body: &str) -> OutgoingMessage {
    OutgoingMessage {
        queue,
        group_id: group.into(),
        dedup_id: dedup.into(),
        body: body.into(),
    }
}

fn bodies(messages: &[ReceivedMessage]) -> Vec<&str> {
    messages.iter().map(|m| m.body.as_str()).collect()
}

/// Order holds within a group only; across groups SQS promises none.
fn sorted_bodies(messages: &[ReceivedMessage]) -> Vec<&str> {
    let mut bodies = bodies(messages);
    bodies.sort_unstable();
    bodies
}

fn by_body<'a>(messages: &'a [ReceivedMessage], body: &str) -> &'a ReceivedMessage {
    messages
        .iter()
        .find(|m| m.body == body)
        .unwrap_or_else(|| panic!("{body} not among {messages:?}"))
}

/// Receive until something arrives or PATIENCE runs out.
async fn poll(q: &Queue, queue: QueueName, visibility: Duration) -> Vec<ReceivedMessage> {
    let start = Instant::now();
    loop {
        let got = q.receive(queue, 10, visibility).await.unwrap();
        if !got.is_empty() || start.elapsed() > PATIENCE {
            return got;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

// ---------------------------------------------------------------------------------------
// The contract
// ---------------------------------------------------------------------------------------

async fn check_send_receive_ack(q: Queue) {
    q.send(msg(C, "octo/repo#1", "d1", "hello")).await.unwrap();

    assert!(
        q.receive(R, 10, HOLD).await.unwrap().is_empty(),
        "the review queue is a different queue"
    );
    let got = q.receive(C, 10, SHORT).await.unwrap();
    assert_eq!(bodies(&got), ["hello"]);
    assert_eq!(got[0].group_id, "octo/repo#1");
    assert_eq!(got[0].receive_count, 1);
    assert!(!got[0].message_id.is_empty() && !got[0].receipt.is_empty());

    q.ack(C, &got[0].receipt).await.unwrap();
    // Past the visibility timeout, so an ack that did nothing would show the message again.
    tokio::time::sleep(SHORT + Duration::from_millis(1200)).await;
    assert!(
        q.receive(C, 10, HOLD).await.unwrap().is_empty(),
        "an acked message is gone"
    );
}

async fn check_dedup_id_drops_a_duplicate(q: Queue) {
    q.send(msg(R, "g", "same", "first")).await.unwrap();
    q.send(msg(R, "g", "same", "second")).await.unwrap();
    // Dedup is by id, not content: the same body under another id is a new message.
    q.send(msg(R, "g", "other", "first")).await.unwrap();
    // And by queue: the same id on the other queue is a different message.
    q.send(msg(C, "g", "same", "elsewhere")).await.unwrap();

    let mut seen = Vec::new();
    for _ in 0..4 {
        let got = q.receive(R, 10, HOLD).await.unwrap();
        for m in &got {
            q.ack(R, &m.receipt).await.unwrap();
        }
        seen.extend(got.into_iter().map(|m| m.body));
    }
    assert_eq!(
        seen,
        ["first", "first"],
        "the second send of `same` is dropped"
    );
    assert_eq!(
        bodies(&q.receive(C, 10, HOLD).await.unwrap()),
        ["elsewhere"]
    );
}

/// Ids SQS refuses as they are (too long, spaces, non-ASCII) still work, keep their
/// meaning, and come back as sent.
async fn check_ids_sqs_refuses_as_they_are(q: Queue) {
    let long_group = format!("{}/{}#{}", "o".repeat(39), "r".repeat(100), 123);
    let long_dedup = "δ".repeat(100);
    q.send(msg(C, &long_group, &long_dedup, "one"))
        .await
        .unwrap();
    q.send(msg(C, &long_group, &long_dedup, "duplicate"))
        .await
        .unwrap();
    // Shares the first 128 bytes with long_dedup: truncating would call it a duplicate.
    q.send(msg(C, &long_group, &format!("{long_dedup}!"), "two"))
        .await
        .unwrap();
    q.send(msg(C, "with space", "with space", "three"))
        .await
        .unwrap();

    let first = q.receive(C, 10, HOLD).await.unwrap();
    assert_eq!(sorted_bodies(&first), ["one", "three"]);
    assert_eq!(by_body(&first, "one").group_id, long_group);
    assert_eq!(by_body(&first, "three").group_id, "with space");
    q.ack(C, &by_body(&first, "one").receipt).await.unwrap();

    let second = q.receive(C, 10, HOLD).await.unwrap();
    assert_eq!(
        bodies(&second),
        ["two"],
        "one group: `two` follows `one`, and `duplicate` is dropped"
    );
}

async fn check_per_group_order(q: Queue) {
    q.send(msg(R, "A", "a1", "A1")).await.unwrap();
    q.send(msg(R, "A", "a2", "A2")).await.unwrap();
    q.send(msg(R, "B", "b1", "B1")).await.unwrap();

    let first = q.receive(R, 10, HOLD).await.unwrap();
    assert_eq!(
        sorted_bodies(&first),
        ["A1", "B1"],
        "one message per group at a time, in send order"
    );
    assert!(
        q.receive(R, 10, HOLD).await.unwrap().is_empty(),
        "A2 waits while A1 is in flight"
    );

    q.ack(R, &by_body(&first, "B1").receipt).await.unwrap();
    assert!(
        q.receive(R, 10, HOLD).await.unwrap().is_empty(),
        "acking B1 does not free group A"
    );

    q.ack(R, &by_body(&first, "A1").receipt).await.unwrap();
    let next = q.receive(R, 10, HOLD).await.unwrap();
    assert_eq!(bodies(&next), ["A2"]);
    assert_eq!(next[0].receive_count, 1);
}

async fn check_visibility_timeout_redelivers(q: Queue) {
    q.send(msg(C, "g", "d", "slow job")).await.unwrap();
    let first = q.receive(C, 10, SHORT).await.unwrap();
    assert_eq!(first.len(), 1);
    assert!(
        q.receive(C, 10, SHORT).await.unwrap().is_empty(),
        "hidden while in flight"
    );

    let again = poll(&q, C, HOLD).await;
    assert_eq!(
        bodies(&again),
        ["slow job"],
        "back after its visibility timeout"
    );
    assert_eq!(again[0].message_id, first[0].message_id);
    assert_eq!(again[0].receive_count, 2);
    assert_ne!(
        again[0].receipt, first[0].receipt,
        "each receive gets its own receipt"
    );
    q.ack(C, &again[0].receipt).await.unwrap();
}

/// A worker that dies holds its message until the visibility timeout; a second worker (its
/// own connection or client) then gets it, still ahead of the rest of its group.
async fn check_crashed_consumer(crashing: Queue, survivor: Queue) {
    crashing.send(msg(R, "pr", "1", "job 1")).await.unwrap();
    crashing.send(msg(R, "pr", "2", "job 2")).await.unwrap();
    let taken = crashing.receive(R, 10, SHORT).await.unwrap();
    assert_eq!(bodies(&taken), ["job 1"]);
    drop(crashing);

    let recovered = poll(&survivor, R, HOLD).await;
    assert_eq!(
        bodies(&recovered),
        ["job 1"],
        "job 2 must not overtake the crashed job 1"
    );
    assert_eq!(recovered[0].receive_count, 2);
    survivor.ack(R, &recovered[0].receipt).await.unwrap();
    assert_eq!(
        bodies(&survivor.receive(R, 10, HOLD).await.unwrap()),
        ["job 2"]
    );
}

async fn check_nack_makes_visible_at_once(q: Queue) {
    q.send(msg(C, "g", "d1", "retry me")).await.unwrap();
    q.send(msg(C, "g", "d2", "after")).await.unwrap();
    let first = q.receive(C, 10, HOLD).await.unwrap();
    assert_eq!(bodies(&first), ["retry me"]);
    q.nack(C, &first[0].receipt).await.unwrap();

    let again = q.receive(C, 10, HOLD).await.unwrap();
    assert_eq!(
        bodies(&again),
        ["retry me"],
        "retried at once, still ahead of its group"
    );
    assert_eq!(again[0].receive_count, 2);
}

/// Needs a queue whose max receive count is MAX_RECEIVES.
async fn check_dead_letter_after_max_receives(q: Queue) {
    q.send(msg(R, "g", "poison", "poison")).await.unwrap();
    q.send(msg(R, "g", "next", "next")).await.unwrap();
    q.send(msg(C, "g", "fine", "fine")).await.unwrap();

    for attempt in 1..=MAX_RECEIVES {
        let got = q.receive(R, 10, HOLD).await.unwrap();
        assert_eq!(bodies(&got), ["poison"], "attempt {attempt}");
        assert_eq!(got[0].receive_count, attempt);
        q.nack(R, &got[0].receipt).await.unwrap();
    }
    // The receive after the last allowed one moves it to the dead letters; the next message
    // of its group is then free (at once here, or on a later receive: either is fine).
    let next = poll(&q, R, HOLD).await;
    assert_eq!(
        bodies(&next),
        ["next"],
        "poison is not delivered a third time"
    );
    assert_eq!(next[0].receive_count, 1);

    assert_eq!(q.dead_letters(R).await.unwrap(), ["poison"]);
    assert_eq!(
        q.dead_letters(R).await.unwrap(),
        ["poison"],
        "reading dead letters leaves them there"
    );
    assert!(q.dead_letters(C).await.unwrap().is_empty());
}

/// Needs a queue whose max receive count is MAX_RECEIVES. Dead letters are listed with
/// their group, and one redriven goes back to the end of its group with its attempts
/// counted afresh, the others staying where they are.
async fn check_dead_letters_listed_and_redriven(q: Queue) {
    let group = "octo-org/hello#42";
    for body in ["poison-1", "poison-2"] {
        q.send(msg(R, group, body, body)).await.unwrap();
        for _ in 0..MAX_RECEIVES {
            let got = poll(&q, R, HOLD).await;
            assert_eq!(bodies(&got), [body]);
            q.nack(R, &got[0].receipt).await.unwrap();
        }
    }
    // The receive after the last allowed one dead-letters the second poison too.
    assert!(q.receive(R, 10, HOLD).await.unwrap().is_empty());

    let dead = q.list_dead_letters(R).await.unwrap();
    let dead_bodies: Vec<&str> = dead.iter().map(|d| d.body.as_str()).collect();
    assert_eq!(dead_bodies, ["poison-1", "poison-2"]);
    assert!(dead.iter().all(|d| d.group_id == group), "{dead:?}");
    assert!(
        dead.iter().all(|d| d.receive_count >= Some(MAX_RECEIVES)),
        "{dead:?}"
    );
    assert!(q.list_dead_letters(C).await.unwrap().is_empty());

    assert!(!q.redrive_dead_letter(R, "no-such-id").await.unwrap());
    assert!(
        !q.redrive_dead_letter(C, &dead[0].message_id).await.unwrap(),
        "a dead letter of one queue is not redriven to the other"
    );
    assert!(q.redrive_dead_letter(R, &dead[0].message_id).await.unwrap());
    assert!(
        !q.redrive_dead_letter(R, &dead[0].message_id).await.unwrap(),
        "redriven once"
    );
    let left: Vec<String> = q
        .list_dead_letters(R)
        .await
        .unwrap()
        .into_iter()
        .map(|d| d.body)
        .collect();
    assert_eq!(left, ["poison-2"]);

    let back = poll(&q, R, HOLD).await;
    assert_eq!(bodies(&back), ["poison-1"]);
    assert_eq!(back[0].group_id, group);
    assert_eq!(back[0].receive_count, 1, "attempts start again");
    q.ack(R, &back[0].receipt).await.unwrap();
}

/// The embedding queue is a queue of its own, with its own dead letters.
async fn check_embedding_queue_is_separate(q: Queue) {
    q.send(msg(E, "octo/repo", "embed-1", "embed me"))
        .await
        .unwrap();
    q.send(msg(E, "octo/repo", "embed-2", "after"))
        .await
        .unwrap();
    q.send(msg(R, "octo/repo", "embed-1", "review me"))
        .await
        .unwrap();
    assert!(q.receive(C, 10, HOLD).await.unwrap().is_empty());

    for attempt in 1..=MAX_RECEIVES {
        let got = q.receive(E, 10, HOLD).await.unwrap();
        assert_eq!(bodies(&got), ["embed me"], "attempt {attempt}");
        assert_eq!(got[0].group_id, "octo/repo");
        q.nack(E, &got[0].receipt).await.unwrap();
    }
    assert_eq!(bodies(&poll(&q, E, HOLD).await), ["after"], "dead-lettered");
    assert_eq!(q.dead_letters(E).await.unwrap(), ["embed me"]);
    assert!(q.dead_letters(R).await.unwrap().is_empty());
    assert_eq!(
        bodies(&q.receive(R, 10, HOLD).await.unwrap()),
        ["review me"]
    );
}

/// Two consumers on the same queue never hold the same message or the same group at once.
async fn check_competing_consumers(a: Queue, b: Queue) {
    for group in 0..4 {
        for n in 0..3 {
            a.send(msg(
                C,
                &format!("g{group}"),
                &format!("{group}-{n}"),
                &format!("{group}-{n}"),
            ))
            .await
            .unwrap();
        }
    }
    let mut order: HashMap<String, Vec<String>> = HashMap::new();
    let mut seen = HashSet::new();
    let start = Instant::now();
    while seen.len() < 12 && start.elapsed() < PATIENCE * 2 {
        let (got_a, got_b) = tokio::join!(a.receive(C, 10, HOLD), b.receive(C, 10, HOLD));
        let (got_a, got_b) = (got_a.unwrap(), got_b.unwrap());
        let mut groups = HashSet::new();
        for (q, m) in got_a
            .iter()
            .map(|m| (&a, m))
            .chain(got_b.iter().map(|m| (&b, m)))
        {
            assert!(
                groups.insert(m.group_id.clone()),
                "two consumers hold group {} at once",
                m.group_id
            );
            assert!(seen.insert(m.body.clone()), "{} delivered twice", m.body);
            order
                .entry(m.group_id.clone())
                .or_default()
                .push(m.body.clone());
            q.ack(C, &m.receipt).await.unwrap();
        }
    }
    assert_eq!(seen.len(), 12, "every message delivered");
    for group in 0..4 {
        let expected: Vec<String> = (0..3).map(|n| format!("{group}-{n}")).collect();
        assert_eq!(order[&format!("g{group}")], expected, "group order");
    }
}

/// SQS FIFO: once the visibility timeout passes the receipt is dead, whether or not the
/// message was received again, and a deleted message's receipt is dead too.
async fn check_stale_receipts(q: Queue) {
    q.send(msg(C, "g", "d", "job")).await.unwrap();
    let first = q.receive(C, 10, SHORT).await.unwrap().remove(0);
    tokio::time::sleep(SHORT + Duration::from_millis(200)).await;
    assert!(
        matches!(
            q.ack(C, &first.receipt).await,
            Err(QueueError::StaleReceipt(_))
        ),
        "expired"
    );

    let second = poll(&q, C, HOLD).await.remove(0);
    assert!(
        matches!(
            q.ack(C, &first.receipt).await,
            Err(QueueError::StaleReceipt(_))
        ),
        "redelivered"
    );
    assert!(
        matches!(
            q.nack(C, &first.receipt).await,
            Err(QueueError::StaleReceipt(_))
        ),
        "redelivered"
    );
    q.ack(C, &second.receipt).await.unwrap();
    assert!(
        matches!(
            q.ack(C, &second.receipt).await,
            Err(QueueError::StaleReceipt(_))
        ),
        "acked twice"
    );
    assert!(
        matches!(
            q.ack(C, "no-such-receipt").await,
            Err(QueueError::StaleReceipt(_))
        ),
        "unknown"
    );
}

/// SQS remembers a dedup id for five minutes after the send, even once the message is
/// deleted: a job redelivered by GitHub after it was processed is still dropped.
async fn check_dedup_outlives_the_message(q: Queue) {
    q.send(msg(R, "g", "delivery-1", "job")).await.unwrap();
    let got = q.receive(R, 10, HOLD).await.unwrap();
    q.ack(R, &got[0].receipt).await.unwrap();
    q.send(msg(R, "g", "delivery-1", "job again"))
        .await
        .unwrap();
    assert!(q.receive(R, 10, HOLD).await.unwrap().is_empty());
}

// ---------------------------------------------------------------------------------------
// SQLite
// ---------------------------------------------------------------------------------------

fn settings() -> QueueSettings {
    QueueSettings {
        max_receive_count: MAX_RECEIVES,
        ..QueueSettings::default()
    }
}

async fn sqlite_file() -> (tempfile::TempDir, std::path::PathBuf, Queue) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("parley.db");
    let q = SqliteQueue::open(&path, settings()).await.unwrap();
    (dir, path, Arc::new(q))
}

async fn sqlite() -> (tempfile::TempDir, Queue) {
    let (dir, _, q) = sqlite_file().await;
    (dir, q)
}

mod sqlite_queue {
    use super::*;

    #[tokio::test]
    async fn embedding_queue_is_separate() {
        let (_dir, q) = sqlite().await;
        check_embedding_queue_is_separate(q).await;
    }

    #[tokio::test]
    async fn send_receive_ack() {
        let (_dir, q) = sqlite().await;
        check_send_receive_ack(q).await;
    }

    #[tokio::test]
    async fn dedup_id_drops_a_duplicate() {
        let (_dir, q) = sqlite().await;
        check_dedup_id_drops_a_duplicate(q).await;
    }

    #[tokio::test]
    async fn ids_sqs_refuses_as_they_are() {
        let (_dir, q) = sqlite().await;
        check_ids_sqs_refuses_as_they_are(q).await;
    }

    #[tokio::test]
    async fn per_group_order() {
        let (_dir, q) = sqlite().await;
        check_per_group_order(q).await;
    }

    #[tokio::test]
    async fn visibility_timeout_redelivers() {
        let (_dir, q) = sqlite().await;
        check_visibility_timeout_redelivers(q).await;
    }

    #[tokio::test]
    async fn crashed_consumer() {
        let (_dir, path, crashing) = sqlite_file().await;
        let survivor = SqliteQueue::open(&path, settings()).await.unwrap();
        check_crashed_consumer(crashing, Arc::new(survivor)).await;
    }

    #[tokio::test]
    async fn nack_makes_visible_at_once() {
        let (_dir, q) = sqlite().await;
        check_nack_makes_visible_at_once(q).await;
    }

    #[tokio::test]
    async fn dead_letter_after_max_receives() {
        let (_dir, q) = sqlite().await;
        check_dead_letter_after_max_receives(q).await;
    }

    #[tokio::test]
    async fn dead_letters_listed_and_redriven() {
        let (_dir, q) = sqlite().await;
        check_dead_letters_listed_and_redriven(q).await;
    }

    #[tokio::test]
    async fn competing_consumers() {
        let (_dir, path, a) = sqlite_file().await;
        let b = SqliteQueue::open(&path, settings()).await.unwrap();
        check_competing_consumers(a, Arc::new(b)).await;
    }

    #[tokio::test]
    async fn stale_receipts() {
        let (_dir, q) = sqlite().await;
        check_stale_receipts(q).await;
    }

    #[tokio::test]
    async fn dedup_outlives_the_message() {
        let (_dir, q) = sqlite().await;
        check_dedup_outlives_the_message(q).await;
    }

    #[tokio::test]
    async fn in_memory_queue_keeps_the_contract() {
        let q: Queue = Arc::new(SqliteQueue::open_in_memory(settings()).unwrap());
        check_per_group_order(Arc::clone(&q)).await;
        check_dead_letter_after_max_receives(q).await;
    }

    /// Everything not acked survives closing the file: waiting messages, the in-flight one
    /// (with its receive count), the dedup ids and the dead letters.
    #[tokio::test]
    async fn survives_reopening_the_file() {
        let (_dir, path, q) = sqlite_file().await;
        q.send(msg(R, "g", "1", "in flight")).await.unwrap();
        q.send(msg(R, "g", "2", "waiting")).await.unwrap();
        q.send(msg(C, "h", "3", "dead")).await.unwrap();
        assert_eq!(
            bodies(&q.receive(R, 10, SHORT).await.unwrap()),
            ["in flight"]
        );
        for _ in 0..MAX_RECEIVES {
            let got = q.receive(C, 10, HOLD).await.unwrap();
            q.nack(C, &got[0].receipt).await.unwrap();
        }
        assert!(
            q.receive(C, 10, HOLD).await.unwrap().is_empty(),
            "dead-lettered"
        );
        drop(q);

        let q: Queue = Arc::new(SqliteQueue::open(&path, settings()).await.unwrap());
        q.send(msg(R, "g", "2", "duplicate after restart"))
            .await
            .unwrap();
        let back = poll(&q, R, HOLD).await;
        assert_eq!(bodies(&back), ["in flight"]);
        assert_eq!(back[0].receive_count, 2);
        q.ack(R, &back[0].receipt).await.unwrap();
        assert_eq!(bodies(&q.receive(R, 10, HOLD).await.unwrap()), ["waiting"]);
        assert_eq!(q.dead_letters(C).await.unwrap(), ["dead"]);
    }

    #[tokio::test]
    async fn a_dedup_id_is_accepted_again_after_the_window() {
        let dir = tempfile::tempdir().unwrap();
        let window = Duration::from_millis(500);
        let settings = QueueSettings {
            dedup_window: window,
            ..settings()
        };
        let q: Queue = Arc::new(
            SqliteQueue::open(dir.path().join("q.db"), settings)
                .await
                .unwrap(),
        );
        q.send(msg(C, "g", "d", "first")).await.unwrap();
        q.send(msg(C, "g", "d", "inside the window")).await.unwrap();
        tokio::time::sleep(window + Duration::from_millis(100)).await;
        q.send(msg(C, "g", "d", "after the window")).await.unwrap();
        let first = q.receive(C, 10, HOLD).await.unwrap();
        q.ack(C, &first[0].receipt).await.unwrap();
        let second = q.receive(C, 10, HOLD).await.unwrap();
        assert_eq!(
            (bodies(&first), bodies(&second)),
            (vec!["first"], vec!["after the window"])
        );
    }

    /// The store adapter opens the same file on its own connection.
    #[tokio::test]
    async fn shares_its_file_with_other_tables() {
        let (_dir, path, q) = sqlite_file().await;
        let other = rusqlite::Connection::open(&path).unwrap();
        other.busy_timeout(Duration::from_secs(5)).unwrap();
        other
            .execute_batch("CREATE TABLE findings (id INTEGER PRIMARY KEY, title TEXT)")
            .unwrap();
        other
            .execute("INSERT INTO findings (title) VALUES ('x')", [])
            .unwrap();
        q.send(msg(C, "g", "d", "job")).await.unwrap();
        assert_eq!(bodies(&q.receive(C, 10, HOLD).await.unwrap()), ["job"]);
        let mode: String = other
            .query_row("PRAGMA journal_mode", [], |r| r.get(0))
            .unwrap();
        assert_eq!(mode, "wal");
        let tables: Vec<String> = other
            .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert!(
            tables
                .iter()
                .all(|t| t == "findings" || t.starts_with("queue_")),
            "the queue only creates queue_ tables: {tables:?}"
        );
    }

    #[tokio::test]
    async fn refuses_a_max_receive_count_of_zero() {
        let settings = QueueSettings {
            max_receive_count: 0,
            ..QueueSettings::default()
        };
        assert!(matches!(
            SqliteQueue::open_in_memory(settings),
            Err(QueueError::Config(_))
        ));
    }
}

// ---------------------------------------------------------------------------------------
// SQS, through moto
// ---------------------------------------------------------------------------------------

/// A client for the emulator, and fresh queues named after a new uuid.
async fn sqs_pair() -> (Queue, Queue) {
    let endpoint = std::env::var("AWS_ENDPOINT_URL").unwrap_or_default();
    assert!(
        !endpoint.is_empty(),
        "AWS_ENDPOINT_URL is not set, so there is no SQS to test against: start moto \
         (scripts/test.sh does it), or run `moto_server -H 127.0.0.1 -p 5002 &` and export \
         AWS_ENDPOINT_URL=http://127.0.0.1:5002 AWS_ACCESS_KEY_ID=testing \
         AWS_SECRET_ACCESS_KEY=testing AWS_REGION=us-east-1"
    );
    let config = aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await;
    let client = aws_sdk_sqs::Client::new(&config);
    let prefix = format!("t{}", uuid::Uuid::new_v4().simple());
    let urls = create_fifo_queues(&client, &prefix, MAX_RECEIVES)
        .await
        .unwrap_or_else(|err| panic!("creating queues on {endpoint} (is moto running?): {err}"));
    // A second client stands for a second worker process.
    let second = aws_sdk_sqs::Client::new(&config);
    (
        Arc::new(SqsQueue::new(client, urls.clone())),
        Arc::new(SqsQueue::new(second, urls)),
    )
}

async fn sqs() -> Queue {
    sqs_pair().await.0
}

/// Gaps in moto 5.2.5 (moto/sqs/models.py), so these checks run on SQLite only:
/// - `check_stale_receipts`: moto accepts DeleteMessage and ChangeMessageVisibility with any
///   receipt handle the message ever had (`Message.had_receipt_handle`), expired or
///   superseded, and a second delete of a deleted message succeeds. Real FIFO queues reject
///   an expired handle ("The receipt handle has expired").
/// - `check_dedup_outlives_the_message`: moto compares a new dedup id only with messages
///   still in the queue (`Queue.add_message`), so once a message is deleted its id is
///   accepted again; SQS keeps it for the whole five-minute window.
///
/// Group locking and redrive moto does model: a group with a message in flight is skipped,
/// and a message whose receive count reached `maxReceiveCount` moves to the DLQ on the next
/// receive. Like SQS it fills one ReceiveMessage with several messages of a group, which is
/// why `SqsQueue::receive` asks for one message per call.
mod sqs_queue {
    use super::*;

    #[tokio::test]
    async fn embedding_queue_is_separate() {
        check_embedding_queue_is_separate(sqs().await).await;
    }

    #[tokio::test]
    async fn send_receive_ack() {
        check_send_receive_ack(sqs().await).await;
    }

    #[tokio::test]
    async fn dedup_id_drops_a_duplicate() {
        check_dedup_id_drops_a_duplicate(sqs().await).await;
    }

    #[tokio::test]
    async fn ids_sqs_refuses_as_they_are() {
        check_ids_sqs_refuses_as_they_are(sqs().await).await;
    }

    #[tokio::test]
    async fn per_group_order() {
        check_per_group_order(sqs().await).await;
    }

    #[tokio::test]
    async fn visibility_timeout_redelivers() {
        check_visibility_timeout_redelivers(sqs().await).await;
    }

    #[tokio::test]
    async fn crashed_consumer() {
        let (crashing, survivor) = sqs_pair().await;
        check_crashed_consumer(crashing, survivor).await;
    }

    #[tokio::test]
    async fn nack_makes_visible_at_once() {
        check_nack_makes_visible_at_once(sqs().await).await;
    }

    #[tokio::test]
    async fn dead_letter_after_max_receives() {
        check_dead_letter_after_max_receives(sqs().await).await;
    }

    #[tokio::test]
    async fn dead_letters_listed_and_redriven() {
        check_dead_letters_listed_and_redriven(sqs().await).await;
    }

    #[tokio::test]
    async fn competing_consumers() {
        let (a, b) = sqs_pair().await;
        check_competing_consumers(a, b).await;
    }
}

/// An endpoint that accepts connections and never answers: SQS hanging.
async fn silent_endpoint() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    url
}

/// A send to an SQS that never answers fails within its timeout, so the webhook can still
/// release its claim and answer GitHub before its own timeout ends the process.
#[tokio::test]
async fn a_send_to_an_sqs_that_never_answers_fails_in_time() {
    use parley_core::ports::JobQueue;
    let endpoint = silent_endpoint().await;
    let config = aws_config::defaults(aws_config::BehaviorVersion::latest())
        .endpoint_url(&endpoint)
        .region(aws_config::Region::new("us-east-1"))
        .credentials_provider(aws_sdk_sqs::config::Credentials::new(
            "k", "s", None, None, "test",
        ))
        .load()
        .await;
    let urls = parley_queue::sqs::QueueUrls {
        conversation: format!("{endpoint}/123456789012/c.fifo"),
        review: format!("{endpoint}/123456789012/r.fifo"),
        embedding: None,
        conversation_dlq: None,
        review_dlq: None,
        embedding_dlq: None,
    };
    let queue = SqsQueue::new(aws_sdk_sqs::Client::new(&config), urls);
    let started = Instant::now();
    let sent = queue
        .send(msg(QueueName::Conversation, "o/r#1", "d-1", "{}"))
        .await;
    assert!(sent.is_err(), "{sent:?}");
    let took = started.elapsed();
    assert!(
        took >= parley_queue::sqs::SEND_ATTEMPT_TIMEOUT
            && took < parley_queue::sqs::SEND_TIMEOUT + Duration::from_secs(2),
        "gave up after {took:?}"
    );
}
