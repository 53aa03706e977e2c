//! Every drop order: broker clones, consumers, subscriptions, members and cancel tokens, and
//! blocked calls woken by the broker's close or by cancellation within 100 ms.
mod common;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::thread;
use std::time::{Duration, Instant};

use common::{eventually, setup};
use mq::{CancelToken, Error, MemberOptions, Message, Record, SubscriptionOptions, Wait};

/// Runs `f` on a thread and returns its result, failing if it takes longer than `limit`.
fn within<T: Send + 'static>(
    limit: Duration,
    start: impl FnOnce() + Send,
    f: impl FnOnce() -> T + Send + 'static,
) -> T {
    let (tx, rx) = mpsc::channel();
    let h = thread::spawn(move || tx.send(f()).unwrap());
    start();
    let t0 = Instant::now();
    let r = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("the blocked call returned");
    assert!(t0.elapsed() < limit, "woke after {:?}", t0.elapsed());
    h.join().unwrap();
    r
}

/// Waits until a publisher is blocked on the full partition 0 (a waiting publish is counted).
fn blocked_publisher(b: &mq::Broker) {
    eventually("the publisher waits", || {
        b.partition_info("t", 0).unwrap().producer_waits > 0
    });
}

#[test]
fn dropping_the_broker_wakes_a_poll_blocked_on_another_thread_with_closed() {
    let (b, _) = setup(1, 4);
    let mut c = b.consumer("t", "g", 0).unwrap();
    let (ready_tx, ready_rx) = mpsc::channel();
    let h = thread::spawn(move || {
        ready_tx.send(()).unwrap();
        c.poll(10, Wait::Forever).map(|b| b.len())
    });
    ready_rx.recv().unwrap();
    // A blocked poll cannot be observed from outside; Closed is the right answer whether or not
    // it has started waiting, so the pause below only makes the wake-up path the likely one.
    thread::sleep(Duration::from_millis(20));
    let t0 = Instant::now();
    drop(b);
    let r = h.join().unwrap();
    assert!(matches!(r, Err(Error::Closed(_))), "{r:?}");
    assert!(
        t0.elapsed() < Duration::from_millis(100),
        "woke after {:?}",
        t0.elapsed()
    );
}

#[test]
fn dropping_the_broker_wakes_a_blocked_publisher_and_member_poll() {
    let (b, _) = setup(1, 1);
    b.publish("t", Record::new(b"fill"), Wait::NoWait).unwrap();
    let b2 = b.clone();
    let publisher = thread::spawn(move || {
        b2.publish("t", Record::new(b"x"), Wait::Forever)
            .map(|_| ())
    });
    blocked_publisher(&b);
    b.create_topic("m", &mq::TopicConfig::new()).unwrap();
    let member = b.join("m", "g", &MemberOptions::new()).unwrap();
    let poller = thread::spawn(move || member.poll(10, Wait::Forever).map(|x| x.len()));
    // The publisher holds a clone: closing explicitly is what wakes it.
    b.close().unwrap();
    assert!(matches!(publisher.join().unwrap(), Err(Error::Closed(_))));
    assert!(matches!(poller.join().unwrap(), Err(Error::Closed(_))));
}

#[test]
fn cancel_wakes_blocked_calls_within_100ms_and_tokens_drop_in_any_order() {
    let (b, _) = setup(1, 1);
    let token = CancelToken::new().unwrap();
    let t2 = token.clone();
    let mut c = b.consumer("t", "g", 0).unwrap();
    let r = within(
        Duration::from_millis(100),
        || {
            thread::sleep(Duration::from_millis(20));
            token.cancel()
        },
        move || {
            let r = c.poll_cancellable(1, Wait::Forever, &t2).map(|x| x.len());
            drop(t2); // the waiter's clone goes first
            r
        },
    );
    assert!(matches!(r, Err(Error::Cancelled(_))), "{r:?}");
    assert!(token.is_cancelled());
    token.reset();
    assert!(!token.is_cancelled());

    b.publish("t", Record::new(b"fill"), Wait::NoWait).unwrap();
    let (b2, t3) = (b.clone(), token.clone());
    let publisher = thread::spawn(move || {
        b2.publish_cancellable("t", Record::new(b"x"), Wait::Forever, &t3)
            .map(|_| ())
    });
    blocked_publisher(&b);
    let t0 = Instant::now();
    token.cancel();
    drop(token); // the caller's clone goes while the call still waits
    assert!(matches!(
        publisher.join().unwrap(),
        Err(Error::Cancelled(_))
    ));
    assert!(t0.elapsed() < Duration::from_millis(100));
    // A triggered token with no wait needed: the call completes normally.
    let t = CancelToken::new().unwrap();
    t.cancel();
    b.create_topic("free", &mq::TopicConfig::new()).unwrap();
    b.publish_cancellable("free", Record::new(b"ok"), Wait::Forever, &t)
        .unwrap();
}

