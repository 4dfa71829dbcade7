//! The SQS FIFO rules as SQLite transactions, synchronous; `super` runs them off the async
//! runtime.
//!
//! Every write opens `BEGIN IMMEDIATE`: two connections on one file (two `parley`
//! processes, or the queue and the store) must not both read "group free" and both deliver.
//! An immediate transaction takes the write lock up front, so the second one waits on the
//! busy timeout instead of failing to upgrade a read lock halfway through.

use parley_core::ports::{DeadLetter, OutgoingMessage, QueueName, ReceivedMessage};
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};
use std::collections::HashSet;
use std::time::Duration;

/// What a receive may hand out: the head (lowest `seq`) of each group, when visible. A
/// group whose head is in flight has nothing to offer, which is the per-group lock.
const VISIBLE_HEADS: &str = "
SELECT m.seq, m.message_id, m.group_id, m.body, m.receive_count
FROM queue_messages m
JOIN (SELECT MIN(seq) AS seq FROM queue_messages WHERE queue = ?1 GROUP BY group_id) head
  ON m.seq = head.seq
WHERE m.visible_at_ms <= ?2
ORDER BY m.seq";

/// Whether `send` stored the message or dropped it as a duplicate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Sent {
    Stored,
    Duplicate,
}

/// Store a message unless its dedup id was seen on this queue within `dedup_window`. Like
/// SQS, the window runs from the first send and a duplicate does not extend it, and it
/// outlives the message: a job resent after it was processed is still dropped.
pub(super) fn send(
    conn: &mut Connection,
    message: &OutgoingMessage,
    dedup_window: Duration,
    now_ms: i64,
) -> rusqlite::Result<Sent> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    tx.execute(
        "DELETE FROM queue_dedup WHERE expires_at_ms <= ?1",
        [now_ms],
    )?;
    let claimed = tx.execute(
        "INSERT INTO queue_dedup (queue, dedup_id, expires_at_ms) VALUES (?1, ?2, ?3)
         ON CONFLICT DO NOTHING",
        params![
            message.queue.as_str(),
            message.dedup_id,
            now_ms.saturating_add(millis(dedup_window))
        ],
    )?;
    if claimed == 0 {
        tx.commit()?;
        return Ok(Sent::Duplicate);
    }
    tx.execute(
        "INSERT INTO queue_messages (queue, message_id, group_id, body, sent_at_ms, visible_at_ms)
         VALUES (?1, ?2, ?3, ?4, ?5, ?5)",
        params![
            message.queue.as_str(),
            uuid::Uuid::new_v4().to_string(),
            message.group_id,
            message.body,
            now_ms
        ],
    )?;
    tx.commit()?;
    Ok(Sent::Stored)
}

struct Head {
    seq: i64,
    message_id: String,
    group_id: String,
    body: String,
    receive_count: u32,
}

/// Hand out up to `max` group heads, each under a fresh receipt and hidden until
/// `now + visibility`. A head already received `max_receive_count` times is moved to the
/// dead letters instead, as SQS's redrive does on the receive that would exceed the limit;
/// the message behind it in its group then becomes the head, so the query runs again.
pub(super) fn receive(
    conn: &mut Connection,
    queue: QueueName,
    max: usize,
    visibility: Duration,
    max_receive_count: u32,
    now_ms: i64,
) -> rusqlite::Result<Vec<ReceivedMessage>> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let visible_at_ms = now_ms.saturating_add(millis(visibility));
    let mut received = Vec::new();
    // A zero visibility leaves a delivered head visible; never hand it out twice in one go.
    let mut delivered = HashSet::new();
    loop {
        let heads = visible_heads(&tx, queue, now_ms)?;
        let mut dead_lettered = false;
        for head in heads {
            if received.len() >= max {
                break;
            }
            if delivered.contains(&head.seq) {
                continue;
            }
            if head.receive_count >= max_receive_count {
                dead_letter(&tx, &head, now_ms)?;
                tracing::warn!(
                    queue = queue.as_str(),
                    message_id = %head.message_id,
                    group_id = %head.group_id,
                    receive_count = head.receive_count,
                    "message moved to the dead letters"
                );
                dead_lettered = true;
                continue;
            }
            let receipt = uuid::Uuid::new_v4().to_string();
            tx.execute(
                "UPDATE queue_messages
                 SET receive_count = receive_count + 1, receipt = ?2, visible_at_ms = ?3
                 WHERE seq = ?1",
                params![head.seq, receipt, visible_at_ms],
            )?;
            delivered.insert(head.seq);
            received.push(ReceivedMessage {
                message_id: head.message_id,
                receipt,
                group_id: head.group_id,
                body: head.body,
                receive_count: head.receive_count + 1,
            });
        }
        if !dead_lettered || received.len() >= max {
            break;
        }
    }
    tx.commit()?;
    Ok(received)
}

