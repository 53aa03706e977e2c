//! The futures on the library's asynchronous calls (library 1.4): a pending call holds no
//! thread, is completed by what would wake its blocking form (a publish, an ack that makes
//! room, the deadline, its token, close), and can be dropped at any point. No sleep
//! synchronises anything here: a future polled once and still pending is parked in the library.
mod common;
use std::future::Future;
use std::pin::{pin, Pin};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use common::setup;
use mq::{CancelToken, Error, Record, Wait};

/// A waker that counts its wakes.
#[derive(Default)]
struct Count(AtomicUsize);
impl Wake for Count {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// Polls `f` once with a counting waker.
fn poll_once<F: Future + ?Sized>(f: Pin<&mut F>, count: &Arc<Count>) -> Poll<F::Output> {
    let waker = Waker::from(count.clone());
    f.poll(&mut Context::from_waker(&waker))
}

/// Runs `f` to completion on this thread, parking between polls (the waker unparks).
fn block_on<F: Future>(f: F) -> F::Output {
    struct Unpark(std::thread::Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut f = pin!(f);
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut Context::from_waker(&waker)) {
            return v;
        }
        std::thread::park();
    }
}

#[test]
fn a_pending_poll_is_completed_by_a_later_publish() {
    let (b, _) = setup(1, 8);
    let mut c = b.consumer("t", "g", 0).unwrap();
    let count = Arc::new(Count::default());
    let mut f = pin!(c.poll_async(10, Wait::Forever));
    assert!(
        poll_once(f.as_mut(), &count).is_pending(),
        "nothing to poll"
    );
    b.publish("t", Record::new(b"late").key(b"k"), Wait::NoWait)
        .unwrap();
    // The completer thread wakes the task; the wake is what we wait for.
    common::eventually("the waker is woken", || count.0.load(Ordering::SeqCst) > 0);
    let Poll::Ready(batch) = poll_once(f.as_mut(), &count) else {
        panic!("woken but not ready")
    };
    let batch = batch.unwrap();
    assert_eq!(batch.len(), 1);
    assert_eq!(batch.messages()[0].payload(), b"late");
    assert_eq!(batch.messages()[0].key(), Some(&b"k"[..]));
    batch.ack().unwrap();
    assert_eq!(b.group_info("t", "g", 0).unwrap().committed, 1);
}

