//! Push subscriptions: handler outcomes, panics, reports, user data released once.
mod common;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{eventually, setup};
use mq::{CallbackError, Error, Message, Record, SubscriptionOptions, Wait};

/// Counts its drops: the handler's state must be released exactly once.
struct DropCount(Arc<AtomicUsize>);
impl Drop for DropCount {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

fn publish_all(b: &mq::Broker, payloads: &[&str]) {
    for p in payloads {
        b.publish("t", Record::new(p.as_bytes()), Wait::Forever)
            .unwrap();
    }
}

#[test]
fn a_panicking_handler_nacks_is_reported_and_keeps_running() {
    let (b, _) = setup(1, 16);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let reports = Arc::new(Mutex::new(Vec::new()));
    let drops = Arc::new(AtomicUsize::new(0));
    let (s, r) = (seen.clone(), reports.clone());
    let guard = DropCount(drops.clone());
    let mut panicked = false;
    let opts = SubscriptionOptions::new().on_error(move |e| r.lock().unwrap().push(e.clone()));
    // One batch: boom's nack brings c back too, given back unseen, so c's first call counts 1.
    publish_all(&b, &["a", "boom", "c"]);
    let sub = b
        .subscribe(
            "t",
            "g",
            &opts,
            move |m: &Message<'_>| -> Result<(), String> {
                let _keep = &guard;
                let p = String::from_utf8_lossy(m.payload()).into_owned();
                s.lock().unwrap().push((p.clone(), m.delivery_count()));
                if p == "boom" && !panicked {
                    panicked = true;
                    panic!("handler blew up on {p}");
                }
                Ok(())
            },
        )
        .unwrap();
    eventually("all acked", || {
        b.group_info("t", "g", 0).unwrap().committed == 3
    });
    sub.close().unwrap();
    assert_eq!(
        drops.load(Ordering::SeqCst),
        1,
        "the handler is dropped exactly once, on close"
    );
    let seen = seen.lock().unwrap().clone();
    let want: Vec<(String, u32)> = [("a", 1), ("boom", 1), ("boom", 2), ("c", 1)]
        .iter()
        .map(|(p, d)| (p.to_string(), *d))
        .collect();
    assert_eq!(seen, want, "the panic nacked boom, which came again");
    let reports = reports.lock().unwrap();
    assert_eq!(reports.len(), 1);
    match &reports[0] {
        CallbackError::HandlerPanic {
            partition,
            offset,
            panic,
            ..
        } => {
            assert_eq!((*partition, *offset), (0, 1));
            assert_eq!(panic, "handler blew up on boom");
        }
        other => panic!("expected a panic report, got {other:?}"),
    }
}

#[test]
fn a_failing_handler_nacks_with_a_delay_and_is_reported() {
    let (b, clock) = setup(1, 16);
    let reports = Arc::new(Mutex::new(Vec::new()));
    let r = reports.clone();
    let calls = Arc::new(AtomicUsize::new(0));
    let c = calls.clone();
    let opts = SubscriptionOptions::new()
        .prefetch(1)
        .on_error(move |e| r.lock().unwrap().push(e.to_string()));
    let sub = b
        .subscribe("t", "g", &opts, move |m: &Message<'_>| {
            let n = c.fetch_add(1, Ordering::SeqCst);
            mq::handler::extend_lease().unwrap();
            if n == 0 {
                mq::handler::set_nack_delay(Duration::from_millis(100)).unwrap();
                assert!(matches!(
                    mq::handler::set_nack_delay_ms(-1),
                    Err(Error::Invalid(_))
                ));
                return Err(format!("not yet: {}", m.offset()));
            }
            Ok(())
        })
        .unwrap();
    publish_all(&b, &["x"]);
    eventually("the nack pause is set", || {
        b.group_info("t", "g", 0).unwrap().paused_until_ns.is_some()
    });
    assert_eq!(
        calls.load(Ordering::SeqCst),
        1,
        "paused: not delivered again yet"
    );
    clock.advance(Duration::from_millis(100));
    eventually("redelivered after the pause", || {
        b.group_info("t", "g", 0).unwrap().committed == 1
    });
    sub.close().unwrap();
    assert_eq!(
        reports.lock().unwrap().as_slice(),
        ["handler of g on t failed at partition 0 offset 0 (nacked): not yet: 0"]
    );
    assert!(
        matches!(mq::handler::extend_lease(), Err(Error::Invalid(_))),
        "not in a handler"
    );
}

