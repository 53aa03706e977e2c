//! Publisher and cursor handles (library 1.7): the named calls' results and errors through a
//! topic or a group's partition looked up once; one group position shared with the named
//! calls; a handle holds its topic and group, not their names; every drop order.
mod common;
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use common::{eventually, setup};
use mq::{
    CancelToken, Error, GroupOptions, Published, Record, Settle, ShareMode, TopicConfig, Wait,
};

const LONG: Duration = Duration::from_secs(10);

fn offsets(batch: &mq::Batch<'_>) -> Vec<i64> {
    batch.iter().map(|m| m.offset()).collect()
}

#[test]
fn a_round_trip_through_a_publisher_and_a_cursor() {
    let (b, clock) = setup(1, 64);
    let p = b.publisher("t").unwrap();
    assert_eq!(p.topic(), "t");
    let hs = [mq::Header::new(b"h", b"v")];
    let at = p
        .publish(Record::new(b"a").key(b"k").headers(&hs), Wait::NoWait)
        .unwrap();
    assert_eq!((at.partition, at.offset), (0, 0));
    p.publish_batch(&[Record::new(b"b"), Record::new(b"c")], Wait::NoWait)
        .unwrap();
    let mut results = [Published::default(); 2];
    p.publish_batch_with(
        &[Record::new(b"d"), Record::new(b"e")],
        Wait::NoWait,
        None,
        &mut results,
    )
    .unwrap();
    assert_eq!(results.map(|r| r.offset), [3, 4]);
    // A delayed single publish goes as a batch of one, through the publisher too.
    let late = p
        .publish(
            Record::new(b"late").delay(Duration::from_secs(1)),
            Wait::NoWait,
        )
        .unwrap();
    assert_eq!(late.offset, 5);

    let mut c = b.cursor("t", "g", 0).unwrap();
    assert_eq!((c.topic(), c.group(), c.partition()), ("t", "g", 0));
    let batch = c.poll(2, Wait::NoWait).unwrap();
    let m = &batch.messages()[0];
    assert_eq!((m.payload(), m.key()), (&b"a"[..], Some(&b"k"[..])));
    assert_eq!(m.headers().next(), Some((&b"h"[..], &b"v"[..])));
    assert_eq!(offsets(&batch), [0, 1]);
    let batch = batch.ack_and_poll(10, Wait::NoWait).unwrap();
    assert_eq!(offsets(&batch), [2, 3, 4]);
    batch.ack().unwrap();
    assert!(matches!(c.poll(10, Wait::NoWait), Err(Error::Timeout(_))));
    clock.advance(Duration::from_secs(1));
    let batch = c.poll(10, Wait::NoWait).unwrap();
    assert_eq!(batch.messages()[0].payload(), b"late");
    drop(batch);
    c.ack(5).unwrap();
    let i = b.group_info("t", "g", 0).unwrap();
    assert_eq!((i.committed, i.in_flight), (6, 0));
}

#[test]
fn handles_and_named_calls_share_the_log_and_the_group_position() {
    let (b, _) = setup(2, 64);
    let p = b.publisher("t").unwrap();
    // Keyless publishes go round-robin whether named or through the publisher.
    let parts: Vec<i32> = (0..4)
        .map(|i| {
            let r = Record::new(b"x");
            if i % 2 == 0 {
                p.publish(r, Wait::NoWait).unwrap().partition
            } else {
                b.publish("t", r, Wait::NoWait).unwrap().partition
            }
        })
        .collect();
    assert_eq!(parts, [0, 1, 0, 1]);
    let mut cur = b.cursor("t", "g", 0).unwrap();
    let mut named = b.consumer("t", "g", 0).unwrap();
    assert_eq!(offsets(&cur.poll(1, Wait::NoWait).unwrap()), [0]);
    assert_eq!(offsets(&named.poll(1, Wait::NoWait).unwrap()), [1]);
    cur.ack(0).unwrap();
    assert_eq!(b.group_info("t", "g", 0).unwrap().committed, 1);
    named.ack(1).unwrap();
    let i = b.group_info("t", "g", 0).unwrap();
    assert_eq!((i.committed, i.next, i.in_flight), (2, 2, 0));
    // The same refusal, in the same words, by name and through the cursor.
    let (by_name, by_cursor) = (named.ack(7).unwrap_err(), cur.ack(7).unwrap_err());
    assert!(matches!(by_cursor, Error::NotInFlight(_)), "{by_cursor:?}");
    assert_eq!(by_cursor, by_name);
}

