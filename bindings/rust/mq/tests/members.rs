//! Members: assignment, polling, acks, rebalances, assignors and their panics.
mod common;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::setup;
use mq::{CallbackError, Error, MemberOptions, Record, Wait};

#[test]
fn members_split_partitions_and_see_rebalances() {
    let (b, _) = setup(4, 16);
    let gens = Arc::new(Mutex::new(Vec::new()));
    let g2 = gens.clone();
    let opts = MemberOptions::new().id("a").on_rebalance(move |r| {
        g2.lock()
            .unwrap()
            .push((r.member_id().to_owned(), r.generation()));
    });
    let a = b.join("t", "g", &opts).unwrap();
    assert_eq!(a.id(), "a");
    assert_eq!(a.assignment().unwrap().partitions, [0, 1, 2, 3]);
    let bb = b.join("t", "g", &MemberOptions::new().id("b")).unwrap();
    assert!(matches!(
        b.join("t", "g", &MemberOptions::new().id("b")),
        Err(Error::Exists(_))
    ));
    assert!(matches!(
        a.poll(10, Wait::NoWait),
        Err(Error::Rebalanced(_))
    ));
    let asg = a.assignment().unwrap();
    assert_eq!(asg.partitions, [0, 2]);
    assert_eq!(bb.assignment().unwrap().partitions, [1, 3]);
    assert_eq!(
        *gens.lock().unwrap(),
        [("a".to_owned(), 1), ("a".to_owned(), asg.generation)]
    );

    b.publish("t", Record::new(b"m").key(b"user-b"), Wait::NoWait)
        .unwrap(); // partition 0 of 4?
    let p = mq::key_partition(b"user-b", 4).unwrap();
    let owner_is_a = asg.partitions.contains(&p);
    let who = if owner_is_a { a } else { bb };
    let batch = who.poll(10, Duration::from_secs(5)).unwrap();
    assert_eq!(batch.partition(), Some(p));
    assert_eq!(batch.messages()[0].payload(), b"m");
    batch.ack().unwrap();
    assert!(matches!(who.ack(p, 0), Err(Error::NotInFlight(_))));
    let not_mine = (0..4)
        .find(|q| !who.assignment().unwrap().partitions.contains(q))
        .unwrap();
    assert!(matches!(who.ack(not_mine, 0), Err(Error::Fenced(_))));
    who.extend_lease(p).unwrap_err();
    who.nack(p, Duration::ZERO).unwrap();
    who.close().unwrap();
}

#[test]
fn a_closure_assignor_decides_and_its_panic_falls_back_to_round_robin() {
    let (b, _) = setup(3, 16);
    let last = |_: i32, members: &[&str], owners: &mut [i32]| owners.fill(members.len() as i32 - 1);
    let a = b
        .join("t", "g", &MemberOptions::new().id("a").assignor(last))
        .unwrap();
    let c = b.join("t", "g", &MemberOptions::new().id("c")).unwrap();
    assert_eq!(
        c.assignment().unwrap().partitions,
        [0, 1, 2],
        "the first member's strategy"
    );
    assert_eq!(a.assignment().unwrap().partitions, Vec::<i32>::new());
    drop(a); // the group keeps a's strategy after a leaves: it must stay alive
    let d = b.join("t", "g", &MemberOptions::new().id("d")).unwrap();
    assert_eq!(d.assignment().unwrap().partitions, [0, 1, 2]);
    drop((c, d));

    b.subscribe_group("t", "h", &mq::GroupOptions::new())
        .unwrap();
    let reports = Arc::new(Mutex::new(Vec::new()));
    let r = reports.clone();
    let boom = |_: i32, _: &[&str], _: &mut [i32]| panic!("assignor bug");
    let opts = MemberOptions::new()
        .id("x")
        .assignor(boom)
        .on_error(move |e| r.lock().unwrap().push(e.clone()));
    let x = b.join("t", "h", &opts).unwrap();
    assert_eq!(
        x.assignment().unwrap().partitions,
        [0, 1, 2],
        "round-robin over one member"
    );
    assert_eq!(
        *reports.lock().unwrap(),
        [CallbackError::AssignorPanic {
            panic: "assignor bug".into()
        }]
    );
}

