//! Ack+poll (library 1.1): exactly the ack, then the poll; the ack stands whatever the poll
//! finds; a rejected ack polls nothing, changes nothing and does not wait; waits wake on
//! publish, cancel and close.
mod common;
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use common::{eventually, setup};
use mq::{CancelToken, Error, GroupOptions, MemberOptions, Record, Wait};

const LONG: Duration = Duration::from_secs(10);

fn publish_n(b: &mq::Broker, n: usize) {
    for i in 0..n {
        b.publish("t", Record::new(format!("m-{i}").as_bytes()), Wait::NoWait)
            .unwrap();
    }
}

/// (offset, payload) of each batch of a consumer of `group` driven to the end, 3 at a time.
fn drain(b: &mq::Broker, group: &str, together: bool) -> Vec<Vec<(i64, Vec<u8>)>> {
    let mut c = b.consumer("t", group, 0).unwrap();
    let mut out = Vec::new();
    let mut batch = c.poll(3, Wait::NoWait).unwrap();
    loop {
        out.push(
            batch
                .iter()
                .map(|m| (m.offset(), m.payload().to_vec()))
                .collect(),
        );
        let next = if together {
            batch.ack_and_poll(3, Wait::NoWait)
        } else {
            batch.ack().unwrap();
            c.poll(3, Wait::NoWait)
        };
        match next {
            Ok(n) => batch = n,
            Err(Error::Timeout(_)) => break,
            Err(e) => panic!("{e:?}"),
        }
    }
    out
}

#[test]
fn ack_and_poll_equals_ack_then_poll() {
    let (b, _) = setup(1, 64);
    b.subscribe_group("t", "h", &GroupOptions::new()).unwrap();
    publish_n(&b, 10);
    let pair = drain(&b, "g", false);
    let together = drain(&b, "h", true);
    assert_eq!(pair, together);
    assert_eq!(together.len(), 4); // 3 + 3 + 3 + 1
    for g in ["g", "h"] {
        let i = b.group_info("t", g, 0).unwrap();
        assert_eq!((i.committed, i.next, i.in_flight), (10, 10, 0), "group {g}");
    }
    // What every group acked is trimmed.
    assert_eq!(b.partition_info("t", 0).unwrap().backlog, 0);
}