#[test]
fn subscriptions_members_and_consumers_outlive_the_broker() {
    let (b, _) = setup(2, 8);
    let drops = Arc::new(AtomicUsize::new(0));
    struct D(Arc<AtomicUsize>);
    impl Drop for D {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
    let d = D(drops.clone());
    let sub = b
        .subscribe(
            "t",
            "push",
            &SubscriptionOptions::new(),
            move |_: &Message<'_>| {
                let _k = &d;
                Ok::<(), String>(())
            },
        )
        .unwrap();
    b.create_topic("m", &mq::TopicConfig::new()).unwrap();
    let member = b.join("m", "g", &MemberOptions::new()).unwrap();
    let mut consumer = b.consumer("t", "g", 0).unwrap();
    b.publish("t", Record::new(b"x").key(b"user-b"), Wait::NoWait)
        .unwrap();
    let batch_len = consumer.poll(10, Wait::NoWait).map(|x| x.len());
    assert_eq!(batch_len, Ok(1));
    drop(b); // closes; the rest keeps the memory alive
    assert!(matches!(
        consumer.poll(10, Wait::NoWait),
        Err(Error::Closed(_))
    ));
    assert!(matches!(member.assignment(), Err(Error::Closed(_))));
    drop(member);
    assert_eq!(drops.load(Ordering::SeqCst), 0);
    drop(sub);
    assert_eq!(drops.load(Ordering::SeqCst), 1);
    drop(consumer); // the last owner: the broker is freed here
}

#[test]
fn a_batch_outlives_the_broker_handle() {
    let (b, _) = setup(1, 8);
    b.publish("t", Record::new(b"still here"), Wait::NoWait)
        .unwrap();
    let mut c = b.consumer("t", "g", 0).unwrap();
    let batch = c.poll(10, Wait::NoWait).unwrap();
    drop(b);
    assert_eq!(batch.messages()[0].payload(), b"still here");
    assert!(matches!(batch.ack(), Err(Error::Closed(_))));
}

#[test]
fn handles_are_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<mq::Broker>();
    check::<mq::PartitionConsumer>();
    check::<mq::Subscription>();
    check::<mq::Member>();
    check::<CancelToken>();
    check::<mq::Error>();
    check::<mq::Batch<'static>>();
    check::<mq::Message<'static>>();
}

/// Broker, a clone of it, subscription, member, consumer, cancel token: all 720 orders, with a
/// message in flight for the consumer and the push handler's state counted.
#[test]
fn every_drop_order_of_six_handles() {
    let mut orders = Vec::new();
    permute(&mut vec![0, 1, 2, 3, 4, 5], 0, &mut orders);
    assert_eq!(orders.len(), 720);
    for order in orders {
        let (b, _) = setup(2, 8);
        b.create_topic("m", &mq::TopicConfig::new()).unwrap();
        let drops = Arc::new(AtomicUsize::new(0));
        struct D(Arc<AtomicUsize>);
        impl Drop for D {
            fn drop(&mut self) {
                self.0.fetch_add(1, Ordering::SeqCst);
            }
        }
        let d = D(drops.clone());
        let sub = b
            .subscribe(
                "t",
                "push",
                &SubscriptionOptions::new(),
                move |_: &Message<'_>| {
                    let _k = &d;
                    Ok::<(), String>(())
                },
            )
            .unwrap();
        let member = b.join("m", "g", &MemberOptions::new()).unwrap();
        let mut consumer = b.consumer("t", "g", 0).unwrap();
        b.publish("t", Record::new(b"x").key(b"user-b"), Wait::NoWait)
            .unwrap();
        assert_eq!(consumer.poll(1, Wait::NoWait).map(|x| x.len()), Ok(1));
        let token = CancelToken::new().unwrap();
        let mut slots: Vec<Option<Box<dyn Send>>> = vec![
            Some(Box::new(b.clone())),
            Some(Box::new(b)),
            Some(Box::new(sub)),
            Some(Box::new(member)),
            Some(Box::new(consumer)),
            Some(Box::new(token)),
        ];
        for i in order {
            drop(slots[i].take());
        }
        assert_eq!(
            drops.load(Ordering::SeqCst),
            1,
            "the handler's state is dropped once"
        );
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
