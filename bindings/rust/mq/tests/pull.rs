//! Publish, poll, ack, nack, seek, leases, batches, errors and introspection.
mod common;
use std::time::Duration;

use common::setup;
use mq::{
    Error, GroupOptions, Header, Published, Record, Retention, SeekTo, Start, Status, TopicConfig,
    Wait,
};

fn payloads(b: &mq::Batch<'_>) -> Vec<String> {
    b.iter()
        .map(|m| String::from_utf8_lossy(m.payload()).into_owned())
        .collect()
}

#[test]
fn publish_poll_ack_round_trip_with_keys_and_headers() {
    let (b, clock) = setup(2, 8);
    let hdrs = [
        Header::new(b"trace", b"42"),
        Header::new(b"trace", b""),
        Header::new(b"", b"v"),
    ];
    let at = b
        .publish(
            "t",
            Record::new(b"o-1").key(b"user-a").headers(&hdrs),
            Wait::NoWait,
        )
        .unwrap();
    assert_eq!(
        at,
        Published {
            partition: 1,
            offset: 0
        }
    );
    let mut c = b.consumer("t", "g", 1).unwrap();
    let batch = c.poll(10, Wait::NoWait).unwrap();
    assert_eq!(batch.len(), 1);
    let m = &batch.messages()[0];
    assert_eq!((m.partition(), m.offset(), m.delivery_count()), (1, 0, 1));
    assert_eq!(m.key(), Some(&b"user-a"[..]));
    assert_eq!(m.payload(), b"o-1");
    assert_eq!(m.timestamp_ns(), clock.now_ns());
    let owned = m.detach();
    batch.ack().unwrap();
    assert_eq!(owned.payload, b"o-1");
    assert_eq!(owned.key.as_deref(), Some(&b"user-a"[..]));
    assert_eq!(
        b.describe("t", 1).unwrap(),
        "log empty, next offset 1, backlog 0/8; g 1/1"
    );
}

#[test]
fn empty_key_is_a_key_and_no_key_is_round_robin() {
    let (b, _) = setup(3, 8);
    let empty = mq::key_partition(b"", 3).unwrap();
    assert_eq!(
        b.publish("t", Record::new(b"x").key(b""), Wait::NoWait)
            .unwrap()
            .partition,
        empty
    );
    let parts: Vec<i32> = (0..3)
        .map(|_| {
            b.publish("t", Record::new(b"y"), Wait::NoWait)
                .unwrap()
                .partition
        })
        .collect();
    let mut sorted = parts.clone();
    sorted.sort();
    assert_eq!(
        sorted,
        vec![0, 1, 2],
        "keyless publishes go round-robin: {parts:?}"
    );
    let mut c = b.consumer("t", "g", empty).unwrap();
    let batch = c.poll(10, Wait::NoWait).unwrap();
    assert_eq!(batch.messages()[0].key(), Some(&b""[..]));
    assert_eq!(batch.messages()[1].key(), None);
}

#[test]
fn full_timeout_and_not_in_flight_carry_their_status_and_message() {
    let (b, _) = setup(1, 2);
    b.publish("t", Record::new(b"a"), Wait::NoWait).unwrap();
    b.publish("t", Record::new(b"b"), Wait::NoWait).unwrap();
    let e = b
        .publish("t", Record::new(b"c"), Duration::from_millis(5))
        .unwrap_err();
    assert!(matches!(e, Error::Full(_)), "{e:?}");
    assert_eq!(e.status().name(), "MQ_FULL");
    let mut c = b.consumer("t", "g", 0).unwrap();
    c.poll(10, Wait::NoWait).unwrap().ack().unwrap();
    let e = c.poll(10, Duration::from_millis(5)).unwrap_err();
    assert!(matches!(e, Error::Timeout(_)), "{e:?}");
    let e = c.ack(7).unwrap_err();
    assert_eq!(
        e,
        Error::NotInFlight("offset 7 is not in flight for g (nothing is)".into())
    );
    assert_eq!(
        e.to_string(),
        "MQ_ERR_NOT_IN_FLIGHT: offset 7 is not in flight for g (nothing is)"
    );
}