#[test]
fn a_poll_that_need_not_wait_is_ready_at_once() {
    let (b, _) = setup(1, 8);
    b.publish("t", Record::new(b"here"), Wait::NoWait).unwrap();
    let mut c = b.consumer("t", "g", 0).unwrap();
    let count = Arc::new(Count::default());
    let mut f = pin!(c.poll_async(10, Wait::Forever));
    let Poll::Ready(batch) = poll_once(f.as_mut(), &count) else {
        panic!("a message was there")
    };
    assert_eq!(batch.unwrap().messages()[0].payload(), b"here");
    assert_eq!(count.0.load(Ordering::SeqCst), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ack_then_poll_acks_before_it_waits() {
    let (b, _) = setup(1, 8);
    b.publish("t", Record::new(b"a"), Wait::NoWait).unwrap();
    let mut c = b.consumer("t", "g", 0).unwrap();
    let b2 = b.clone();
    let next = tokio::spawn(async move {
        let batch = c.poll_async(10, Wait::NoWait).await?;
        assert_eq!(batch.len(), 1);
        let batch = batch.ack_and_poll_async(10, Wait::Forever).await?;
        let got: Vec<Vec<u8>> = batch.iter().map(|m| m.payload().to_vec()).collect();
        batch.ack()?;
        Ok::<_, Error>(got)
    });
    common::eventually("the ack is made before the wait", || {
        b2.group_info("t", "g", 0).unwrap().committed == 1
    });
    b.publish("t", Record::new(b"b"), Wait::NoWait).unwrap();
    assert_eq!(next.await.unwrap().unwrap(), vec![b"b".to_vec()]);
    // The consumer form, with a rejected ack: nothing polled, no wait.
    let mut c = b.consumer("t", "g", 0).unwrap();
    let e = c
        .ack_and_poll_async(7, 10, Wait::Forever)
        .await
        .unwrap_err();
    assert!(matches!(e, Error::NotInFlight(_)), "{e:?}");
    assert!(e.message().contains('7'), "{e:?}");
}

#[test]
fn a_publish_pending_on_a_full_partition_is_completed_by_an_ack() {
    let (b, _) = setup(1, 1);
    b.publish("t", Record::new(b"first"), Wait::NoWait).unwrap();
    let mut c = b.consumer("t", "g", 0).unwrap();
    drop(c.poll(1, Wait::NoWait).unwrap());
    let count = Arc::new(Count::default());
    let hdrs = [mq::Header::new(b"h", b"v")];
    let mut f = pin!(b.publish_async(
        "t",
        Record::new(b"second").key(b"k").headers(&hdrs),
        Wait::Forever
    ));
    assert!(
        poll_once(f.as_mut(), &count).is_pending(),
        "the partition is full"
    );
    assert_eq!(b.partition_info("t", 0).unwrap().producer_waits, 1);
    c.ack(0).unwrap();
    let at = block_on(f).unwrap();
    assert_eq!((at.partition, at.offset), (0, 1));
    let batch = c.poll(1, Wait::NoWait).unwrap();
    let m = &batch.messages()[0];
    assert_eq!(m.payload(), b"second");
    assert_eq!(m.key(), Some(&b"k"[..]));
    assert_eq!(
        m.headers().collect::<Vec<_>>(),
        vec![(&b"h"[..], &b"v"[..])]
    );
}

#[test]
fn a_batch_goes_on_as_room_appears() {
    let (b, _) = setup(1, 2);
    let mut c = b.consumer("t", "g", 0).unwrap();
    let recs = [
        Record::new(b"a"),
        Record::new(b"b").key(b""),
        Record::new(b"c"),
    ];
    let count = Arc::new(Count::default());
    let mut f = pin!(b.publish_batch_async("t", &recs, Wait::Forever));
    assert!(
        poll_once(f.as_mut(), &count).is_pending(),
        "room for 2 of 3"
    );
    let batch = c.poll(10, Wait::NoWait).unwrap();
    assert_eq!(batch.len(), 2);
    batch.ack().unwrap();
    let results = block_on(f).unwrap();
    let offsets: Vec<i64> = results.iter().map(|p| p.offset).collect();
    assert_eq!(offsets, vec![0, 1, 2]);
    // Refused as a whole: no results.
    let (r, results) = block_on(b.publish_batch_async_with("nope", &recs, Wait::NoWait, None));
    assert!(matches!(r.unwrap_err().error, Error::NoTopic(_)));
    assert!(results.is_empty());
}

#[test]
fn the_deadline_ends_pending_calls() {
    let (b, _) = setup(1, 1);
    let mut c = b.consumer("t", "g", 0).unwrap();
    let e = block_on(c.poll_async(10, Duration::from_millis(20))).unwrap_err();
    assert!(matches!(e, Error::Timeout(_)), "{e:?}");
    b.publish("t", Record::new(b"x"), Wait::NoWait).unwrap();
    let e =
        block_on(b.publish_async("t", Record::new(b"y"), Duration::from_millis(20))).unwrap_err();
    assert!(matches!(e, Error::Full(_)), "{e:?}");
    let (r, results) = block_on(b.publish_batch_async_with(
        "t",
        &[Record::new(b"y")],
        Duration::from_millis(20),
        None,
    ));
    let e = r.unwrap_err();
    assert!(matches!(e.error, Error::Full(_)), "{e:?}");
    assert_eq!(e.published, 0);
    assert_eq!(results.len(), 1);
    assert_eq!(results[0].offset, -1);
}

#[test]
fn a_token_cancels_pending_calls() {
    let (b, _) = setup(1, 1);
    let mut c = b.consumer("t", "g", 0).unwrap();
    let count = Arc::new(Count::default());
    let token = CancelToken::new().unwrap();
    {
        let mut f = pin!(c.poll_async_cancellable(10, Wait::Forever, &token));
        assert!(poll_once(f.as_mut(), &count).is_pending());
        token.cancel();
        let e = block_on(f).unwrap_err();
        assert!(matches!(e, Error::Cancelled(_)), "{e:?}");
    }
    token.reset();
    b.publish("t", Record::new(b"x"), Wait::NoWait).unwrap();
    let mut f = pin!(b.publish_async_cancellable("t", Record::new(b"y"), Wait::Forever, &token));
    assert!(poll_once(f.as_mut(), &count).is_pending());
    token.cancel();
    let e = block_on(f).unwrap_err();
    assert!(matches!(e, Error::Cancelled(_)), "{e:?}");
    assert_eq!(b.partition_info("t", 0).unwrap().end, 1, "nothing appended");
    token.reset();
    let recs = [Record::new(b"y")];
    let mut f = pin!(b.publish_batch_async_with("t", &recs, Wait::Forever, Some(&token)));
    assert!(poll_once(f.as_mut(), &count).is_pending());
    token.cancel();
    let (r, _) = block_on(f);
    assert!(matches!(r.unwrap_err().error, Error::Cancelled(_)));
}

#[test]
fn close_completes_pending_calls_with_closed() {
    let (b, _) = setup(2, 1);
    let full_key = b"k";
    let at = b
        .publish("t", Record::new(b"x").key(full_key), Wait::NoWait)
        .unwrap();
    let mut c = b.consumer("t", "g", 1 - at.partition).unwrap();
    let count = Arc::new(Count::default());
    let mut poll = pin!(c.poll_async(10, Wait::Forever));
    let mut publish = pin!(b.publish_async("t", Record::new(b"y").key(full_key), Wait::Forever));
    let recs = [Record::new(b"z").key(full_key)];
    let mut batch = pin!(b.publish_batch_async("t", &recs, Wait::Forever));
    assert!(poll_once(poll.as_mut(), &count).is_pending());
    assert!(poll_once(publish.as_mut(), &count).is_pending());
    assert!(poll_once(batch.as_mut(), &count).is_pending());
    // Dropping the last clone closes the broker: the futures hold its memory, not the broker.
    drop(b);
    assert_eq!(
        count.0.load(Ordering::SeqCst),
        3,
        "close returns after every done"
    );
    let Poll::Ready(r) = poll_once(poll.as_mut(), &count) else {
        panic!("ended")
    };
    assert!(matches!(r.unwrap_err(), Error::Closed(_)));
    let Poll::Ready(r) = poll_once(publish.as_mut(), &count) else {
        panic!("ended")
    };
    assert!(matches!(r.unwrap_err(), Error::Closed(_)));
    let Poll::Ready(r) = poll_once(batch.as_mut(), &count) else {
        panic!("ended")
    };
    assert!(matches!(r.unwrap_err().error, Error::Closed(_)));
}

#[test]
fn calls_made_after_close_end_at_once() {
    let (b, _) = setup(1, 1);
    let mut c = b.consumer("t", "g", 0).unwrap();
    b.close().unwrap();
    let e = block_on(c.poll_async(10, Wait::Forever)).unwrap_err();
    assert!(matches!(e, Error::Closed(_)), "{e:?}");
    let e = block_on(b.publish_async("t", Record::new(b"x"), Wait::Forever)).unwrap_err();
    assert!(matches!(e, Error::Closed(_)), "{e:?}");
}

#[test]
fn dropping_pending_futures_cancels_them_in_any_order() {
    for order in 0..4 {
        let (b, _) = setup(1, 1);
        b.publish("t", Record::new(b"x"), Wait::NoWait).unwrap();
        let mut c = b.consumer("t", "g", 0).unwrap();
        drop(c.poll(1, Wait::NoWait).unwrap()); // offset 0 in flight, nothing more
        let count = Arc::new(Count::default());
        let mut poll = Box::pin(c.poll_async(10, Wait::Forever));
        let mut publish = Box::pin(b.publish_async("t", Record::new(b"y"), Wait::Forever));
        assert!(poll_once(poll.as_mut(), &count).is_pending());
        assert!(poll_once(publish.as_mut(), &count).is_pending());
        match order {
            0 => {
                drop(poll);
                drop(publish);
                drop(b);
            }
            1 => {
                drop(b);
                drop(publish);
                drop(poll);
            }
            2 => {
                drop(publish);
                let b2 = b.clone();
                drop(b);
                drop(poll);
                drop(b2);
            }
            _ => {
                // Leaked: close completes them; their state stays (leaked with them).
                std::mem::forget(poll);
                std::mem::forget(publish);
                drop(b);
            }
        }
    }
}

#[test]
fn a_dropped_poll_that_got_messages_hands_them_out_again() {
    let (b, _) = setup(1, 8);
    let mut c = b.consumer("t", "g", 0).unwrap();
    let count = Arc::new(Count::default());
    {
        let mut f = Box::pin(c.poll_async(10, Wait::Forever));
        assert!(poll_once(f.as_mut(), &count).is_pending());
        b.publish("t", Record::new(b"m"), Wait::NoWait).unwrap();
        common::eventually("the poll ends", || count.0.load(Ordering::SeqCst) > 0);
        drop(f); // ended with the message, never read: nacked
    }
    let batch = c.poll(10, Wait::NoWait).unwrap();
    assert_eq!(batch.messages()[0].payload(), b"m");
    assert_eq!(batch.messages()[0].delivery_count(), 2);
}

#[test]
fn a_message_larger_than_the_buffer_is_polled_after_growing_it() {
    let (b, _) = setup(1, 8);
    let mut c = b.consumer("t", "g", 0).unwrap();
    let big = vec![7u8; 1 << 20];
    for ack in [false, true] {
        let count = Arc::new(Count::default());
        let last = b.group_info("t", "g", 0).unwrap().next - 1;
        let mut f: Pin<Box<dyn Future<Output = mq::Result<mq::Batch<'_>>> + Send>> = if ack {
            Box::pin(c.ack_and_poll_async(last, 1, Wait::Forever))
        } else {
            Box::pin(c.poll_async(1, Wait::Forever))
        };
        assert!(poll_once(f.as_mut(), &count).is_pending());
        b.publish("t", Record::new(&big), Wait::NoWait).unwrap();
        let batch = block_on(f).unwrap();
        assert_eq!(batch.messages()[0].payload(), &big[..]);
        drop(batch);
    }
    let g = b.group_info("t", "g", 0).unwrap();
    assert_eq!(
        (g.committed, g.next),
        (1, 2),
        "the ack stood through the retry"
    );
}

/// Futures move between the workers of a multi-thread runtime: 64 spawned tasks each poll a
/// partition in a loop (ack-then-poll), while another task publishes with the batch future.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spawned_tasks_on_a_multi_thread_runtime() {
    const P: i32 = 64;
    const PER: usize = 20;
    let b = mq::Broker::new().unwrap();
    b.create_topic("t", &mq::TopicConfig::new().partitions(P).capacity(4))
        .unwrap();
    b.subscribe_group("t", "g", &mq::GroupOptions::new())
        .unwrap();
    let mut tasks = Vec::new();
    for p in 0..P {
        let mut c = b.consumer("t", "g", p).unwrap();
        tasks.push(tokio::spawn(async move {
            let mut got = 0usize;
            let mut batch = c.poll_async(4, Wait::Forever).await?;
            loop {
                got += batch.len();
                tokio::task::yield_now().await; // the batch lives across an await
                if got == PER {
                    batch.ack()?;
                    return Ok::<_, Error>(got);
                }
                batch = batch.ack_and_poll_async(4, Wait::Forever).await?;
            }
        }));
    }
    let b2 = b.clone();
    let publisher = tokio::spawn(async move {
        let payloads: Vec<String> = (0..P as usize * PER).map(|i| i.to_string()).collect();
        for chunk in payloads.chunks(P as usize) {
            // Keyless: round robin, one record to each partition per chunk.
            let recs: Vec<Record<'_>> = chunk.iter().map(|s| Record::new(s.as_bytes())).collect();
            b2.publish_batch_async("t", &recs, Wait::Forever).await?;
        }
        Ok::<_, mq::BatchError>(())
    });
    let limit = Duration::from_secs(20);
    tokio::time::timeout(limit, publisher)
        .await
        .expect("publisher")
        .unwrap()
        .unwrap();
    for t in tasks {
        let got = tokio::time::timeout(limit, t).await.expect("consumer");
        assert_eq!(got.unwrap().unwrap(), PER);
    }
}

