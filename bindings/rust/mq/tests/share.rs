//! Share groups (library 1.6): `GroupOptions::share` makes a group a task queue whose
//! consumers all poll the same partition, each message acquired under its own lock and settled
//! on its own (`PartitionConsumer::settle`, `Batch::settle`), with the delivery count as the
//! acquisition's token; `GroupInfo`'s share fields.
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mq::{
    Broker, BrokerOptions, Error, GroupOptions, ManualClock, MemberOptions, Message,
    PartitionConsumer, Record, Settle, ShareMode, SubscriptionOptions, TopicConfig, Wait,
};

/// A broker on a manual clock with topic `t` (one partition, capacity 32, ack timeout 1 s),
/// topic `dlt`, and group `w` subscribed with `opts`.
fn setup(opts: GroupOptions) -> (Broker, ManualClock) {
    let clock = ManualClock::new();
    let b = Broker::with_options(&BrokerOptions::new().clock(&clock)).unwrap();
    b.create_topic(
        "t",
        &TopicConfig::new()
            .partitions(1)
            .capacity(32)
            .ack_timeout(Duration::from_secs(1)),
    )
    .unwrap();
    b.create_topic("dlt", &TopicConfig::new().partitions(1))
        .unwrap();
    b.subscribe_group("t", "w", &opts).unwrap();
    (b, clock)
}

fn shared() -> GroupOptions {
    GroupOptions::new().share(ShareMode::All)
}

fn publish(b: &Broker, payloads: &[&str]) {
    for p in payloads {
        b.publish("t", Record::new(p.as_bytes()), Wait::NoWait)
            .unwrap();
    }
}

fn publish_keyed(b: &Broker, msgs: &[(&str, &str)]) {
    for (k, p) in msgs {
        b.publish(
            "t",
            Record::new(p.as_bytes()).key(k.as_bytes()),
            Wait::NoWait,
        )
        .unwrap();
    }
}

/// (offset, delivery count, payload) of each message of a poll of `max`; empty on a timeout.
fn take(c: &mut PartitionConsumer, max: usize) -> Vec<(i64, u32, String)> {
    match c.poll(max, Wait::NoWait) {
        Ok(batch) => batch
            .iter()
            .map(|m| {
                (
                    m.offset(),
                    m.delivery_count(),
                    String::from_utf8_lossy(m.payload()).into_owned(),
                )
            })
            .collect(),
        Err(Error::Timeout(_)) => Vec::new(),
        Err(e) => panic!("poll: {e:?}"),
    }
}

fn offsets(v: &[(i64, u32, String)]) -> Vec<i64> {
    v.iter().map(|m| m.0).collect()
}

fn not_in_flight(r: mq::Result<()>) -> String {
    match r {
        Err(Error::NotInFlight(m)) => m,
        other => panic!("expected NotInFlight, got {other:?}"),
    }
}

#[test]
fn two_consumers_acquire_disjoint_messages_of_one_partition() {
    let (b, _) = setup(shared());
    b.subscribe_group("t", "ordered", &GroupOptions::new())
        .unwrap();
    publish(&b, &["a", "b", "c", "d", "e"]);
    let mut one = b.consumer("t", "w", 0).unwrap();
    let mut two = b.consumer("t", "w", 0).unwrap();
    let first = take(&mut one, 2);
    assert_eq!(offsets(&first), [0, 1]);
    assert!(first.iter().all(|m| m.1 == 1));
    // The second consumer is not held behind the first one's lease: it gets what is left.
    assert_eq!(offsets(&take(&mut two, 2)), [2, 3]);
    assert_eq!(offsets(&take(&mut one, 10)), [4]);
    assert!(take(&mut two, 10).is_empty());
    let i = b.group_info("t", "w", 0).unwrap();
    assert_eq!((i.committed, i.next, i.in_flight), (0, 5, 5));
    assert_eq!(
        (i.acquired, i.available, i.delayed, i.rejected),
        (5, 0, 0, 0)
    );
    assert_eq!(i.delivered, [5, 0, 0, 0]);
    // Settled out of order, by whichever consumer: the frontier is the oldest unsettled one.
    two.settle(3, 1, Settle::Accept).unwrap();
    one.settle(1, 1, Settle::Accept).unwrap();
    assert_eq!(b.group_info("t", "w", 0).unwrap().committed, 0);
    // A settlement names the message, not the consumer that polled it.
    two.settle(0, 1, Settle::Accept).unwrap();
    let i = b.group_info("t", "w", 0).unwrap();
    assert_eq!((i.committed, i.acquired), (2, 2));
    // An ordered group beside it is untouched.
    let mut o = b.consumer("t", "ordered", 0).unwrap();
    assert_eq!(offsets(&take(&mut o, 10)), [0, 1, 2, 3, 4]);
    let oi = b.group_info("t", "ordered", 0).unwrap();
    assert_eq!((oi.acquired, oi.available, oi.rejected), (0, 0, 0));
    assert_eq!(oi.oldest_unsettled_age, None);
}