#[test]
fn bad_input_is_an_error_never_a_crash() {
    let (b, _) = setup(1, 2);
    assert!(matches!(
        b.create_topic("t", &TopicConfig::new()),
        Err(Error::Exists(_))
    ));
    assert!(matches!(
        b.create_topic("bad name", &TopicConfig::new()),
        Err(Error::Invalid(_))
    ));
    assert!(matches!(
        b.create_topic("nul\0byte", &TopicConfig::new()),
        Err(Error::Invalid(_))
    ));
    assert!(matches!(
        b.create_topic(&"x".repeat(300), &TopicConfig::new()),
        Err(Error::Invalid(_))
    ));
    assert!(matches!(
        b.create_topic("zero", &TopicConfig::new().partitions(0)),
        Err(Error::Invalid(_))
    ));
    assert!(matches!(
        b.create_topic("neg", &TopicConfig::new().capacity(-1)),
        Err(Error::Invalid(_))
    ));
    assert!(matches!(
        b.publish("nope", Record::new(b"x"), Wait::NoWait),
        Err(Error::NoTopic(_))
    ));
    assert!(matches!(
        b.subscribe_group("t", "g", &GroupOptions::new()),
        Err(Error::Exists(_))
    ));
    let mut c = b.consumer("t", "nobody", 0).unwrap();
    assert!(matches!(c.poll(1, Wait::NoWait), Err(Error::NoGroup(_))));
    assert!(
        matches!(c.poll(0, Wait::NoWait), Err(Error::NoGroup(_))),
        "the group is checked before max"
    );
    let mut g = b.consumer("t", "g", 0).unwrap();
    assert!(matches!(g.poll(0, Wait::NoWait), Err(Error::Invalid(_))));
    assert!(matches!(g.nack_ms(-1), Err(Error::Invalid(_))));
    let mut c = b.consumer("t", "g", 5).unwrap();
    assert!(matches!(c.poll(1, Wait::NoWait), Err(Error::Partition(_))));
    assert!(matches!(
        c.nack_ms(-1),
        Err(Error::Partition(_)) | Err(Error::Invalid(_))
    ));
    assert!(matches!(
        b.partition_info("t", -1),
        Err(Error::Partition(_))
    ));
    assert!(matches!(mq::key_partition(b"k", 0), Err(Error::Invalid(_))));
    assert!(matches!(mq::round_robin(4, 2, 2), Err(Error::Invalid(_))));
    let big = vec![0u8; 2 << 20];
    assert!(matches!(
        b.publish("t", Record::new(&big), Wait::NoWait),
        Err(Error::TooLarge(_))
    ));
    for e in [Error::Invalid("x".into()), Error::new(Status(999), "later")] {
        assert!(!e.message().is_empty());
    }
    assert_eq!(Error::new(Status(999), "m").status(), Status(999));
    assert_eq!(Status(999).name(), "MQ_UNKNOWN_STATUS");
}

#[test]
fn nack_and_lease_expiry_redeliver_with_counts() {
    let (b, clock) = setup(1, 8);
    for p in ["a", "b"] {
        b.publish("t", Record::new(p.as_bytes()), Wait::NoWait)
            .unwrap();
    }
    let mut c = b.consumer("t", "g", 0).unwrap();
    c.poll(10, Wait::NoWait)
        .unwrap()
        .nack(Duration::ZERO)
        .unwrap();
    let batch = c.poll(10, Wait::NoWait).unwrap();
    assert_eq!(payloads(&batch), ["a", "b"]);
    assert_eq!(batch.messages()[0].delivery_count(), 2);
    batch.extend_lease().unwrap();
    drop(batch); // left in flight
    clock.advance(Duration::from_secs(31));
    let batch = c.poll(10, Wait::NoWait).unwrap();
    assert_eq!(
        batch.messages()[1].delivery_count(),
        3,
        "the lease ran out: redelivered"
    );
    batch.nack(Duration::from_secs(5)).unwrap();
    let info = b.group_info("t", "g", 0).unwrap();
    assert_eq!(info.paused_until_ns, Some(clock.now_ns() + 5_000_000_000));
    assert!(matches!(c.poll(10, Wait::NoWait), Err(Error::Timeout(_))));
    clock.advance(Duration::from_secs(5));
    let batch = c.poll(1, Wait::NoWait).unwrap();
    assert_eq!(payloads(&batch), ["a"]);
    batch.ack_through(0).unwrap();
    c.ack(1).unwrap_err(); // 1 was never handed out by that last poll of max 1
    assert!(matches!(c.extend_lease(), Err(Error::NotInFlight(_))));
}