#[test]
fn explicit_partitions_and_ownership() {
    let (b, _) = setup(2, 16);
    let opts = SubscriptionOptions::new().partitions(&[1]);
    let sub = b
        .subscribe("t", "g", &opts, |_: &Message<'_>| Ok::<(), String>(()))
        .unwrap();
    let e = b
        .subscribe("t", "g", &opts, |_: &Message<'_>| Ok::<(), String>(()))
        .unwrap_err();
    assert!(matches!(e, Error::Owned(_)), "{e:?}");
    assert!(
        matches!(b.consumer("t", "g", 0), Err(Error::Owned(_))),
        "the group is push-driven here"
    );
    drop(sub);
    let _c = b.consumer("t", "g", 0).unwrap();
    let e = b
        .subscribe(
            "t",
            "g",
            &SubscriptionOptions::new().prefetch(0),
            |_: &Message<'_>| Ok::<(), String>(()),
        )
        .unwrap_err();
    assert!(
        matches!(e, Error::Owned(_)),
        "the consumer above still holds the group: {e:?}"
    );
}

#[test]
fn a_failed_open_releases_the_handler_once() {
    let (b, _) = setup(1, 16);
    let drops = Arc::new(AtomicUsize::new(0));
    let guard = DropCount(drops.clone());
    let e = b
        .subscribe(
            "t",
            "g",
            &SubscriptionOptions::new().prefetch(0),
            move |_: &Message<'_>| {
                let _keep = &guard;
                Ok::<(), String>(())
            },
        )
        .unwrap_err();
    assert!(matches!(e, Error::Invalid(_)), "{e:?}");
    assert_eq!(drops.load(Ordering::SeqCst), 1);
    let e = b
        .subscribe(
            "nope",
            "g",
            &SubscriptionOptions::new(),
            |_: &Message<'_>| Ok::<(), String>(()),
        )
        .unwrap_err();
    assert!(matches!(e, Error::NoTopic(_)));
}

#[test]
fn dropping_a_subscription_inside_its_own_handler_closes_it_afterwards() {
    let (b, _) = setup(1, 16);
    let slot: Arc<Mutex<Option<mq::Subscription>>> = Arc::new(Mutex::new(None));
    let drops = Arc::new(AtomicUsize::new(0));
    let guard = DropCount(drops.clone());
    let s = slot.clone();
    let sub = b
        .subscribe(
            "t",
            "g",
            &SubscriptionOptions::new(),
            move |_: &Message<'_>| {
                let _keep = &guard;
                let mine = s.lock().unwrap().take();
                drop(mine); // MQ_ERR_DEADLOCK inside: closed by a helper thread once we return
                Ok::<(), String>(())
            },
        )
        .unwrap();
    *slot.lock().unwrap() = Some(sub);
    publish_all(&b, &["x"]);
    eventually("the handler state is released", || {
        drops.load(Ordering::SeqCst) == 1
    });
}

/// The push member's session timeout (library 1.3): in-process only checked, over the range
/// mq.h gives every duration of at least 1 ms (1 to 2^40 ms); outside it the open fails with
/// `Invalid` naming the option, and releases the handler.
#[test]
fn the_session_timeout_is_accepted_in_range_and_refused_outside() {
    let (b, _) = setup(2, 16);
    let open = |group: &str, opts: &SubscriptionOptions, seen: Arc<Mutex<Vec<Vec<u8>>>>| {
        b.subscribe("t", group, opts, move |m: &Message<'_>| {
            seen.lock().unwrap().push(m.payload().to_vec());
            Ok::<(), String>(())
        })
    };
    let max = 1i64 << 40;
    let good = [
        SubscriptionOptions::new().session_timeout_ms(1),
        SubscriptionOptions::new().session_timeout_ms(max),
        // A nanosecond rounds up to 1 ms, not down to the refused 0.
        SubscriptionOptions::new().session_timeout(Duration::from_nanos(1)),
        SubscriptionOptions::new().session_timeout(Duration::from_secs(3)),
    ];
    let seen = Arc::new(Mutex::new(Vec::new()));
    let subs: Vec<_> = good
        .iter()
        .enumerate()
        .map(|(i, o)| {
            open(&format!("ok-{i}"), o, seen.clone()).unwrap_or_else(|e| panic!("{o:?}: {e}"))
        })
        .collect();
    // Accepted, each subscription delivers (every group gets the message).
    publish_all(&b, &["m"]);
    eventually("every subscription handled the message", || {
        seen.lock().unwrap().len() == good.len()
    });
    for s in subs {
        s.close().unwrap();
    }

    let bad = [
        SubscriptionOptions::new().session_timeout_ms(0),
        SubscriptionOptions::new().session_timeout_ms(-1),
        SubscriptionOptions::new().session_timeout_ms(max + 1),
        SubscriptionOptions::new().session_timeout(Duration::ZERO),
        SubscriptionOptions::new().session_timeout(Duration::from_millis(max as u64 + 1)),
    ];
    for o in &bad {
        let drops = Arc::new(AtomicUsize::new(0));
        let guard = DropCount(drops.clone());
        let e = b
            .subscribe("t", "bad", o, move |_: &Message<'_>| {
                let _keep = &guard;
                Ok::<(), String>(())
            })
            .unwrap_err();
        assert!(matches!(e, Error::Invalid(_)), "{o:?}: {e:?}");
        assert!(e.message().contains("session_timeout_ms"), "{o:?}: {e}");
        assert_eq!(
            drops.load(Ordering::SeqCst),
            1,
            "{o:?}: handler released once"
        );
    }
    assert!(format!("{:?}", bad[0]).contains("session_timeout_ms: Some(0)"));
}