#[test]
fn full_and_invalid_arguments_map_as_the_named_calls_do() {
    let (b, _) = setup(1, 2);
    let p = b.publisher("t").unwrap();
    p.publish_batch(&[Record::new(b"1"), Record::new(b"2")], Wait::NoWait)
        .unwrap();
    let named = b.publish("t", Record::new(b"3"), Wait::NoWait).unwrap_err();
    let handle = p.publish(Record::new(b"3"), Wait::NoWait).unwrap_err();
    assert!(matches!(handle, Error::Full(_)), "{handle:?}");
    assert_eq!(handle, named);
    let e = p
        .publish_batch(&[Record::new(b"3")], Wait::NoWait)
        .unwrap_err();
    assert_eq!(e.published, 0);
    assert!(matches!(e.error, Error::Full(_)), "{e:?}");
    let mut one = [Published::default()];
    let e = p
        .publish_batch_with(
            &[Record::new(b"3"), Record::new(b"4")],
            Wait::NoWait,
            None,
            &mut one,
        )
        .unwrap_err();
    assert!(matches!(e.error, Error::Invalid(_)), "{e:?}");
    let e = p
        .publish(Record::new(b"x").delay_ms(-5), Wait::NoWait)
        .unwrap_err();
    assert!(matches!(e, Error::Invalid(_)), "{e:?}");

    let mut c = b.cursor("t", "g", 0).unwrap();
    let e = c.poll(0, Wait::NoWait).unwrap_err();
    assert!(matches!(e, Error::Invalid(_)), "{e:?}");
    let named = b
        .consumer("t", "g", 0)
        .unwrap()
        .poll(0, Wait::NoWait)
        .unwrap_err();
    assert_eq!(e, named);
}

#[test]
fn opening_checks_what_the_named_calls_check() {
    let (b, _) = setup(2, 8);
    let invalid = |r: Result<(), Error>| matches!(r, Err(Error::Invalid(_)));
    assert!(invalid(b.publisher("bad name").map(drop)));
    assert!(invalid(b.publisher("nul\0").map(drop)));
    assert!(invalid(b.cursor("t", "bad name", 0).map(drop)));
    assert!(invalid(b.cursor("t", "g\0", 0).map(drop)));
    assert!(matches!(b.publisher("nothing"), Err(Error::NoTopic(_))));
    assert!(matches!(
        b.cursor("nothing", "g", 0),
        Err(Error::NoTopic(_))
    ));
    assert!(matches!(b.cursor("t", "nobody", 0), Err(Error::NoGroup(_))));
    assert!(matches!(b.cursor("t", "g", 2), Err(Error::Partition(_))));
    assert!(matches!(b.cursor("t", "g", -1), Err(Error::Partition(_))));
    b.close().unwrap();
    assert!(matches!(b.publisher("t"), Err(Error::Closed(_))));
    assert!(matches!(b.cursor("t", "g", 0), Err(Error::Closed(_))));
}

