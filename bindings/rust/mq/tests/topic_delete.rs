//! Deleting a topic (library 1.1): waiting calls wake with NoTopic, consumers, members and
//! subscriptions of it fail or stop without UB, a batch of the topic (a copy) stays readable,
//! and a topic created anew under the name is new.
mod common;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::thread;
use std::time::Duration;

use common::{eventually, setup};
use mq::{
    Error, GroupOptions, MemberOptions, Message, Record, SubscriptionOptions, TopicConfig, Wait,
};

const LONG: Duration = Duration::from_secs(10);

#[test]
fn waiting_publishes_and_polls_wake_with_no_topic() {
    let (b, _) = setup(1, 1);
    b.subscribe_group("t", "h", &GroupOptions::new()).unwrap();
    b.publish("t", Record::new(b"a"), Wait::NoWait).unwrap(); // full
    let b2 = b.clone();
    let publisher = thread::spawn(move || b2.publish("t", Record::new(b"b"), Wait::Forever));
    let b3 = b.clone();
    let poller = thread::spawn(move || {
        let mut c = b3.consumer("t", "h", 0).unwrap();
        drop(c.poll(1, Wait::NoWait).unwrap()); // takes "a": the next poll waits
        c.poll(1, Wait::Forever).map(|batch| batch.len())
    });
    eventually("the publisher waits", || {
        b.partition_info("t", 0).unwrap().producer_waits > 0
    });
    eventually("the poller took a", || {
        b.group_info("t", "h", 0).unwrap().next == 1
    });
    b.delete_topic("t").unwrap();
    assert!(matches!(publisher.join().unwrap(), Err(Error::NoTopic(_))));
    assert!(matches!(poller.join().unwrap(), Err(Error::NoTopic(_))));
}

#[test]
fn a_batch_of_the_topic_stays_readable_after_the_deletion() {
    let (b, _) = setup(2, 8);
    b.subscribe_group("t", "h", &GroupOptions::new()).unwrap();
    b.create_topic("u", &TopicConfig::new()).unwrap();
    b.subscribe_group("u", "g", &GroupOptions::new()).unwrap();
    for k in [&b"a"[..], b"b", b"c", b"d"] {
        b.publish("t", Record::new(k).key(k), Wait::NoWait).unwrap();
    }
    b.publish("u", Record::new(b"u"), Wait::NoWait).unwrap();
    let mut c = b.consumer("t", "h", 1).unwrap();
    let mut other = b.consumer("u", "g", 0).unwrap();
    {
        let ub = other.poll(10, Wait::NoWait).unwrap();
        let batch = c.poll(10, Wait::NoWait).unwrap();
        assert!(!batch.is_empty());
        let before: Vec<Vec<u8>> = batch.iter().map(|m| m.payload().to_vec()).collect();
        b.delete_topic("t").unwrap();
        // A new topic under the name takes memory the old one freed; the batch is a copy.
        b.create_topic("t", &TopicConfig::new()).unwrap();
        b.publish("t", Record::new(&[0xee; 64]), Wait::NoWait)
            .unwrap();
        let after: Vec<Vec<u8>> = batch.iter().map(|m| m.payload().to_vec()).collect();
        assert_eq!(before, after);
        drop(batch);
        assert_eq!(ub.messages()[0].payload(), b"u");
        ub.ack().unwrap();
    }
    b.delete_topic("t").unwrap();
    assert_eq!(b.topics().unwrap(), vec!["u".to_owned()]);
    // The consumer of the deleted topic fails, whatever it is asked.
    assert!(matches!(c.poll(10, Wait::NoWait), Err(Error::NoTopic(_))));
    assert!(matches!(c.ack(0), Err(Error::NoTopic(_))));
    assert!(matches!(
        c.ack_and_poll(0, 1, Wait::Forever),
        Err(Error::NoTopic(_))
    ));
    assert!(matches!(c.nack(Duration::ZERO), Err(Error::NoTopic(_))));
    assert!(matches!(c.seek(mq::SeekTo::End), Err(Error::NoTopic(_))));
    // The other topic's consumer goes on.
    b.publish("u", Record::new(b"u2"), Wait::NoWait).unwrap();
    let ub = other.poll(10, Wait::NoWait).unwrap();
    assert_eq!(ub.messages()[0].payload(), b"u2");
    assert!(matches!(b.delete_topic("t"), Err(Error::NoTopic(_))));
    assert!(matches!(b.delete_topic("bad/name"), Err(Error::Invalid(_))));
}

