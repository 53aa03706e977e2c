//! The async API under tokio: futures that hold no thread while they wait, cancellation by
//! drop, and a push Stream whose bounded buffer keeps back-pressure.
mod common;
use std::future::Future;
use std::task::Poll;
use std::time::{Duration, Instant};

use common::setup;
use futures_util::StreamExt;
use mq::{Error, Record, SubscriptionOptions, Wait};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn publish_and_poll_as_futures() {
    let (b, _) = setup(1, 8);
    let at = b
        .publish_async("t", Record::new(b"a").key(b"k"), Wait::Forever)
        .await
        .unwrap();
    assert_eq!(at.offset, 0);
    let mut c = b.consumer("t", "g", 0).unwrap();
    let batch = c.poll_async(10, Duration::from_secs(5)).await.unwrap();
    assert_eq!(batch.messages()[0].payload(), b"a");
    batch.ack().unwrap();
    let e = c
        .poll_async(10, Duration::from_millis(5))
        .await
        .unwrap_err();
    assert!(matches!(e, Error::Timeout(_)), "{e:?}");
    // A waiting poll is woken by a publish from another task.
    let b2 = b.clone();
    let publisher = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(20)).await;
        b2.publish_async("t", Record::new(b"later"), Wait::Forever)
            .await
    });
    let batch = c.poll_async(10, Wait::Forever).await.unwrap();
    assert_eq!(batch.messages()[0].payload(), b"later");
    drop(batch);
    publisher.await.unwrap().unwrap();
}