fn visible_heads(conn: &Connection, queue: QueueName, now_ms: i64) -> rusqlite::Result<Vec<Head>> {
    let mut statement = conn.prepare_cached(VISIBLE_HEADS)?;
    let heads = statement.query_map(params![queue.as_str(), now_ms], |row| {
        Ok(Head {
            seq: row.get(0)?,
            message_id: row.get(1)?,
            group_id: row.get(2)?,
            body: row.get(3)?,
            receive_count: row.get(4)?,
        })
    })?;
    heads.collect()
}

fn dead_letter(conn: &Connection, head: &Head, now_ms: i64) -> rusqlite::Result<()> {
    conn.execute(
        "INSERT INTO queue_dead_letters
             (queue, message_id, group_id, body, sent_at_ms, receive_count, dead_at_ms)
         SELECT queue, message_id, group_id, body, sent_at_ms, receive_count, ?2
         FROM queue_messages WHERE seq = ?1",
        params![head.seq, now_ms],
    )?;
    conn.execute("DELETE FROM queue_messages WHERE seq = ?1", [head.seq])?;
    Ok(())
}

/// Delete the message `receipt` holds. Like a FIFO queue, and unlike a standard one, a
/// receipt whose visibility timeout has passed no longer counts, even before anyone else
/// received the message: whoever holds it cannot know whether someone else is at work.
/// Returns whether the receipt was current.
pub(super) fn ack(
    conn: &Connection,
    queue: QueueName,
    receipt: &str,
    now_ms: i64,
) -> rusqlite::Result<bool> {
    let deleted = conn.execute(
        "DELETE FROM queue_messages WHERE queue = ?1 AND receipt = ?2 AND visible_at_ms > ?3",
        params![queue.as_str(), receipt, now_ms],
    )?;
    Ok(deleted == 1)
}

/// Make the message `receipt` holds visible now. Returns whether the receipt was current.
pub(super) fn nack(
    conn: &Connection,
    queue: QueueName,
    receipt: &str,
    now_ms: i64,
) -> rusqlite::Result<bool> {
    let released = conn.execute(
        "UPDATE queue_messages SET visible_at_ms = ?3
         WHERE queue = ?1 AND receipt = ?2 AND visible_at_ms > ?3",
        params![queue.as_str(), receipt, now_ms],
    )?;
    Ok(released == 1)
}

pub(super) fn dead_letters(
    conn: &Connection,
    queue: QueueName,
) -> rusqlite::Result<Vec<DeadLetter>> {
    let mut statement = conn.prepare_cached(
        "SELECT message_id, group_id, body, receive_count FROM queue_dead_letters
         WHERE queue = ?1 ORDER BY seq",
    )?;
    let letters = statement.query_map([queue.as_str()], |row| {
        Ok(DeadLetter {
            message_id: row.get(0)?,
            group_id: row.get(1)?,
            body: row.get(2)?,
            receive_count: Some(row.get(3)?),
        })
    })?;
    letters.collect()
}

/// Move the dead letter `message_id` back to the end of its group, as a new message
/// (a new id, no receives yet). The dedup window is not consulted: an operator asked.
pub(super) fn redrive(
    conn: &mut Connection,
    queue: QueueName,
    message_id: &str,
    now_ms: i64,
) -> rusqlite::Result<bool> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let found: Option<(i64, String, String)> = tx
        .query_row(
            "SELECT seq, group_id, body FROM queue_dead_letters
             WHERE queue = ?1 AND message_id = ?2 ORDER BY seq LIMIT 1",
            params![queue.as_str(), message_id],
            |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
        )
        .optional()?;
    let Some((seq, group_id, body)) = found else {
        return Ok(false);
    };
    tx.execute(
        "INSERT INTO queue_messages (queue, message_id, group_id, body, sent_at_ms, visible_at_ms)
         VALUES (?1, ?2, ?3, ?4, ?5, ?5)",
        params![
            queue.as_str(),
            uuid::Uuid::new_v4().to_string(),
            group_id,
            body,
            now_ms
        ],
    )?;
    tx.execute("DELETE FROM queue_dead_letters WHERE seq = ?1", [seq])?;
    tx.commit()?;
    Ok(true)
}

fn millis(duration: Duration) -> i64 {
    i64::try_from(duration.as_millis()).unwrap_or(i64::MAX)
}

/// These run on a fixed clock, so they cover the time rules exactly; the contract suite
/// covers the same rules through the port on the real clock.
#[cfg(test)]
mod tests {
    use super::*;
    use rusqlite::OptionalExtension;

    const WINDOW: Duration = Duration::from_secs(300);
    const VISIBILITY: Duration = Duration::from_secs(30);

