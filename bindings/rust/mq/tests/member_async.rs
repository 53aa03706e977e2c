//! The member's futures on the library's asynchronous member polls (library 1.4): a pending
//! poll waits on every partition the member owns without a thread, and ends as the blocking
//! poll would (messages, `Rebalanced` on a join, the deadline, its token, close). No sleep
//! synchronises anything here: a future polled once and still pending is parked in the library.
mod common;
use std::future::Future;
use std::pin::{pin, Pin};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use common::setup;
use mq::{Broker, CancelToken, Error, MemberOptions, Record, Wait};

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

impl Count {
    fn get(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

/// Polls `f` once with a counting waker.
fn poll_once<F: Future + ?Sized>(f: Pin<&mut F>, count: &Arc<Count>) -> Poll<F::Output> {
    let waker = Waker::from(count.clone());
    f.poll(&mut Context::from_waker(&waker))
}

/// A key that `topic`'s partitioner sends to partition `p` of `partitions`.
fn key_for(p: i32, partitions: i32) -> Vec<u8> {
    (0..)
        .map(|i| format!("k{i}").into_bytes())
        .find(|k| mq::key_partition(k, partitions).unwrap() == p)
        .unwrap()
}

fn publish_to(b: &Broker, p: i32, partitions: i32, payload: &[u8]) {
    let key = key_for(p, partitions);
    let at = b
        .publish("t", Record::new(payload).key(&key), Wait::NoWait)
        .unwrap();
    assert_eq!(at.partition, p);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pending_poll_is_completed_by_a_publish_on_any_of_its_partitions() {
    let (b, _) = setup(4, 8);
    let m = Arc::new(b.join("t", "g", &MemberOptions::new().id("a")).unwrap());
    assert_eq!(m.assignment().unwrap().partitions, [0, 1, 2, 3]);
    for p in [3, 0, 2] {
        let count = Arc::new(Count::default());
        let mut f = pin!(m.poll_async(10, Wait::Forever));
        assert!(poll_once(f.as_mut(), &count).is_pending(), "nothing yet");
        publish_to(&b, p, 4, format!("on-{p}").as_bytes());
        let batch = f.await.unwrap();
        assert_eq!(batch.partition(), Some(p));
        assert_eq!(batch.messages()[0].payload(), format!("on-{p}").as_bytes());
        batch.ack().unwrap();
        assert_eq!(b.group_info("t", "g", p).unwrap().committed, 1);
    }
    // Spawned: the task owns the member (the future borrows it), a publish from here ends it.
    let m2 = m.clone();
    let task = tokio::spawn(async move {
        let batch = m2.poll_async(10, Wait::Forever).await?;
        let got = (batch.partition(), batch.messages()[0].payload().to_vec());
        // The batch acked and the next poll, in one call; it ends on another partition.
        let batch = batch.ack_and_poll_async(10, Wait::Forever).await?;
        let next = (batch.partition(), batch.messages()[0].payload().to_vec());
        batch.ack()?;
        Ok::<_, Error>((got, next))
    });
    publish_to(&b, 1, 4, b"first");
    common::eventually("the first batch is acked", || {
        b.group_info("t", "g", 1).unwrap().committed == 1
    });
    publish_to(&b, 2, 4, b"second");
    let (got, next) = task.await.unwrap().unwrap();
    assert_eq!(got, (Some(1), b"first".to_vec()));
    assert_eq!(next, (Some(2), b"second".to_vec()));
    assert_eq!(b.group_info("t", "g", 2).unwrap().committed, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_poll_that_need_not_wait_is_ready_at_once() {
    let (b, _) = setup(2, 8);
    let m = b.join("t", "g", &MemberOptions::new()).unwrap();
    publish_to(&b, 1, 2, b"here");
    let count = Arc::new(Count::default());
    let mut f = pin!(m.poll_async(10, Wait::Forever));
    let Poll::Ready(batch) = poll_once(f.as_mut(), &count) else {
        panic!("a message was there")
    };
    assert_eq!(batch.unwrap().messages()[0].payload(), b"here");
    assert_eq!(count.get(), 0);
    // A rejected ack polls nothing and does not wait.
    let e = m
        .ack_and_poll_async(0, 5, 10, Wait::Forever)
        .await
        .unwrap_err();
    assert!(matches!(e, Error::NotInFlight(_)), "{e:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ack_then_poll_acks_before_it_waits() {
    let (b, _) = setup(2, 8);
    let m = Arc::new(b.join("t", "g", &MemberOptions::new()).unwrap());
    publish_to(&b, 0, 2, b"a");
    drop(m.poll(1, Wait::NoWait).unwrap()); // offset 0 of partition 0 in flight
    let m2 = m.clone();
    let task = tokio::spawn(async move {
        let batch = m2.ack_and_poll_async(0, 0, 10, Wait::Forever).await?;
        Ok::<_, Error>((batch.partition(), batch.messages()[0].payload().to_vec()))
    });
    common::eventually("the ack is made before the wait", || {
        b.group_info("t", "g", 0).unwrap().committed == 1
    });
    publish_to(&b, 1, 2, b"b");
    assert_eq!(task.await.unwrap().unwrap(), (Some(1), b"b".to_vec()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_join_ends_a_pending_poll_with_rebalanced() {
    let (b, _) = setup(4, 8);
    let a = Arc::new(b.join("t", "g", &MemberOptions::new().id("a")).unwrap());
    let a2 = a.clone();
    let task = tokio::spawn(async move { a2.poll_async(10, Wait::Forever).await.map(|b| b.len()) });
    // The join rebalances whenever the task's poll starts: before (Rebalanced at once) or while
    // it waits (Rebalanced from the completer).
    let other = b.join("t", "g", &MemberOptions::new().id("b")).unwrap();
    let e = task.await.unwrap().unwrap_err();
    assert!(matches!(e, Error::Rebalanced(_)), "{e:?}");
    // Strictly pending when the join comes.
    let asg = a.assignment().unwrap();
    let count = Arc::new(Count::default());
    {
        let mut f = pin!(a.poll_async(10, Wait::Forever));
        assert!(poll_once(f.as_mut(), &count).is_pending());
        let third = b.join("t", "g", &MemberOptions::new().id("c")).unwrap();
        common::eventually("the poll ends", || count.get() > 0);
        let Poll::Ready(r) = poll_once(f.as_mut(), &count) else {
            panic!("woken but not ready")
        };
        assert!(matches!(r, Err(Error::Rebalanced(_))), "{:?}", r.err());
        drop(third);
    }
    assert!(a.assignment().unwrap().generation > asg.generation + 1);
    // Only the member's own partitions wake it.
    let mine = a.assignment().unwrap().partitions;
    let theirs = other.assignment().unwrap().partitions;
    assert!(!mine.is_empty() && !theirs.is_empty());
    let mut f = pin!(a.poll_async(10, Wait::Forever));
    assert!(poll_once(f.as_mut(), &count).is_pending());
    publish_to(&b, theirs[0], 4, b"theirs");
    let got = other.poll(10, Wait::NoWait).unwrap();
    assert_eq!(got.messages()[0].payload(), b"theirs");
    assert!(
        poll_once(f.as_mut(), &count).is_pending(),
        "not a's partition"
    );
    publish_to(&b, mine[0], 4, b"ours");
    let batch = f.await.unwrap();
    assert_eq!(batch.partition(), Some(mine[0]));
    assert_eq!(batch.messages()[0].payload(), b"ours");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_deadline_and_the_token_end_a_pending_poll() {
    let (b, _) = setup(2, 8);
    let m = b.join("t", "g", &MemberOptions::new()).unwrap();
    let e = m
        .poll_async(10, Duration::from_millis(20))
        .await
        .unwrap_err();
    assert!(matches!(e, Error::Timeout(_)), "{e:?}");
    let token = CancelToken::new().unwrap();
    let count = Arc::new(Count::default());
    {
        let mut f = pin!(m.poll_async_cancellable(10, Wait::Forever, &token));
        assert!(poll_once(f.as_mut(), &count).is_pending());
        token.cancel();
        let e = f.await.unwrap_err();
        assert!(matches!(e, Error::Cancelled(_)), "{e:?}");
    }
    // The ack-then-poll's ack stands when its poll is cancelled.
    token.reset();
    publish_to(&b, 0, 2, b"x");
    drop(m.poll(1, Wait::NoWait).unwrap());
    let mut f = pin!(m.ack_and_poll_async_cancellable(0, 0, 10, Wait::Forever, &token));
    assert!(poll_once(f.as_mut(), &count).is_pending());
    assert_eq!(b.group_info("t", "g", 0).unwrap().committed, 1);
    token.cancel();
    assert!(matches!(f.await.unwrap_err(), Error::Cancelled(_)));
}

#[test]
fn dropping_a_pending_poll_cancels_it_and_a_dropped_batch_is_handed_out_again() {
    let (b, _) = setup(2, 8);
    let m = b.join("t", "g", &MemberOptions::new()).unwrap();
    let count = Arc::new(Count::default());
    // Ended with a message nobody reads: nacked, handed out again at once.
    let mut f = Box::pin(m.poll_async(10, Wait::Forever));
    assert!(poll_once(f.as_mut(), &count).is_pending());
    publish_to(&b, 1, 2, b"m");
    common::eventually("the poll ends", || count.get() > 0);
    drop(f);
    let batch = m.poll(10, Wait::NoWait).unwrap();
    assert_eq!(batch.messages()[0].payload(), b"m");
    assert_eq!(batch.messages()[0].delivery_count(), 2);
    batch.ack().unwrap();
    // Dropped while pending: its token is triggered.
    let token = CancelToken::new().unwrap();
    let mut f = Box::pin(m.poll_async_cancellable(10, Wait::Forever, &token));
    assert!(poll_once(f.as_mut(), &count).is_pending());
    drop(f);
    assert!(token.is_cancelled(), "a drop triggers the token");
}

#[test]
fn closing_the_member_after_its_pending_polls_neither_crashes_nor_hangs() {
    for order in 0..3 {
        let (b, _) = setup(2, 8);
        let m = b.join("t", "g", &MemberOptions::new()).unwrap();
        let count = Arc::new(Count::default());
        let mut f = Box::pin(m.poll_async(10, Wait::Forever));
        assert!(poll_once(f.as_mut(), &count).is_pending());
        match order {
            // Dropped (cancelled), then closed at once: close waits for its done.
            0 => {
                drop(f);
                m.close().unwrap();
            }
            // Leaked: close completes it (Closed, its waker woken) and returns after its done;
            // its state stays, leaked with it.
            1 => {
                std::mem::forget(f);
                m.close().unwrap();
                assert_eq!(count.get(), 1, "close returns after the call's done");
            }
            // Leaked, and the member dropped.
            _ => {
                std::mem::forget(f);
                drop(m);
                assert_eq!(count.get(), 1);
            }
        }
        // The group goes on without it.
        let n = b.join("t", "g", &MemberOptions::new()).unwrap();
        assert_eq!(n.assignment().unwrap().partitions, [0, 1]);
    }
}

#[test]
fn closing_the_broker_ends_a_pending_poll_with_closed() {
    let (b, _) = setup(2, 8);
    let m = b.join("t", "g", &MemberOptions::new()).unwrap();
    let count = Arc::new(Count::default());
    let mut f = pin!(m.poll_async(10, Wait::Forever));
    assert!(poll_once(f.as_mut(), &count).is_pending());
    b.close().unwrap();
    assert_eq!(count.get(), 1, "close returns after the call's done");
    let Poll::Ready(r) = poll_once(f.as_mut(), &count) else {
        panic!("ended")
    };
    assert!(matches!(r, Err(Error::Closed(_))), "{:?}", r.err());
    let e = pin!(m.poll_async(10, Wait::Forever));
    let Poll::Ready(r) = poll_once(e, &count) else {
        panic!("a closed member's poll ends at once")
    };
    assert!(matches!(r, Err(Error::Closed(_))), "{:?}", r.err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_larger_than_the_buffer_is_polled_after_growing_it() {
    let (b, _) = setup(2, 8);
    let m = Arc::new(b.join("t", "g", &MemberOptions::new()).unwrap());
    let big = vec![7u8; 1 << 19];
    publish_to(&b, 0, 2, b"small");
    let first = m.poll_async(1, Wait::NoWait).await.unwrap();
    assert_eq!(first.len(), 1);
    let count = Arc::new(Count::default());
    let mut f = pin!(first.ack_and_poll_async(1, Wait::Forever));
    assert!(poll_once(f.as_mut(), &count).is_pending());
    let key = key_for(1, 2);
    b.publish("t", Record::new(&big).key(&key), Wait::NoWait)
        .unwrap();
    let batch = f.await.unwrap();
    assert_eq!(batch.messages()[0].payload(), &big[..]);
    assert_eq!(
        b.group_info("t", "g", 0).unwrap().committed,
        1,
        "the ack stood through the retry"
    );
}

/// Many members' futures move between the workers of a multi-thread runtime: each task owns a
/// member and polls its partitions in a loop (ack-then-poll), while publishes come from here.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spawned_member_tasks_on_a_multi_thread_runtime() {
    const P: i32 = 16;
    const MEMBERS: usize = 4;
    const TOTAL: usize = 400;
    let b = Broker::new().unwrap();
    b.create_topic("t", &mq::TopicConfig::new().partitions(P).capacity(8))
        .unwrap();
    let members: Vec<_> = (0..MEMBERS)
        .map(|i| {
            b.join("t", "g", &MemberOptions::new().id(&format!("m{i}")))
                .unwrap()
        })
        .collect();
    for m in &members {
        assert_eq!(
            m.assignment().unwrap().partitions.len(),
            P as usize / MEMBERS
        );
    }
    let seen = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for m in members {
        let seen = seen.clone();
        tasks.push(tokio::spawn(async move {
            let mut mine = 0usize;
            let mut batch: Option<mq::MemberBatch<'_>> = None;
            let wait = Duration::from_millis(100);
            loop {
                let got = match batch.take() {
                    // The batch acked and the next poll, in one call.
                    Some(b) => b.ack_and_poll_async(4, wait).await,
                    None => m.poll_async(4, wait).await,
                };
                match got {
                    Ok(b) => {
                        mine += b.len();
                        seen.fetch_add(b.len(), Ordering::SeqCst);
                        tokio::task::yield_now().await; // the batch lives across an await
                        batch = Some(b);
                    }
                    // The last ack stood; everything was seen: done. (The member goes back to
                    // the test: leaving now would rebalance the others' last polls.)
                    Err(Error::Timeout(_)) if seen.load(Ordering::SeqCst) == TOTAL => break,
                    Err(Error::Timeout(_)) => {}
                    Err(e) => return Err(e),
                }
            }
            drop(batch);
            Ok::<_, Error>((mine, m))
        }));
    }
    let payloads: Vec<String> = (0..TOTAL).map(|i| i.to_string()).collect();
    for chunk in payloads.chunks(P as usize) {
        let recs: Vec<Record<'_>> = chunk.iter().map(|s| Record::new(s.as_bytes())).collect();
        b.publish_batch_async("t", &recs, Wait::Forever)
            .await
            .unwrap();
    }
    let limit = Duration::from_secs(30);
    let mut total = 0;
    let mut members = Vec::new();
    for t in tasks {
        let (mine, m) = tokio::time::timeout(limit, t)
            .await
            .expect("a member task")
            .unwrap()
            .unwrap();
        total += mine;
        members.push(m);
    }
    assert_eq!(total, TOTAL);
    let committed: i64 = (0..P)
        .map(|p| b.group_info("t", "g", p).unwrap().committed)
        .sum();
    assert_eq!(committed, TOTAL as i64, "every batch acked");
}