#[test]
fn seek_replays_and_skips() {
    let (b, _) = setup(1, 8);
    for p in ["a", "b", "c"] {
        b.publish("t", Record::new(p.as_bytes()), Wait::NoWait)
            .unwrap();
    }
    b.subscribe_group("t", "late", &GroupOptions::new().start(Start::Earliest))
        .unwrap();
    let mut c = b.consumer("t", "late", 0).unwrap();
    c.seek(SeekTo::Offset(1)).unwrap();
    assert_eq!(payloads(&c.poll(10, Wait::NoWait).unwrap()), ["b", "c"]);
    c.seek(SeekTo::Earliest).unwrap();
    assert_eq!(
        payloads(&c.poll(10, Wait::NoWait).unwrap()),
        ["a", "b", "c"]
    );
    c.seek(SeekTo::End).unwrap();
    assert!(matches!(c.poll(10, Wait::NoWait), Err(Error::Timeout(_))));
    assert!(matches!(
        c.seek(SeekTo::Offset(99)),
        Err(Error::OutOfRange(_))
    ));
}

#[test]
fn batch_publish_is_partial_on_full_and_reports_each_record() {
    let (b, _) = setup(1, 2);
    let recs = [Record::new(b"a"), Record::new(b"b"), Record::new(b"c")];
    let mut res = [Published::default(); 3];
    let e = b
        .publish_batch_with("t", &recs, Wait::NoWait, None, &mut res)
        .unwrap_err();
    assert_eq!(e.published, 2);
    assert!(matches!(e.error, Error::Full(_)));
    assert_eq!(res.map(|r| r.offset), [0, 1, -1]);
    let mut c = b.consumer("t", "g", 0).unwrap();
    c.poll(10, Wait::NoWait).unwrap().ack().unwrap();
    b.publish_batch("t", &recs[2..], Wait::NoWait).unwrap();
    b.publish_batch("t", &[], Wait::NoWait).unwrap();
    let e = b
        .publish_batch_with("t", &recs, Wait::NoWait, None, &mut res[..1])
        .unwrap_err();
    assert!(matches!(e.error, Error::Invalid(_)));
    let e: Error = b
        .publish_batch("nope", &recs, Wait::NoWait)
        .unwrap_err()
        .into();
    assert!(matches!(e, Error::NoTopic(_)));
}