#[test]
fn many_workers_on_one_partition_handle_every_message_once() {
    let b = Broker::new().unwrap();
    // Locks far longer than the test: nothing is handed out twice.
    b.create_topic(
        "jobs",
        &TopicConfig::new()
            .partitions(1)
            .capacity(1000)
            .ack_timeout(Duration::from_secs(600)),
    )
    .unwrap();
    b.subscribe_group("jobs", "workers", &shared().max_acquired(8))
        .unwrap();
    const N: usize = 400;
    for i in 0..N {
        b.publish("jobs", Record::new(&(i as u32).to_le_bytes()), Wait::NoWait)
            .unwrap();
    }
    let done = Arc::new(AtomicUsize::new(0));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let workers: Vec<_> = (0..4)
        .map(|_| {
            let (b, done, seen) = (b.clone(), done.clone(), seen.clone());
            std::thread::spawn(move || {
                let mut c = b.consumer("jobs", "workers", 0).unwrap();
                let mut mine = 0;
                while done.load(Ordering::SeqCst) < N {
                    let batch = match c.poll(3, Duration::from_millis(20)) {
                        Ok(batch) => batch,
                        Err(Error::Timeout(_)) => continue,
                        Err(e) => panic!("{e:?}"),
                    };
                    for m in &batch {
                        assert_eq!(m.delivery_count(), 1);
                        seen.lock().unwrap().push(m.offset());
                        batch.settle(m, Settle::Accept).unwrap();
                        done.fetch_add(1, Ordering::SeqCst);
                        mine += 1;
                    }
                }
                mine
            })
        })
        .collect();
    let per_worker: Vec<usize> = workers.into_iter().map(|w| w.join().unwrap()).collect();
    assert_eq!(per_worker.iter().sum::<usize>(), N);
    let mut seen = seen.lock().unwrap().clone();
    seen.sort_unstable();
    assert_eq!(seen, (0..N as i64).collect::<Vec<_>>());
    let i = b.group_info("jobs", "workers", 0).unwrap();
    assert_eq!((i.committed, i.acquired, i.available), (N as i64, 0, 0));
}

#[test]
fn max_acquired_caps_what_is_held_at_once() {
    let (b, _) = setup(shared().max_acquired(2));
    publish(&b, &["a", "b", "c"]);
    let mut c = b.consumer("t", "w", 0).unwrap();
    assert_eq!(offsets(&take(&mut c, 10)), [0, 1]);
    assert!(take(&mut c, 10).is_empty());
    let i = b.group_info("t", "w", 0).unwrap();
    assert_eq!((i.acquired, i.available), (2, 1));
    c.settle(1, 1, Settle::Accept).unwrap();
    assert_eq!(offsets(&take(&mut c, 10)), [2]);
}

#[test]
fn accept_is_final_and_a_second_settlement_is_refused() {
    let (b, _) = setup(shared());
    publish(&b, &["a"]);
    let mut c = b.consumer("t", "w", 0).unwrap();
    assert_eq!(take(&mut c, 10), [(0, 1, "a".into())]);
    c.settle(0, 1, Settle::Accept).unwrap();
    assert!(take(&mut c, 10).is_empty());
    let e = not_in_flight(c.settle(0, 1, Settle::Accept));
    assert_eq!(
        e,
        "cannot accept offset 0 of partition 0 for share group w with delivery count 1: it is settled"
    );
    let e = not_in_flight(c.settle(7, 1, Settle::Release));
    assert!(e.contains("it is not published"), "{e}");
    let i = b.group_info("t", "w", 0).unwrap();
    assert_eq!((i.committed, i.next, i.acquired), (1, 1, 0));
}