#[test]
fn a_deleted_topic_stays_deleted_for_its_handles_even_when_the_name_comes_back() {
    let (b, _) = setup(1, 8);
    let p = b.publisher("t").unwrap();
    let mut c = b.cursor("t", "g", 0).unwrap();
    p.publish(Record::new(b"x"), Wait::NoWait).unwrap();
    drop(c.poll(10, Wait::NoWait).unwrap());
    b.delete_topic("t").unwrap();
    let no_topic = |e: &Error| matches!(e, Error::NoTopic(_));
    assert!(no_topic(
        &p.publish(Record::new(b"y"), Wait::NoWait).unwrap_err()
    ));
    let e = p
        .publish_batch(&[Record::new(b"y")], Wait::NoWait)
        .unwrap_err();
    assert!(no_topic(&e.error) && e.published == 0, "{e:?}");
    assert!(no_topic(&c.poll(10, Wait::NoWait).unwrap_err()));
    assert!(no_topic(&c.ack(0).unwrap_err()));
    assert!(no_topic(&c.ack_and_poll(0, 10, Wait::NoWait).unwrap_err()));
    b.create_topic("t", &TopicConfig::new()).unwrap();
    b.subscribe_group("t", "g", &GroupOptions::new()).unwrap();
    assert!(no_topic(
        &p.publish(Record::new(b"y"), Wait::NoWait).unwrap_err()
    ));
    assert!(no_topic(&c.poll(10, Wait::NoWait).unwrap_err()));
    // New handles reach the new topic; the named calls always did.
    let p2 = b.publisher("t").unwrap();
    assert_eq!(
        p2.publish(Record::new(b"z"), Wait::NoWait).unwrap().offset,
        0
    );
    let mut c2 = b.cursor("t", "g", 0).unwrap();
    assert_eq!(
        c2.poll(10, Wait::NoWait).unwrap().messages()[0].payload(),
        b"z"
    );
}

#[test]
fn an_unsubscribed_group_stays_gone_for_its_cursors_even_when_subscribed_again() {
    let (b, _) = setup(1, 8);
    b.publish("t", Record::new(b"x"), Wait::NoWait).unwrap();
    let mut c = b.cursor("t", "g", 0).unwrap();
    b.unsubscribe_group("t", "g").unwrap();
    assert!(matches!(c.poll(10, Wait::NoWait), Err(Error::NoGroup(_))));
    assert!(matches!(c.ack(0), Err(Error::NoGroup(_))));
    b.subscribe_group("t", "g", &GroupOptions::new()).unwrap();
    b.publish("t", Record::new(b"y"), Wait::NoWait).unwrap();
    assert!(matches!(c.poll(10, Wait::NoWait), Err(Error::NoGroup(_))));
    let mut again = b.cursor("t", "g", 0).unwrap();
    assert_eq!(offsets(&again.poll(10, Wait::NoWait).unwrap()), [1]);
}

#[test]
fn after_the_broker_closes_handles_answer_closed_and_drop_in_any_order() {
    // Handles dropped after every broker clone (the broker's memory goes with the last).
    let (b, _) = setup(1, 8);
    let p = b.publisher("t").unwrap();
    let mut c = b.cursor("t", "g", 0).unwrap();
    b.publish("t", Record::new(b"x"), Wait::NoWait).unwrap();
    let batch = c.poll(10, Wait::NoWait).unwrap();
    drop(b);
    assert_eq!(batch.messages()[0].payload(), b"x"); // a copy: readable after the close
    assert!(matches!(batch.ack(), Err(Error::Closed(_))));
    assert!(matches!(
        p.publish(Record::new(b"y"), Wait::NoWait),
        Err(Error::Closed(_))
    ));
    let e = p
        .publish_batch(&[Record::new(b"y")], Wait::NoWait)
        .unwrap_err();
    assert!(matches!(e.error, Error::Closed(_)), "{e:?}");
    assert!(matches!(c.poll(10, Wait::NoWait), Err(Error::Closed(_))));
    assert!(matches!(
        c.ack_and_poll(0, 10, Wait::NoWait),
        Err(Error::Closed(_))
    ));
    c.close();
    drop(p);

    // Handles dropped before the broker, with close and on other threads.
    let (b, _) = setup(1, 8);
    let (p, c) = (b.publisher("t").unwrap(), b.cursor("t", "g", 0).unwrap());
    p.close();
    thread::spawn(move || drop(c)).join().unwrap();
    let p = b.publisher("t").unwrap();
    thread::spawn(move || p.publish(Record::new(b"z"), Wait::NoWait))
        .join()
        .unwrap()
        .unwrap();
    assert_eq!(b.partition_info("t", 0).unwrap().backlog, 1);
    b.close().unwrap();
    b.close().unwrap();
    drop(b);

    // The broker dropped on another thread while the handles live on this one.
    let (b, _) = setup(1, 8);
    let (p, mut c) = (b.publisher("t").unwrap(), b.cursor("t", "g", 0).unwrap());
    thread::spawn(move || drop(b)).join().unwrap();
    assert!(matches!(c.poll(1, Wait::NoWait), Err(Error::Closed(_))));
    drop(c);
    assert!(matches!(
        p.publish(Record::new(b"y"), Wait::NoWait),
        Err(Error::Closed(_))
    ));
}