#[test]
fn introspection_lists_and_helpers() {
    let (b, clock) = setup(2, 4);
    b.create_topic(
        "u",
        &TopicConfig::new()
            .partitions(3)
            .capacity(9)
            .max_bytes(100)
            .ack_timeout_ms(500)
            .retention(Retention::Bounded)
            .max_age(Duration::from_secs(60)),
    )
    .unwrap();
    let i = b.topic_info("u").unwrap();
    assert_eq!((i.partitions, i.capacity, i.max_bytes), (3, 9, 100));
    assert_eq!(i.ack_timeout, Duration::from_millis(500));
    assert_eq!(
        (i.retention, i.max_age),
        (Retention::Bounded, Some(Duration::from_secs(60)))
    );
    assert_eq!(b.topics().unwrap(), ["t", "u"]);
    b.subscribe_group("t", "h", &GroupOptions::new()).unwrap();
    assert_eq!(b.groups("t").unwrap(), ["g", "h"]);
    b.publish("t", Record::new(b"xyz").key(b"k"), Wait::NoWait)
        .unwrap();
    let p = mq::key_partition(b"k", 2).unwrap();
    clock.advance(Duration::from_millis(7));
    let pi = b.partition_info("t", p).unwrap();
    assert_eq!(
        (pi.start, pi.end, pi.backlog, pi.retained_bytes),
        (0, 1, 1, 4)
    );
    assert_eq!(pi.oldest_age, Some(Duration::from_millis(7)));
    let gi = b.group_info("t", "g", p).unwrap();
    assert_eq!((gi.committed, gi.next, gi.lag, gi.in_flight), (0, 0, 1, 0));
    assert_eq!(gi.next_age, Some(Duration::from_millis(7)));
    assert_eq!(mq::murmur2(b"21"), -973932308);
    assert_eq!(mq::murmur2(b"foobar"), -790332482);
    assert_eq!(mq::round_robin(5, 2, 0).unwrap(), [0, 2, 4]);
    // The library linked is the one whose header the bindings were generated from.
    let header = std::ffi::CStr::from_bytes_with_nul(mq_sys::MQ_VERSION_STRING).unwrap();
    assert_eq!(mq::version(), header.to_str().unwrap());
    assert!(mq::version().starts_with("1."));
    assert_eq!(mq::version_number(), mq_sys::MQ_VERSION_NUMBER);
    b.unsubscribe_group("t", "h").unwrap();
    assert_eq!(b.groups("t").unwrap(), ["g"]);
    b.close().unwrap();
    assert!(matches!(
        b.publish("t", Record::new(b"x"), Wait::NoWait),
        Err(Error::Closed(_))
    ));
    assert_eq!(b.topics().unwrap(), ["t", "u"], "lists work after close");
}

#[test]
fn dead_letters_say_where_they_came_from() {
    let (b, _) = setup(1, 8);
    b.create_topic("dlq", &TopicConfig::new()).unwrap();
    b.subscribe_group("dlq", "ops", &GroupOptions::new())
        .unwrap();
    b.subscribe_group(
        "t",
        "picky",
        &GroupOptions::new()
            .start(Start::Earliest)
            .max_deliveries(1, "dlq"),
    )
    .unwrap();
    b.publish("t", Record::new(b"poison").key(b"k"), Wait::NoWait)
        .unwrap();
    let mut c = b.consumer("t", "picky", 0).unwrap();
    c.poll(10, Wait::NoWait)
        .unwrap()
        .nack(Duration::ZERO)
        .unwrap();
    assert!(matches!(c.poll(10, Wait::NoWait), Err(Error::Timeout(_))));
    let mut ops = b.consumer("dlq", "ops", 0).unwrap();
    let batch = ops.poll(10, Wait::NoWait).unwrap();
    let m = &batch.messages()[0];
    assert_eq!(m.payload(), b"poison");
    let d = m.dead_letter().expect("a dead letter");
    assert!(m
        .headers()
        .any(|(n, v)| n == b"mq.dead_letter.group" && v == b"picky"));
    assert_eq!(
        (d.topic, d.group, d.partition, d.offset, d.delivery_count),
        ("t", "picky", 0, 0, 1)
    );
    assert_eq!(m.detach().dead_letter.unwrap().group, "picky");
}