#[test]
fn release_hands_out_again_and_fences_the_old_delivery_count() {
    let (b, _) = setup(shared());
    publish(&b, &["a", "b"]);
    let mut c = b.consumer("t", "w", 0).unwrap();
    assert_eq!(offsets(&take(&mut c, 10)), [0, 1]);
    c.settle(1, 1, Settle::Release).unwrap();
    let i = b.group_info("t", "w", 0).unwrap();
    assert_eq!((i.acquired, i.available), (1, 1));
    assert_eq!(take(&mut c, 10), [(1, 2, "b".into())]);
    // The first acquisition's token is stale now.
    let e = not_in_flight(c.settle(1, 1, Settle::Accept));
    assert!(e.contains("another poll acquired it since"), "{e}");
    assert_eq!(b.group_info("t", "w", 0).unwrap().delivered, [1, 1, 0, 0]);
    c.settle(1, 2, Settle::Accept).unwrap();
    c.settle(0, 1, Settle::Accept).unwrap();
    assert_eq!(b.group_info("t", "w", 0).unwrap().committed, 2);
}

#[test]
fn release_after_a_delay_waits_for_the_clock() {
    let (b, clock) = setup(shared());
    publish(&b, &["a", "b"]);
    let mut c = b.consumer("t", "w", 0).unwrap();
    {
        let batch = c.poll(10, Wait::NoWait).unwrap();
        let m = &batch.messages()[0];
        batch.release_after(m, Duration::from_millis(500)).unwrap();
    }
    let i = b.group_info("t", "w", 0).unwrap();
    assert_eq!((i.acquired, i.available, i.delayed), (1, 0, 1));
    assert!(take(&mut c, 10).is_empty());
    clock.advance(Duration::from_millis(499));
    assert!(take(&mut c, 10).is_empty());
    clock.advance(Duration::from_millis(1));
    assert_eq!(take(&mut c, 10), [(0, 2, "a".into())]);
    // A delay goes with a release only; a negative one is refused too.
    let e = c.settle_ms(0, 2, Settle::Renew, 5).unwrap_err();
    assert!(matches!(e, Error::Invalid(_)), "{e:?}");
    assert_eq!(
        e.message(),
        "delay_ms is 5; only MQ_SETTLE_RELEASE takes a delay"
    );
    let e = c.settle_ms(0, 2, Settle::Release, -1).unwrap_err();
    assert!(matches!(e, Error::Invalid(_)), "{e:?}");
    // Both refusals left the acquisition as it was.
    c.settle(0, 2, Settle::Accept).unwrap();
}

#[test]
fn reject_without_a_dead_letter_topic_drops_and_counts() {
    let (b, _) = setup(shared());
    publish(&b, &["poison", "fine"]);
    let mut c = b.consumer("t", "w", 0).unwrap();
    {
        let batch = c.poll(10, Wait::NoWait).unwrap();
        for m in &batch {
            let action = if m.payload() == b"poison" {
                Settle::Reject
            } else {
                Settle::Accept
            };
            batch.settle(m, action).unwrap();
        }
    }
    let i = b.group_info("t", "w", 0).unwrap();
    assert_eq!((i.committed, i.rejected, i.dead_lettered), (2, 1, 0));
    assert!(take(&mut c, 10).is_empty());
    assert_eq!(b.partition_info("dlt", 0).unwrap().end, 0);
}