#[test]
fn a_rejected_ack_polls_nothing_changes_nothing_and_does_not_wait() {
    let (b, _) = setup(1, 64);
    publish_n(&b, 4);
    let mut c = b.consumer("t", "g", 0).unwrap();
    drop(c.poll(2, Wait::NoWait).unwrap()); // 0..1 in flight
    let before = b.group_info("t", "g", 0).unwrap();
    // Never handed out: with a wait forever, a poll after the refusal would block (messages
    // 2..3 are there, so it would rather hand them out: either way the refusal must come alone).
    for offset in [5, 2] {
        match c.ack_and_poll(offset, 10, Wait::Forever) {
            Err(Error::NotInFlight(m)) => {
                assert!(m.contains("in flight: 0..1"), "{m}")
            }
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(b.group_info("t", "g", 0).unwrap(), before);
    c.ack(1).unwrap();
    // Already acked.
    assert!(matches!(
        c.ack_and_poll(0, 10, Wait::NoWait),
        Err(Error::NotInFlight(_))
    ));
    assert_eq!(b.group_info("t", "g", 0).unwrap().next, 2);
    // max 0 and a bad partition are refused before the ack.
    drop(c.poll(1, Wait::NoWait).unwrap()); // 2 in flight
    assert!(matches!(
        c.ack_and_poll(2, 0, Wait::NoWait),
        Err(Error::Invalid(_))
    ));
    assert_eq!(b.group_info("t", "g", 0).unwrap().committed, 2);
}

#[test]
fn the_ack_stands_when_the_poll_times_out() {
    let (b, _) = setup(1, 64);
    publish_n(&b, 2);
    let mut c = b.consumer("t", "g", 0).unwrap();
    let batch = c.poll(10, Wait::NoWait).unwrap();
    assert_eq!(batch.len(), 2);
    assert!(matches!(
        batch.ack_and_poll(10, Duration::from_millis(5)),
        Err(Error::Timeout(_))
    ));
    let i = b.group_info("t", "g", 0).unwrap();
    assert_eq!((i.committed, i.in_flight), (2, 0));
    assert_eq!(b.partition_info("t", 0).unwrap().backlog, 0);
}

#[test]
fn a_waiting_ack_and_poll_wakes_on_publish_then_on_cancel() {
    let (b, _) = setup(1, 64);
    publish_n(&b, 1);
    let mut c = b.consumer("t", "g", 0).unwrap();
    drop(c.poll(1, Wait::NoWait).unwrap());
    let token = CancelToken::new().unwrap();
    let (tx, rx) = mpsc::channel();
    let t = token.clone();
    let h = thread::spawn(move || {
        let batch = c.ack_and_poll_cancellable(0, 10, LONG, &t).unwrap();
        let got: Vec<i64> = batch.iter().map(|m| m.offset()).collect();
        tx.send(got).unwrap();
        // The batch's ack travels with a poll that waits until cancelled.
        let r = batch.ack_and_poll_cancellable(10, LONG, &t);
        matches!(r, Err(Error::Cancelled(_)))
    });
    eventually("the ack is made while the poll waits", || {
        b.group_info("t", "g", 0).unwrap().committed == 1
    });
    b.publish("t", Record::new(b"late"), Wait::NoWait).unwrap();
    assert_eq!(rx.recv_timeout(LONG).unwrap(), vec![1]);
    eventually("the second ack is made", || {
        b.group_info("t", "g", 0).unwrap().committed == 2
    });
    token.cancel();
    assert!(h.join().unwrap(), "the waiting ack+poll returned Cancelled");
}

#[test]
fn the_ack_lets_a_blocked_publisher_in_and_the_poll_takes_its_message() {
    let (b, _) = setup(1, 2);
    publish_n(&b, 2);
    let mut c = b.consumer("t", "g", 0).unwrap();
    drop(c.poll(1, Wait::NoWait).unwrap()); // 0 in flight, partition full
    let b2 = b.clone();
    let p = thread::spawn(move || b2.publish("t", Record::new(b"in"), LONG).map(|a| a.offset));
    eventually("the publisher waits", || {
        b.partition_info("t", 0).unwrap().producer_waits > 0
    });
    let batch = c.ack_and_poll(0, 10, LONG).unwrap();
    assert_eq!(batch.messages()[0].offset(), 1);
    drop(batch);
    assert_eq!(p.join().unwrap(), Ok(2));
    let batch = c.poll(10, Wait::NoWait).unwrap();
    assert_eq!(batch.messages()[0].payload(), b"in");
}

#[test]
fn closing_the_broker_wakes_a_waiting_ack_and_poll() {
    let (b, _) = setup(1, 64);
    publish_n(&b, 1);
    let mut c = b.consumer("t", "g", 0).unwrap();
    drop(c.poll(1, Wait::NoWait).unwrap());
    let h = thread::spawn(move || {
        matches!(c.ack_and_poll(0, 10, Wait::Forever), Err(Error::Closed(_)))
    });
    eventually("the ack is made", || {
        b.group_info("t", "g", 0).unwrap().committed == 1
    });
    b.close().unwrap();
    assert!(h.join().unwrap());
}

#[test]
fn member_ack_and_poll_equals_ack_then_poll() {
    let (b, _) = setup(1, 64);
    let pair = b.join("t", "pair", &MemberOptions::new()).unwrap();
    let together = b.join("t", "together", &MemberOptions::new()).unwrap();
    publish_n(&b, 7);
    let mut a = Vec::new();
    loop {
        match pair.poll(3, Wait::NoWait) {
            Ok(batch) => {
                a.push(batch.iter().map(|m| m.detach()).collect::<Vec<_>>());
                batch.ack().unwrap();
            }
            Err(Error::Timeout(_)) => break,
            Err(e) => panic!("{e:?}"),
        }
    }
    let mut t = Vec::new();
    let mut batch = together.poll(3, Wait::NoWait).unwrap();
    loop {
        t.push(batch.iter().map(|m| m.detach()).collect::<Vec<_>>());
        match batch.ack_and_poll(3, Wait::NoWait) {
            Ok(n) => batch = n,
            Err(Error::Timeout(_)) => break,
            Err(e) => panic!("{e:?}"),
        }
    }
    assert_eq!(a, t);
    assert_eq!(t.iter().map(Vec::len).collect::<Vec<_>>(), vec![3, 3, 1]);
    for g in ["pair", "together"] {
        let i = b.group_info("t", g, 0).unwrap();
        assert_eq!((i.committed, i.in_flight), (7, 0), "group {g}");
    }
}

#[test]
fn member_ack_and_poll_rejections_and_cancel() {
    let (b, _) = setup(1, 64);
    let m = b.join("t", "w", &MemberOptions::new()).unwrap();
    publish_n(&b, 2);
    drop(m.poll(1, Wait::NoWait).unwrap()); // 0 in flight
    assert!(matches!(
        m.ack_and_poll(0, 1, 10, Wait::Forever),
        Err(Error::NotInFlight(_))
    ));
    assert!(matches!(
        m.ack_and_poll(3, 0, 10, Wait::NoWait),
        Err(Error::Partition(_))
    ));
    assert_eq!(b.group_info("t", "w", 0).unwrap().committed, 0);
    let batch = m.ack_and_poll(0, 0, 10, Wait::NoWait).unwrap();
    assert_eq!(batch.messages()[0].payload(), b"m-1");
    let token = CancelToken::new().unwrap();
    thread::scope(|s| {
        let h = s.spawn(|| {
            matches!(
                batch.ack_and_poll_cancellable(10, LONG, &token),
                Err(Error::Cancelled(_))
            )
        });
        eventually("the ack is made", || {
            b.group_info("t", "w", 0).unwrap().committed == 2
        });
        token.cancel();
        assert!(h.join().unwrap());
    });
}