/// Batches are copies: another consumer's ack, a member of the group, an unsubscribe and the
/// log trimmed and overwritten behind a batch leave what it reads as it was.
#[test]
fn a_batch_outlives_acks_unsubscribe_and_trimming_by_others() {
    let (b, _) = setup(2, 8);
    let hdrs = [Header::new(b"h", b"v")];
    b.publish(
        "t",
        Record::new(b"a").key(b"user-b").headers(&hdrs),
        Wait::NoWait,
    )
    .unwrap();
    let mut c = b.consumer("t", "g", 0).unwrap();
    let mut twin = b.consumer("t", "g", 0).unwrap();
    let _other = b.consumer("t", "g", 1).unwrap();
    let batch = c.poll(10, Wait::NoWait).unwrap();
    // The twin acks what the batch holds: the log may drop it now.
    twin.ack(0).unwrap();
    let m = b.join("t", "g", &mq::MemberOptions::new()).unwrap();
    drop(m);
    b.unsubscribe_group("t", "g").unwrap();
    // With no group left, publishes trim the log and reuse its slots.
    for i in 0..20u8 {
        b.publish("t", Record::new(&[i; 64]).key(b"user-b"), Wait::NoWait)
            .unwrap();
    }
    let m = &batch.messages()[0];
    assert_eq!((m.offset(), m.payload()), (0, &b"a"[..]));
    assert_eq!(m.key(), Some(&b"user-b"[..]));
    assert_eq!(m.headers().collect::<Vec<_>>(), [(&b"h"[..], &b"v"[..])]);
    drop(batch);
    assert!(matches!(c.poll(1, Wait::NoWait), Err(Error::NoGroup(_))));
}

/// The consumer's buffer starts small: a batch it cut short makes it grow (the next batches
/// are whole), and a message larger than it (MQ_ERR_TOO_LARGE inside) makes it grow to that
/// message's size, polled again without acking twice; everything arrives once, in order.
#[test]
fn the_copy_buffer_grows_for_batches_and_large_messages() {
    let (b, _) = setup(1, 512);
    for i in 0..300u32 {
        b.publish("t", Record::new(&[i as u8; 1000]), Wait::NoWait)
            .unwrap();
    }
    let big = vec![7u8; 1 << 20];
    b.publish("t", Record::new(&big), Wait::NoWait).unwrap();
    b.publish("t", Record::new(b"after"), Wait::NoWait).unwrap();
    let mut c = b.consumer("t", "g", 0).unwrap();
    let mut next = 0u32;
    let mut sizes = Vec::new();
    let mut batch = c.poll(100, Wait::NoWait).unwrap();
    while next < 300 {
        sizes.push(batch.len());
        for m in &batch {
            assert_eq!(m.payload(), &[next as u8; 1000][..]);
            next += 1;
        }
        batch = batch.ack_and_poll(100, Wait::NoWait).unwrap();
    }
    assert_eq!(next, 300);
    assert!(
        sizes[0] < 100,
        "the first buffer held {} of 1000 bytes",
        sizes[0]
    );
    // Cut short once, then whole (the last batch holds what was left of the 300).
    assert_eq!(sizes[1..], [100, 100, 100 - sizes[0]], "{sizes:?}");
    // The ack travelled with the poll that met the big message; it was not repeated.
    assert_eq!(batch.messages()[0].payload(), &big[..]);
    let batch = batch.ack_and_poll(100, Wait::NoWait).unwrap();
    assert_eq!(batch.messages()[0].payload(), b"after");
    assert_eq!(batch.messages()[0].offset(), 301);
    batch.ack().unwrap();
    assert_eq!(b.group_info("t", "g", 0).unwrap().committed, 302);
}

#[test]
fn headers_come_back_in_order_as_an_iterator() {
    let (b, _) = setup(1, 8);
    let hdrs = [
        Header::new(b"trace", b"42"),
        Header::new(b"trace", b""),
        Header::new(b"", b"v"),
    ];
    b.publish("t", Record::new(b"o-1").headers(&hdrs), Wait::NoWait)
        .unwrap();
    let mut c = b.consumer("t", "g", 0).unwrap();
    let batch = c.poll(10, Wait::NoWait).unwrap();
    let m = &batch.messages()[0];
    let h: Vec<(&[u8], &[u8])> = m.headers().collect();
    assert_eq!(
        h,
        vec![
            (&b"trace"[..], &b"42"[..]),
            (&b"trace"[..], &b""[..]),
            (&b""[..], &b"v"[..])
        ]
    );
    assert_eq!(m.headers().len(), 3);
    assert_eq!(m.detach().headers[0], (b"trace".to_vec(), b"42".to_vec()));
}