#[test]
fn reject_goes_to_the_dead_letter_topic_with_its_origin() {
    let (b, _) = setup(shared().max_deliveries(2, "dlt"));
    b.subscribe_group(
        "dlt",
        "reader",
        &GroupOptions::new().start(mq::Start::Earliest),
    )
    .unwrap();
    publish(&b, &["poison", "flaky"]);
    let mut c = b.consumer("t", "w", 0).unwrap();
    assert_eq!(offsets(&take(&mut c, 10)), [0, 1]);
    c.settle(0, 1, Settle::Reject).unwrap();
    // max_deliveries: released twice, the third hand-out is a dead letter instead.
    c.settle(1, 1, Settle::Release).unwrap();
    assert_eq!(take(&mut c, 10), [(1, 2, "flaky".into())]);
    c.settle(1, 2, Settle::Release).unwrap();
    assert!(take(&mut c, 10).is_empty());
    let i = b.group_info("t", "w", 0).unwrap();
    assert_eq!((i.rejected, i.dead_lettered, i.committed), (1, 2, 2));

    let mut r = b.consumer("dlt", "reader", 0).unwrap();
    let batch = r.poll(10, Wait::NoWait).unwrap();
    let got: Vec<_> = batch
        .iter()
        .map(|m| {
            let d = m.dead_letter().expect("a dead letter");
            (
                m.payload().to_vec(),
                d.topic,
                d.group,
                d.partition,
                d.offset,
                d.delivery_count,
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            (b"poison".to_vec(), "t", "w", 0, 0, 1),
            (b"flaky".to_vec(), "t", "w", 0, 1, 2),
        ]
    );
}

#[test]
fn a_lock_that_runs_out_makes_the_message_available_and_renew_restarts_it() {
    let (b, clock) = setup(shared());
    publish(&b, &["a", "b"]);
    let mut one = b.consumer("t", "w", 0).unwrap();
    let mut two = b.consumer("t", "w", 0).unwrap();
    assert_eq!(offsets(&take(&mut one, 10)), [0, 1]);
    clock.advance(Duration::from_millis(600));
    one.settle(0, 1, Settle::Renew).unwrap();
    // At 1 s offset 1's lock runs out; offset 0's was renewed at 600 ms (until 1.6 s).
    clock.advance(Duration::from_millis(400));
    assert_eq!(take(&mut two, 10), [(1, 2, "b".into())]);
    let e = not_in_flight(one.settle(1, 1, Settle::Accept));
    assert!(e.contains("another poll acquired it since"), "{e}");
    let i = b.group_info("t", "w", 0).unwrap();
    assert_eq!(i.delivered, [1, 1, 0, 0]);
    assert_eq!(i.oldest_unsettled_age, Some(Duration::from_secs(1)));
    clock.advance(Duration::from_millis(600));
    assert_eq!(take(&mut two, 10), [(0, 2, "a".into())]);
    let e = not_in_flight(one.settle(0, 1, Settle::Accept));
    assert!(e.contains("another poll acquired it since"), "{e}");
    two.settle(0, 2, Settle::Accept).unwrap();
    two.settle(1, 2, Settle::Accept).unwrap();
    let i = b.group_info("t", "w", 0).unwrap();
    assert_eq!((i.committed, i.acquired), (2, 0));
    assert_eq!(i.oldest_unsettled_age, None);
    assert_eq!(i.delivered, [0, 0, 0, 0]);
}

#[test]
fn an_expired_lock_is_refused_until_acquired_again() {
    let (b, clock) = setup(shared());
    publish(&b, &["a"]);
    let mut c = b.consumer("t", "w", 0).unwrap();
    assert_eq!(offsets(&take(&mut c, 10)), [0]);
    clock.advance(Duration::from_secs(1));
    let e = not_in_flight(c.settle(0, 1, Settle::Accept));
    assert!(e.contains("its lock ran out"), "{e}");
    let i = b.group_info("t", "w", 0).unwrap();
    assert_eq!((i.acquired, i.available), (0, 1));
}

#[test]
fn key_shared_hands_out_one_message_per_key_at_a_time_in_order() {
    let (b, _) = setup(GroupOptions::new().share(ShareMode::Key));
    b.subscribe_group("t", "all", &shared()).unwrap();
    publish_keyed(&b, &[("a", "a1"), ("a", "a2"), ("b", "b1"), ("a", "a3")]);
    publish(&b, &["n1"]);
    let mut one = b.consumer("t", "w", 0).unwrap();
    let mut two = b.consumer("t", "w", 0).unwrap();
    assert_eq!(
        take(&mut one, 10)
            .into_iter()
            .map(|m| m.2)
            .collect::<Vec<_>>(),
        ["a1", "b1", "n1"]
    );
    // a2 waits for a1, whoever polls.
    assert!(take(&mut two, 10).is_empty());
    one.settle(0, 1, Settle::Release).unwrap();
    assert_eq!(take(&mut two, 10), [(0, 2, "a1".into())]);
    two.settle(0, 2, Settle::Accept).unwrap();
    assert_eq!(take(&mut one, 10), [(1, 1, "a2".into())]);
    one.settle(1, 1, Settle::Accept).unwrap();
    assert_eq!(take(&mut two, 10), [(3, 1, "a3".into())]);
    // An all-shared group on the same messages hands out every key's messages at once.
    let mut c = b.consumer("t", "all", 0).unwrap();
    assert_eq!(offsets(&take(&mut c, 10)), [0, 1, 2, 3, 4]);
}

#[test]
fn ack_accepts_one_message_and_nack_releases_everything_held() {
    let (b, _) = setup(shared());
    publish(&b, &["a", "b", "c"]);
    let mut one = b.consumer("t", "w", 0).unwrap();
    let mut two = b.consumer("t", "w", 0).unwrap();
    {
        // Batch::ack acks the batch's last offset: in a share group that accepts it alone.
        let batch = one.poll(2, Wait::NoWait).unwrap();
        assert_eq!(batch.last_offset(), Some(1));
        batch.ack().unwrap();
    }
    let i = b.group_info("t", "w", 0).unwrap();
    assert_eq!((i.committed, i.acquired), (0, 1));
    assert_eq!(offsets(&take(&mut two, 10)), [2]);
    // A nack releases what the group holds on the partition, the other consumer's too.
    one.nack(Duration::ZERO).unwrap();
    let i = b.group_info("t", "w", 0).unwrap();
    assert_eq!((i.acquired, i.available), (0, 2));
    not_in_flight(two.settle(2, 1, Settle::Accept));
    assert_eq!(take(&mut two, 10), [(0, 2, "a".into()), (2, 2, "c".into())]);
}

#[test]
fn share_options_are_refused_where_they_do_not_apply() {
    let (b, _) = setup(shared());
    // max_acquired needs a share group, and has a ceiling.
    let e = b
        .subscribe_group("t", "bad", &GroupOptions::new().max_acquired(5))
        .unwrap_err();
    assert!(matches!(e, Error::Invalid(_)), "{e:?}");
    assert!(e.message().contains("not a share group"), "{e}");
    let e = b
        .subscribe_group("t", "big", &shared().max_acquired(1_000_001))
        .unwrap_err();
    assert!(matches!(e, Error::Invalid(_)), "{e:?}");
    b.subscribe_group("t", "max", &shared().max_acquired(1_000_000))
        .unwrap();
    // An ordered group has nothing to settle.
    b.subscribe_group("t", "ordered", &GroupOptions::new())
        .unwrap();
    publish(&b, &["a"]);
    let mut o = b.consumer("t", "ordered", 0).unwrap();
    assert_eq!(offsets(&take(&mut o, 10)), [0]);
    let e = o.settle(0, 1, Settle::Accept).unwrap_err();
    assert!(matches!(e, Error::Invalid(_)), "{e:?}");
    assert_eq!(
        e.message(),
        "group ordered is not a share group (mq_group_options.share): ack it with mq_group_ack"
    );
    // Unknown group, partition out of range.
    let e = b
        .consumer("t", "nobody", 0)
        .unwrap()
        .settle(0, 1, Settle::Accept)
        .unwrap_err();
    assert!(matches!(e, Error::NoGroup(_)), "{e:?}");
    let e = b
        .consumer("t", "w", 3)
        .unwrap()
        .settle(0, 1, Settle::Accept)
        .unwrap_err();
    assert!(matches!(e, Error::Partition(_)), "{e:?}");
    // Push subscriptions and members take partitions exclusively: not a share group.
    let e = b
        .subscribe("t", "w", &SubscriptionOptions::new(), |_: &Message<'_>| {
            Ok::<(), String>(())
        })
        .unwrap_err();
    assert!(matches!(e, Error::Invalid(_)), "{e:?}");
    let e = b.join("t", "w", &MemberOptions::new()).unwrap_err();
    assert!(matches!(e, Error::Invalid(_)), "{e:?}");
}