#[test]
fn a_topic_created_anew_is_new_and_the_consumer_follows_the_name() {
    let (b, _) = setup(1, 8);
    b.publish("t", Record::new(b"old"), Wait::NoWait).unwrap();
    let mut c = b.consumer("t", "g", 0).unwrap();
    drop(c.poll(10, Wait::NoWait).unwrap());
    b.delete_topic("t").unwrap();
    b.create_topic("t", &TopicConfig::new()).unwrap();
    assert!(b.groups("t").unwrap().is_empty());
    assert!(matches!(c.poll(10, Wait::NoWait), Err(Error::NoGroup(_))));
    b.subscribe_group("t", "g", &GroupOptions::new()).unwrap();
    b.publish("t", Record::new(b"new"), Wait::NoWait).unwrap();
    let batch = c.poll(10, Wait::NoWait).unwrap();
    assert_eq!(batch.len(), 1);
    assert_eq!(batch.messages()[0].offset(), 0);
    assert_eq!(batch.messages()[0].payload(), b"new");
    assert_eq!(batch.messages()[0].delivery_count(), 1);
}

#[test]
fn a_member_of_a_deleted_topic_fails_and_its_batches_stay_readable() {
    let (b, _) = setup(1, 8);
    let rebalances = Arc::new(AtomicUsize::new(0));
    let r = rebalances.clone();
    let m = b
        .join(
            "t",
            "w",
            &MemberOptions::new().on_rebalance(move |_| {
                r.fetch_add(1, Ordering::SeqCst);
            }),
        )
        .unwrap();
    b.publish("t", Record::new(b"copied").key(b"k"), Wait::NoWait)
        .unwrap();
    let batch = m.poll(10, Wait::NoWait).unwrap();
    b.delete_topic("t").unwrap();
    // A member's batch is a copy: readable after the deletion.
    assert_eq!(batch.messages()[0].payload(), b"copied");
    assert_eq!(batch.messages()[0].key(), Some(&b"k"[..]));
    assert!(matches!(
        batch.ack_and_poll(10, Wait::Forever),
        Err(Error::NoTopic(_))
    ));
    assert!(matches!(m.poll(10, Wait::Forever), Err(Error::NoTopic(_))));
    assert!(matches!(m.assignment(), Err(Error::NoTopic(_))));
    assert!(matches!(m.ack(0, 0), Err(Error::NoTopic(_))));
    assert!(matches!(m.extend_lease(0), Err(Error::NoTopic(_))));
    assert!(!m.id().is_empty());
    let seen = rebalances.load(Ordering::SeqCst);
    // A member joining the new topic of that name rebalances a new group: the old member's
    // callback is not called.
    b.create_topic("t", &TopicConfig::new()).unwrap();
    let m2 = b.join("t", "w", &MemberOptions::new()).unwrap();
    assert_eq!(m2.assignment().unwrap().partitions, vec![0]);
    assert_eq!(rebalances.load(Ordering::SeqCst), seen);
    m.close().unwrap();
    m2.close().unwrap();
}

#[test]
fn a_subscription_of_a_deleted_topic_stops_and_closes_as_usual() {
    let (b, _) = setup(1, 8);
    let (entered, wait_entered) = mpsc::channel();
    let (release, released) = mpsc::channel::<()>();
    let calls = Arc::new(AtomicUsize::new(0));
    let n = calls.clone();
    let sub = b
        .subscribe(
            "t",
            "push",
            &SubscriptionOptions::new(),
            move |m: &Message<'_>| {
                n.fetch_add(1, Ordering::SeqCst);
                if m.payload() == b"hold" {
                    entered.send(()).unwrap();
                    released.recv_timeout(LONG).unwrap();
                    // The message is valid until the handler returns, deletion or not.
                    assert_eq!(m.payload(), b"hold");
                }
                Ok::<(), String>(())
            },
        )
        .unwrap();
    b.publish("t", Record::new(b"hold"), Wait::NoWait).unwrap();
    wait_entered.recv_timeout(LONG).unwrap();
    // Deleting does not wait for the running handler.
    b.delete_topic("t").unwrap();
    release.send(()).unwrap();
    b.create_topic("t", &TopicConfig::new()).unwrap();
    b.subscribe_group("t", "push", &GroupOptions::new())
        .unwrap();
    b.publish("t", Record::new(b"after"), Wait::NoWait).unwrap();
    sub.close().unwrap();
    assert_eq!(
        calls.load(Ordering::SeqCst),
        1,
        "no handler call after the deletion"
    );
}