/// One blocking thread (the futures use none: they are on the library's asynchronous calls),
/// and a dropped call that was not cancelled must not hold anything the next call needs.
#[test]
fn dropping_a_future_cancels_its_c_call() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .max_blocking_threads(1)
        .enable_time()
        .build()
        .unwrap();
    rt.block_on(async {
        let (b, _) = setup(1, 1);
        let mut c = b.consumer("t", "g", 0).unwrap();
        let r =
            tokio::time::timeout(Duration::from_millis(30), c.poll_async(10, Wait::Forever)).await;
        assert!(
            r.is_err(),
            "nothing to poll: the future was still waiting when dropped"
        );
        drop(r);
        let t0 = Instant::now();
        let limit = Duration::from_secs(5);
        tokio::time::timeout(
            limit,
            b.publish_async("t", Record::new(b"fill"), Wait::Forever),
        )
        .await
        .expect("the cancelled poll still holds the only blocking thread")
        .unwrap();
        assert!(
            t0.elapsed() < Duration::from_millis(100),
            "the cancelled poll held the thread {:?}",
            t0.elapsed()
        );

        let r = tokio::time::timeout(
            Duration::from_millis(30),
            b.publish_async("t", Record::new(b"x"), Wait::Forever),
        )
        .await;
        assert!(
            r.is_err(),
            "the partition is full: the publish was still waiting when dropped"
        );
        let t0 = Instant::now();
        let batch = tokio::time::timeout(limit, c.poll_async(10, Duration::from_secs(5)))
            .await
            .expect("the cancelled publish still holds the only blocking thread")
            .unwrap();
        assert!(
            t0.elapsed() < Duration::from_millis(100),
            "the cancelled publish held the thread"
        );
        assert_eq!(batch.len(), 1, "the cancelled publish appended nothing");
        batch.ack().unwrap();
        assert_eq!(b.partition_info("t", 0).unwrap().end, 1);
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_push_stream_delivers_in_order_and_holds_back_when_unread() {
    let (b, _) = setup(1, 64);
    let mut s = b
        .subscribe_stream("t", "push", &SubscriptionOptions::new().prefetch(1), 2)
        .unwrap();
    for i in 0..10 {
        b.publish_async("t", Record::new(format!("m-{i}").as_bytes()), Wait::Forever)
            .await
            .unwrap();
    }
    // Unread, the stream holds 2 buffered messages plus 1 in its handler: the subscription
    // stops taking more, so the group's cursor stays put.
    common::eventually("the buffer fills", || {
        b.group_info("t", "push", 0).unwrap().next >= 3
    });
    tokio::time::sleep(Duration::from_millis(50)).await; // time for a wrong extra delivery
    let info = b.group_info("t", "push", 0).unwrap();
    assert!(
        info.next <= 3 && info.committed <= 2,
        "back-pressure lost: {info:?}"
    );
    for i in 0..10 {
        let m = tokio::time::timeout(Duration::from_secs(10), s.next())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(m.payload, format!("m-{i}").as_bytes());
    }
    s.close().unwrap();
    assert!(s.next().await.is_none(), "closed");
}

#[tokio::test]
async fn dropping_an_unread_stream_does_not_hang() {
    let (b, _) = setup(1, 64);
    let s = b
        .subscribe_stream("t", "push", &SubscriptionOptions::new(), 1)
        .unwrap();
    for i in 0..5 {
        b.publish("t", Record::new(format!("m-{i}").as_bytes()), Wait::NoWait)
            .unwrap();
    }
    common::eventually("the handler waits for room", || {
        b.group_info("t", "push", 0).unwrap().next >= 1
    });
    drop(s); // the handler is blocked on the full buffer: it must be released
    let info = b.group_info("t", "push", 0).unwrap();
    assert!(
        info.committed < 5,
        "unread messages were not all acked: {info:?}"
    );
}

/// Every async call (its future, the batch it returns, the stream) moves into `tokio::spawn` on
/// a multi-thread runtime, and works there: a task polls (waiting) and holds its batch across an
/// await, others publish and read the push stream.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_async_call_runs_inside_tokio_spawn() {
    let (b, _) = setup(1, 64);
    let stream = b
        .subscribe_stream("t", "push", &SubscriptionOptions::new(), 4)
        .unwrap();
    let mut c = b.consumer("t", "g", 0).unwrap();
    let poller = tokio::spawn(async move {
        let mut got = Vec::new();
        while got.len() < 3 {
            let batch = c.poll_async(10, Wait::Forever).await?;
            // The batch (copies in the consumer's buffer) lives across an await: it must be Send too.
            tokio::task::yield_now().await;
            got.extend(batch.messages().iter().map(|m| m.payload().to_vec()));
            batch.ack()?;
        }
        Ok::<_, Error>(got)
    });
    let reader = tokio::spawn(async move {
        let mut s = stream;
        let mut got = Vec::new();
        while got.len() < 3 {
            got.push(s.next().await.expect("open").payload);
        }
        s.close()?;
        Ok::<_, Error>(got)
    });
    // The future itself, borrowing nothing, is what gets spawned.
    let first = tokio::spawn(b.publish_async("t", Record::new(b"m-0"), Wait::Forever));
    assert_eq!(first.await.unwrap().unwrap().offset, 0);
    let b2 = b.clone();
    let publisher = tokio::spawn(async move {
        for i in 1..3 {
            let p = format!("m-{i}");
            b2.publish_async("t", Record::new(p.as_bytes()).key(b"k"), Wait::Forever)
                .await?;
        }
        Ok::<_, Error>(())
    });
    publisher.await.unwrap().unwrap();
    let want: Vec<Vec<u8>> = (0..3).map(|i| format!("m-{i}").into_bytes()).collect();
    let limit = Duration::from_secs(10);
    let polled = tokio::time::timeout(limit, poller).await.expect("poller");
    assert_eq!(polled.unwrap().unwrap(), want);
    let read = tokio::time::timeout(limit, reader).await.expect("reader");
    assert_eq!(read.unwrap().unwrap(), want);
}

/// A spawned task aborted while its poll waits: the abort drops the future on a worker thread,
/// which cancels the C call. With one blocking thread, a call left waiting would keep the
/// spawned publish after it from ever running.
#[test]
fn aborting_a_spawned_poll_cancels_its_c_call() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .max_blocking_threads(1)
        .enable_time()
        .build()
        .unwrap();
    rt.block_on(async {
        let (b, _) = setup(1, 8);
        let mut c = b.consumer("t", "g", 0).unwrap();
        let (started_tx, started_rx) = tokio::sync::oneshot::channel();
        let poller = tokio::spawn(async move {
            let mut poll = Box::pin(c.poll_async(10, Wait::Forever));
            // Polled once, the future has handed its C call to the blocking pool (nothing to
            // poll: it waits). A token triggered before the C call starts still cancels it.
            let first = std::future::poll_fn(|cx| Poll::Ready(poll.as_mut().poll(cx))).await;
            assert!(first.is_pending(), "nothing was published");
            started_tx.send(()).unwrap();
            poll.await.map(|batch| batch.len())
        });
        started_rx.await.unwrap();
        poller.abort();
        assert!(poller.await.unwrap_err().is_cancelled());
        let published = tokio::time::timeout(
            Duration::from_secs(5),
            tokio::spawn(b.publish_async("t", Record::new(b"x"), Wait::Forever)),
        )
        .await
        .expect("the aborted poll still holds the only blocking thread");
        assert_eq!(published.unwrap().unwrap().offset, 0);
    });
}