/// Broker, a clone of it, a publisher, two cursors: all 120 drop orders, the handles still
/// alive called after each drop (`Closed` once both brokers are gone, working before).
#[test]
fn every_drop_order_of_brokers_and_handles() {
    let mut orders = Vec::new();
    permute(&mut vec![0, 1, 2, 3, 4], 0, &mut orders);
    assert_eq!(orders.len(), 120);
    for order in orders {
        let (b, _) = setup(1, 64);
        let mut brokers = [Some(b.clone()), Some(b)];
        let mut p = brokers[0].as_ref().map(|b| b.publisher("t").unwrap());
        let mut cursors =
            [0, 1].map(|_| brokers[0].as_ref().map(|b| b.cursor("t", "g", 0).unwrap()));
        for i in order {
            match i {
                0 | 1 => brokers[i] = None,
                2 => p = None,
                _ => cursors[i - 3] = None,
            }
            let open = brokers.iter().any(Option::is_some);
            if let Some(p) = &p {
                let r = p.publish(Record::new(b"x"), Wait::NoWait);
                assert_eq!(open, r.is_ok(), "{r:?}");
                assert!(open || matches!(r, Err(Error::Closed(_))), "{r:?}");
            }
            for c in cursors.iter_mut().flatten() {
                let r = c.poll(1, Wait::NoWait).map(|x| x.len());
                assert!(
                    matches!(r, Ok(1) | Err(Error::Timeout(_))) == open
                        && (open || matches!(r, Err(Error::Closed(_)))),
                    "{r:?}"
                );
            }
        }
    }
}

fn permute(v: &mut Vec<usize>, k: usize, out: &mut Vec<Vec<usize>>) {
    if k == v.len() {
        out.push(v.clone());
        return;
    }
    for i in k..v.len() {
        v.swap(k, i);
        permute(v, k + 1, out);
        v.swap(k, i);
    }
}

#[test]
fn a_waiting_cursor_poll_wakes_on_a_publish_through_a_publisher() {
    let (b, _) = setup(1, 8);
    b.publish("t", Record::new(b"first"), Wait::NoWait).unwrap();
    let mut c = b.cursor("t", "g", 0).unwrap();
    drop(c.poll(1, Wait::NoWait).unwrap());
    let (tx, rx) = mpsc::channel();
    let h = thread::spawn(move || {
        // The ack is made first: seeing it committed means the poll is on its way to waiting.
        let batch = c.ack_and_poll(0, 10, Wait::Forever).unwrap();
        tx.send(batch.messages()[0].payload().to_vec()).unwrap();
    });
    eventually("the ack is made", || {
        b.group_info("t", "g", 0).unwrap().committed == 1
    });
    b.publisher("t")
        .unwrap()
        .publish(Record::new(b"woken"), Wait::NoWait)
        .unwrap();
    assert_eq!(rx.recv_timeout(LONG).unwrap(), b"woken");
    h.join().unwrap();
}