/// The process exits while calls are pending (their broker and futures leaked, never closed):
/// the child run of `exit_with_pending_calls_child` must end, with status 0.
#[test]
fn exiting_with_pending_calls_neither_crashes_nor_hangs() {
    let exe = std::env::current_exe().unwrap();
    let mut child = std::process::Command::new(exe)
        .args([
            "exit_with_pending_calls_child",
            "--exact",
            "--ignored",
            "--quiet",
        ])
        .env("MQ_ASYNC_EXIT_CHILD", "1")
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let until = std::time::Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if std::time::Instant::now() > until {
            let _ = child.kill();
            panic!("the process with pending calls did not exit");
        }
        std::thread::sleep(Duration::from_millis(5)); // a deadline's tick, not a synchronisation
    };
    assert!(status.success(), "{status:?}");
}

#[test]
#[ignore = "run by exiting_with_pending_calls_neither_crashes_nor_hangs"]
fn exit_with_pending_calls_child() {
    if std::env::var_os("MQ_ASYNC_EXIT_CHILD").is_none() {
        return;
    }
    let (b, _) = setup(1, 1);
    b.publish("t", Record::new(b"x"), Wait::NoWait).unwrap();
    let count = Arc::new(Count::default());
    let mut c = b.consumer("t", "g", 0).unwrap();
    drop(c.poll(1, Wait::NoWait).unwrap());
    let mut poll = Box::pin(c.poll_async(1, Wait::Forever));
    let mut publish = Box::pin(b.publish_async("t", Record::new(b"y"), Wait::Forever));
    assert!(poll_once(poll.as_mut(), &count).is_pending());
    assert!(poll_once(publish.as_mut(), &count).is_pending());
    std::mem::forget(poll);
    std::mem::forget(publish);
    std::mem::forget(b);
}

/// MQ_PENDING (library 1.4) is how the library says "parked": never the status of an ended
/// call, so it has no variant of its own (a stray one would be `Unknown`, with its name).
#[test]
fn pending_is_a_status_not_an_error_of_an_ended_call() {
    let s = mq::Status(mq::mq_sys::mq_status::MQ_PENDING.0 as i32);
    assert_eq!(s.name(), "MQ_PENDING");
    let e = Error::new(s, "x");
    assert!(
        matches!(&e, Error::Unknown { status, .. } if *status == s),
        "{e:?}"
    );
}