    fn conn() -> Connection {
        let conn = Connection::open_in_memory().unwrap();
        super::super::schema::prepare(&conn).unwrap();
        conn
    }

    fn message(group: &str, dedup: &str) -> OutgoingMessage {
        OutgoingMessage {
            queue: QueueName::Review,
            group_id: group.into(),
            dedup_id: dedup.into(),
            body: format!("{group}/{dedup}"),
        }
    }

    #[test]
    fn the_dedup_window_runs_from_the_first_send_and_then_expires() {
        let mut conn = conn();
        let m = message("g", "d");
        assert_eq!(send(&mut conn, &m, WINDOW, 0).unwrap(), Sent::Stored);
        assert_eq!(
            send(&mut conn, &m, WINDOW, 299_999).unwrap(),
            Sent::Duplicate
        );
        assert_eq!(send(&mut conn, &m, WINDOW, 300_000).unwrap(), Sent::Stored);
        let other_queue = OutgoingMessage {
            queue: QueueName::Conversation,
            ..m
        };
        assert_eq!(
            send(&mut conn, &other_queue, WINDOW, 300_001).unwrap(),
            Sent::Stored
        );
    }

    #[test]
    fn a_receipt_stops_counting_the_moment_its_visibility_ends() {
        let mut conn = conn();
        send(&mut conn, &message("g", "1"), WINDOW, 0).unwrap();
        let first = receive(&mut conn, QueueName::Review, 10, VISIBILITY, 5, 0).remove(0);
        assert!(!nack(&conn, QueueName::Review, &first.receipt, 30_000).unwrap());
        assert!(!ack(&conn, QueueName::Review, &first.receipt, 30_000).unwrap());
        assert!(stored(&conn, &first.message_id).unwrap());
        assert!(ack(&conn, QueueName::Review, &first.receipt, 29_999).unwrap());
        assert!(!stored(&conn, &first.message_id).unwrap());
    }

    #[test]
    fn a_receipt_for_another_queue_does_not_count() {
        let mut conn = conn();
        send(&mut conn, &message("g", "1"), WINDOW, 0).unwrap();
        let first = receive(&mut conn, QueueName::Review, 10, VISIBILITY, 5, 0).remove(0);
        assert!(!ack(&conn, QueueName::Conversation, &first.receipt, 1).unwrap());
        assert!(stored(&conn, &first.message_id).unwrap());
    }

    #[test]
    fn zero_visibility_never_hands_one_message_out_twice_in_one_receive() {
        let mut conn = conn();
        send(&mut conn, &message("g", "1"), WINDOW, 0).unwrap();
        let got = receive(&mut conn, QueueName::Review, 10, Duration::ZERO, 5, 0);
        assert_eq!(got.len(), 1);
        let again = receive(&mut conn, QueueName::Review, 10, Duration::ZERO, 5, 0);
        assert_eq!(again.len(), 1, "visible again at once");
        assert_eq!(again[0].receive_count, 2);
    }

    #[test]
    fn dead_lettering_a_head_frees_the_next_message_of_its_group_in_the_same_receive() {
        let mut conn = conn();
        send(&mut conn, &message("g", "1"), WINDOW, 0).unwrap();
        send(&mut conn, &message("g", "2"), WINDOW, 0).unwrap();
        let mut now = 0;
        for count in 1..=2 {
            let got = receive(&mut conn, QueueName::Review, 10, VISIBILITY, 2, now);
            assert_eq!(
                (got.len(), got[0].body.as_str(), got[0].receive_count),
                (1, "g/1", count)
            );
            now += 30_000;
        }
        let got = receive(&mut conn, QueueName::Review, 10, VISIBILITY, 2, now);
        assert_eq!(
            got.iter().map(|m| m.body.as_str()).collect::<Vec<_>>(),
            ["g/2"]
        );
        let dead = dead_letters(&conn, QueueName::Review).unwrap();
        assert_eq!(
            dead.iter().map(|d| d.body.as_str()).collect::<Vec<_>>(),
            ["g/1"]
        );
        assert!(
            dead_letters(&conn, QueueName::Conversation)
                .unwrap()
                .is_empty()
        );
    }

    /// Whether a message is still stored, waiting or in flight.
    fn stored(conn: &Connection, message_id: &str) -> rusqlite::Result<bool> {
        conn.query_row(
            "SELECT 1 FROM queue_messages WHERE message_id = ?1",
            [message_id],
            |_| Ok(()),
        )
        .optional()
        .map(|row| row.is_some())
    }

    /// `receive` here unwraps for brevity.
    fn receive(
        conn: &mut Connection,
        queue: QueueName,
        max: usize,
        visibility: Duration,
        max_receive_count: u32,
        now_ms: i64,
    ) -> Vec<ReceivedMessage> {
        super::receive(conn, queue, max, visibility, max_receive_count, now_ms).unwrap()
    }
}