#[test]
fn a_panicking_rebalance_callback_is_reported() {
    let (b, _) = setup(2, 16);
    let reports = Arc::new(Mutex::new(Vec::new()));
    let r = reports.clone();
    let opts = MemberOptions::new()
        .id("p")
        .on_rebalance(|_| panic!("rebalance bug"))
        .on_error(move |e| r.lock().unwrap().push(e.clone()));
    let m = b.join("t", "g", &opts).unwrap();
    assert_eq!(m.assignment().unwrap().partitions, [0, 1]);
    assert_eq!(
        *reports.lock().unwrap(),
        [CallbackError::RebalancePanic {
            member: "p".into(),
            generation: 1,
            panic: "rebalance bug".into()
        }]
    );
}

#[test]
fn member_copies_outlive_a_partition_move() {
    let (b, _) = setup(1, 16);
    let a = b.join("t", "g", &MemberOptions::new().id("a")).unwrap();
    b.publish("t", Record::new(b"payload-1").key(b"k"), Wait::NoWait)
        .unwrap();
    let batch = a.poll(10, Wait::NoWait).unwrap();
    // Another member takes the partition and acks past the message while `a` still reads it.
    let c = b
        .join(
            "t",
            "g",
            &MemberOptions::new()
                .id("c")
                .assignor(|_: i32, _: &[&str], o: &mut [i32]| o.fill(1)),
        )
        .unwrap();
    c.assignment().unwrap();
    let _ = c.poll(10, Wait::NoWait).map(|x| x.ack());
    assert_eq!(batch.messages()[0].payload(), b"payload-1");
    assert_eq!(batch.messages()[0].key(), Some(&b"k"[..]));
}

#[test]
fn session_timeout_fences_a_silent_member() {
    let (b, clock) = setup(1, 16);
    let a = b
        .join(
            "t",
            "g",
            &MemberOptions::new()
                .id("a")
                .session_timeout(Duration::from_secs(5)),
        )
        .unwrap();
    let silent = b
        .join(
            "t",
            "g",
            &MemberOptions::new()
                .id("b")
                .session_timeout(Duration::from_secs(1)),
        )
        .unwrap();
    a.assignment().unwrap();
    clock.advance(Duration::from_secs(2));
    assert!(
        matches!(a.poll(1, Wait::NoWait), Err(Error::Rebalanced(_))),
        "a's call notices b's silence"
    );
    assert_eq!(a.assignment().unwrap().partitions, [0]);
    assert!(matches!(silent.assignment(), Err(Error::Fenced(_))));
    silent.close().unwrap();
}

/// A member's copy buffer grows for a message larger than it; the ack that travelled with the
/// poll that met it is made once (the retry polls without it), and the headers and key of a
/// copied message read back whole.
#[test]
fn a_member_batch_grows_for_a_large_message_and_acks_once() {
    let (b, _) = setup(1, 16);
    let m = b.join("t", "w", &MemberOptions::new()).unwrap();
    let hdrs = [mq::Header::new(b"n1", b"v1"), mq::Header::new(b"", b"v2")];
    b.publish("t", Record::new(b"small"), Wait::NoWait).unwrap();
    let big = vec![3u8; 512 << 10];
    b.publish(
        "t",
        Record::new(&big).key(b"k").headers(&hdrs),
        Wait::NoWait,
    )
    .unwrap();
    let first = m.poll(10, Wait::NoWait).unwrap();
    assert_eq!(first.messages()[0].payload(), b"small");
    let batch = first.ack_and_poll(10, Wait::NoWait).unwrap();
    let got = &batch.messages()[0];
    assert_eq!((got.offset(), got.payload()), (1, &big[..]));
    assert_eq!(got.key(), Some(&b"k"[..]));
    assert_eq!(
        got.headers().collect::<Vec<_>>(),
        [(&b"n1"[..], &b"v1"[..]), (&b""[..], &b"v2"[..])]
    );
    assert_eq!(b.group_info("t", "w", 0).unwrap().committed, 1);
    batch.ack().unwrap();
    assert_eq!(b.group_info("t", "w", 0).unwrap().committed, 2);
}