#[test]
fn deleting_from_inside_a_handler_works() {
    let (b, _) = setup(1, 8);
    b.create_topic("other", &TopicConfig::new()).unwrap();
    let (tx, rx) = mpsc::channel();
    let b2 = b.clone();
    let sub = b
        .subscribe(
            "t",
            "push",
            &SubscriptionOptions::new(),
            move |_: &Message<'_>| {
                tx.send((b2.delete_topic("other"), b2.delete_topic("t")))
                    .unwrap();
                Ok::<(), String>(())
            },
        )
        .unwrap();
    b.publish("t", Record::new(b"x"), Wait::NoWait).unwrap();
    let (a, own) = rx.recv_timeout(LONG).unwrap();
    assert_eq!(a, Ok(()));
    assert_eq!(own, Ok(()));
    sub.close().unwrap();
    assert!(b.topics().unwrap().is_empty());
}

/// Every drop order of a broker clone, consumer, member and subscription on a deleted topic,
/// with the broker's last clone among them: nothing crashes or hangs.
#[test]
fn every_drop_order_after_a_deletion() {
    fn perms(n: usize) -> Vec<Vec<usize>> {
        if n == 0 {
            return vec![vec![]];
        }
        let mut out = Vec::new();
        for p in perms(n - 1) {
            for i in 0..=p.len() {
                let mut q = p.clone();
                q.insert(i, n - 1);
                out.push(q);
            }
        }
        out
    }
    for order in perms(4) {
        let (b, _) = setup(1, 8);
        b.publish("t", Record::new(b"x"), Wait::NoWait).unwrap();
        let mut c = b.consumer("t", "g", 0).unwrap();
        drop(c.poll(1, Wait::NoWait).unwrap());
        let m = b.join("t", "w", &MemberOptions::new()).unwrap();
        let s = b
            .subscribe(
                "t",
                "push",
                &SubscriptionOptions::new(),
                |_: &Message<'_>| Ok::<(), String>(()),
            )
            .unwrap();
        b.delete_topic("t").unwrap();
        let mut things: Vec<Option<Box<dyn std::any::Any>>> = vec![
            Some(Box::new(b)),
            Some(Box::new(c)),
            Some(Box::new(m)),
            Some(Box::new(s)),
        ];
        for i in order {
            drop(things[i].take());
        }
    }
}

/// Deletions and re-creations racing a consumer that polls and reads its batches: the consumer
/// sees whole messages of one topic or an error, never freed memory (the library copies under
/// the lock a deletion takes).
#[test]
fn deletions_racing_polls_never_hand_out_freed_memory() {
    let b = mq::Broker::new().unwrap();
    let make = |b: &mq::Broker| {
        b.create_topic("t", &TopicConfig::new().capacity(64))
            .unwrap();
        b.subscribe_group("t", "g", &GroupOptions::new()).unwrap();
        for i in 0..32u8 {
            b.publish("t", Record::new(&[i; 256]), Wait::NoWait)
                .unwrap();
        }
    };
    make(&b);
    let mut c = b.consumer("t", "g", 0).unwrap();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let read = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let (st, rd) = (stop.clone(), read.clone());
    let reader = thread::spawn(move || {
        while !st.load(Ordering::SeqCst) {
            if let Ok(batch) = c.poll(8, Wait::NoWait) {
                for m in &batch {
                    let p = m.payload();
                    assert_eq!(p.len(), 256);
                    assert!(p.iter().all(|&x| x == p[0]), "a torn or freed payload");
                    rd.fetch_add(1, Ordering::SeqCst);
                }
                let _ = batch.ack();
            }
        }
    });
    for _ in 0..300 {
        b.delete_topic("t").unwrap();
        make(&b);
    }
    // On a loaded machine the reader may not have run during the deletions at all: it must
    // still read the last topic's messages (bounded wait, checked by polling the counter).
    let until = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while read.load(Ordering::SeqCst) == 0 && std::time::Instant::now() < until {
        thread::yield_now();
    }
    stop.store(true, Ordering::SeqCst);
    reader.join().unwrap();
    let good = read.load(Ordering::SeqCst);
    assert!(good > 0, "the reader read messages");
}