#[test]
fn a_closed_broker_refuses_settlements() {
    let (b, _) = setup(shared());
    publish(&b, &["a"]);
    let mut c = b.consumer("t", "w", 0).unwrap();
    assert_eq!(offsets(&take(&mut c, 10)), [0]);
    b.close().unwrap();
    let e = c.settle(0, 1, Settle::Accept).unwrap_err();
    assert!(matches!(e, Error::Closed(_)), "{e:?}");
}

#[test]
fn the_default_options_are_an_ordered_group() {
    assert_eq!(ShareMode::default(), ShareMode::None);
    assert_eq!(
        GroupOptions::new(),
        GroupOptions::new().share(ShareMode::None).max_acquired(0)
    );
    let (b, _) = setup(GroupOptions::new());
    publish(&b, &["a", "b"]);
    let mut one = b.consumer("t", "w", 0).unwrap();
    let mut two = b.consumer("t", "w", 0).unwrap();
    assert_eq!(offsets(&take(&mut one, 1)), [0]);
    // An ordered group hands the partition out in order: the next poll goes on after 0.
    assert_eq!(offsets(&take(&mut two, 1)), [1]);
    let i = b.group_info("t", "w", 0).unwrap();
    assert_eq!(
        (i.acquired, i.available, i.delayed, i.rejected),
        (0, 0, 0, 0)
    );
    assert_eq!(i.delivered, [0, 0, 0, 0]);
}

// mq_share_settle and the share fields are 1.6's: the header the bindings were generated from
// has them, and the library linked must have them too.
const _: () = assert!(mq_sys::MQ_VERSION_NUMBER >= 1_006_000);

#[test]
fn the_library_has_share_groups() {
    assert!(mq::version_number() >= 1_006_000, "{}", mq::version());
}
