//! 1,000 pending async polls across 1,000 partitions hold no thread: the broker's one completer
//! serves them all, and one publish each completes them. Alone in its test binary, so that no
//! other test's threads come and go while it counts.
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

use mq::{Broker, GroupOptions, Record, TopicConfig, Wait};

#[derive(Default)]
struct Count(AtomicUsize);
impl Wake for Count {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

fn threads() -> usize {
    std::fs::read_dir("/proc/self/task")
        .expect("/proc/self/task")
        .count()
}

#[test]
fn a_thousand_pending_polls_add_no_thread() {
    const N: i32 = 1000;
    let b = Broker::new().unwrap();
    b.create_topic("t", &TopicConfig::new().partitions(N).capacity(4))
        .unwrap();
    b.subscribe_group("t", "g", &GroupOptions::new()).unwrap();
    let mut consumers: Vec<_> = (0..N).map(|p| b.consumer("t", "g", p).unwrap()).collect();
    let count = Arc::new(Count::default());
    let waker = Waker::from(count.clone());
    let mut cx = Context::from_waker(&waker);
    let mut futures: Vec<_> = consumers
        .iter_mut()
        .map(|c| Box::pin(c.poll_async(1, Wait::Forever)))
        .collect();
    let before = threads();
    assert!(futures[0].as_mut().poll(&mut cx).is_pending());
    let base = threads(); // the first pending call starts the broker's completer
    for f in &mut futures[1..] {
        assert!(f.as_mut().poll(&mut cx).is_pending());
    }
    let pending = threads();
    println!("threads: {before} before, {base} with 1 pending poll, {pending} with {N}");
    assert!(
        base <= before + 1,
        "more than the completer: {before} -> {base}"
    );
    assert_eq!(pending, base, "pending calls added threads");
    // Keyless records go round robin: N of them, one to each partition.
    let t0 = Instant::now();
    for i in 0..N {
        b.publish("t", Record::new(i.to_string().as_bytes()), Wait::NoWait)
            .unwrap();
    }
    let until = Instant::now() + Duration::from_secs(10);
    while count.0.load(Ordering::SeqCst) < N as usize {
        assert!(Instant::now() < until, "not every poll was woken");
        std::thread::yield_now();
    }
    let woken = t0.elapsed();
    let mut got = 0;
    for f in &mut futures {
        match f.as_mut().poll(&mut cx) {
            Poll::Ready(Ok(batch)) => got += batch.len(),
            other => panic!("woken but {:?}", other.map(|r| r.map(|b| b.len()))),
        }
    }
    assert_eq!(got, N as usize);
    println!("{N} publishes and the {N} wakes they cause: {woken:?}");
    assert_eq!(threads(), base);
}