#[test]
fn closing_the_broker_wakes_waiting_handle_calls_with_closed() {
    let (b, _) = setup(1, 1);
    b.publish("t", Record::new(b"fill"), Wait::NoWait).unwrap();
    let p = b.publisher("t").unwrap();
    let mut c = b.cursor("t", "g", 0).unwrap();
    drop(c.poll(1, Wait::NoWait).unwrap());
    let b2 = b.clone();
    let publisher = thread::spawn(move || p.publish(Record::new(b"x"), Wait::Forever));
    eventually("the publisher waits", || {
        b.partition_info("t", 0).unwrap().producer_waits > 0
    });
    let poller = thread::spawn(move || {
        let r = c.poll(10, Wait::Forever).map(|x| x.len());
        (r, c)
    });
    b2.close().unwrap();
    assert!(matches!(publisher.join().unwrap(), Err(Error::Closed(_))));
    let (r, c) = poller.join().unwrap();
    assert!(matches!(r, Err(Error::Closed(_))), "{r:?}");
    drop(b);
    drop(c);
}

#[test]
fn handle_calls_are_cancellable() {
    let (b, _) = setup(1, 1);
    let p = b.publisher("t").unwrap();
    let mut c = b.cursor("t", "g", 0).unwrap();
    let token = CancelToken::new().unwrap();
    token.cancel();
    assert!(matches!(
        c.poll_cancellable(10, Wait::Forever, &token),
        Err(Error::Cancelled(_))
    ));
    p.publish(Record::new(b"fill"), Wait::NoWait).unwrap();
    assert!(matches!(
        p.publish_cancellable(Record::new(b"x"), Wait::Forever, &token),
        Err(Error::Cancelled(_))
    ));
    drop(c.poll(1, Wait::NoWait).unwrap());
    // The ack stands though the poll after it is cancelled.
    assert!(matches!(
        c.ack_and_poll_cancellable(0, 10, Wait::Forever, &token),
        Err(Error::Cancelled(_))
    ));
    assert_eq!(b.group_info("t", "g", 0).unwrap().committed, 1);
}

#[test]
fn one_publisher_shared_by_threads() {
    let (b, _) = setup(2, 1024);
    let p = b.publisher("t").unwrap();
    thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                for _ in 0..100 {
                    p.publish(Record::new(b"x"), Wait::NoWait).unwrap();
                }
            });
        }
    });
    let backlog: i64 = (0..2)
        .map(|i| b.partition_info("t", i).unwrap().backlog)
        .sum();
    assert_eq!(backlog, 400);
}

#[test]
fn a_share_group_through_cursors() {
    let (b, _) = setup(1, 64);
    b.subscribe_group("t", "workers", &GroupOptions::new().share(ShareMode::All))
        .unwrap();
    let p = b.publisher("t").unwrap();
    for job in [b"a", b"b", b"c"] {
        p.publish(Record::new(job), Wait::NoWait).unwrap();
    }
    let (mut one, mut two) = (
        b.cursor("t", "workers", 0).unwrap(),
        b.cursor("t", "workers", 0).unwrap(),
    );
    let first = one.poll(2, Wait::NoWait).unwrap();
    let second = two.poll(2, Wait::NoWait).unwrap();
    // Each acquires what no other poll holds.
    assert_eq!((offsets(&first), offsets(&second)), (vec![0, 1], vec![2]));
    // An ack accepts that one message; settling (by name) the others.
    first.settle(&first.messages()[0], Settle::Accept).unwrap();
    drop(first);
    one.ack(1).unwrap();
    second
        .settle(&second.messages()[0], Settle::Reject)
        .unwrap();
    let i = b.group_info("t", "workers", 0).unwrap();
    assert_eq!((i.acquired, i.rejected), (0, 1));
    assert!(matches!(one.ack(1), Err(Error::NotInFlight(_))));
}

// The handles are 1.7's: the header the bindings were generated from has them, and the library
// linked must have them too.
const _: () = assert!(mq_sys::MQ_VERSION_NUMBER >= 1_007_000);

#[test]
fn the_library_has_handles() {
    assert!(mq::version_number() >= 1_007_000, "{}", mq::version());
}

// Both are shared between threads like everything else made from a broker.
const _: fn() = || {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<mq::Publisher>();
    send_sync::<mq::Cursor>();
};
