//! The Rust binding's benchmark: the C suite's workloads 1, 2, 3 and 5 through the `mq` crate,
//! beside the same workloads through the C API (bench/suite, compiled in) and beside
//! `tokio::sync::mpsc` and `crossbeam_channel::bounded(1024)` carrying the same 64-byte
//! messages between two threads; and the futures (on the library's asynchronous calls) of a
//! producer task and a consumer task on a tokio runtime beside `tokio::sync::mpsc` between two
//! tasks of the same runtime. Rounds are interleaved (each round runs everything once), so
//! load from elsewhere hits all alike; figures are medians over rounds, ratios medians of the
//! per-round ratios.
//!
//!   cargo run --release -p mq-bench -- [--rounds N] [--scale F] [--smoke]
//!
//! The pull workloads (1, 2, 3) publish through a publisher and poll through cursors (library
//! 1.7's handles); row "2. single, by name" is workload 2 through the named calls.
//!
//! Every run verifies count, order and a payload digest of what each receiver got.
use std::sync::{Arc, Condvar, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use mq::{
    Batch, Broker, Cursor, GroupOptions, Message, PartitionConsumer, Record, SubscriptionOptions,
    TopicConfig, Wait,
};

const PAYLOAD: usize = 64;
const BATCH: usize = 64;
const CAPACITY: i64 = 1024;
const TOPIC: &str = "bench";

extern "C" {
    fn mq_c_suite_pull(n: u64, batch: usize, groups: i32) -> f64;
    fn mq_c_suite_push(n: u64, prefetch: i32) -> f64;
}

// ---- the suite's messages (bench/suite/common.h): word 0 is the sequence number ----------------

fn fill(seq: u64) -> [u8; PAYLOAD] {
    let mut b = [0u8; PAYLOAD];
    b[..8].copy_from_slice(&seq.to_le_bytes());
    for i in 1..8u64 {
        let w = (seq + i).wrapping_mul(0x9e3779b97f4a7c15) ^ (i << 56);
        b[i as usize * 8..i as usize * 8 + 8].copy_from_slice(&w.to_le_bytes());
    }
    b
}

fn digest_term(p: &[u8]) -> u64 {
    const K: [u64; 8] = [
        0xff51afd7ed558ccd,
        0xc4ceb9fe1a85ec53,
        0x87c37b91114253d5,
        0x4cf5ad432745937f,
        0x52dce729da3ed4b1,
        0x38495ab5a3d7c4e3,
        0x9e3779b97f4a7c15,
        0xbf58476d1ce4e5b9,
    ];
    let mut h = 0u64;
    for (i, k) in K.iter().enumerate() {
        let w = u64::from_le_bytes(p[i * 8..i * 8 + 8].try_into().unwrap());
        h = h.wrapping_add((w ^ (w >> 29)).wrapping_mul(*k));
    }
    h ^ (h >> 31)
}

fn expected_digest(n: u64) -> u64 {
    (0..n).fold(0u64, |d, s| d.wrapping_add(digest_term(&fill(s))))
}

/// A receiver's running check: every message in sequence order, and the digest at the end.
struct Verifier {
    what: &'static str,
    next: u64,
    digest: u64,
}

impl Verifier {
    fn new(what: &'static str) -> Verifier {
        Verifier {
            what,
            next: 0,
            digest: 0,
        }
    }
    #[inline]
    fn take(&mut self, p: &[u8]) {
        assert_eq!(
            p.len(),
            PAYLOAD,
            "{}: payload of {} bytes",
            self.what,
            p.len()
        );
        let seq = u64::from_le_bytes(p[..8].try_into().unwrap());
        assert_eq!(seq, self.next, "{}: order", self.what);
        self.next += 1;
        self.digest = self.digest.wrapping_add(digest_term(p));
    }
    fn finish(&self, n: u64, want: u64) {
        assert_eq!(self.next, n, "{}: count", self.what);
        assert_eq!(self.digest, want, "{}: payload digest", self.what);
    }
}

// ---- workloads through the Rust binding --------------------------------------------------------

fn broker() -> Broker {
    let b = Broker::new().unwrap();
    b.create_topic(TOPIC, &TopicConfig::new().partitions(1).capacity(CAPACITY))
        .unwrap();
    b
}

/// What the pull workloads consume through: a cursor (the handle), or a consumer (by name).
trait Pull: Send + 'static {
    fn pull(&mut self, max: usize, wait: Duration) -> mq::Result<Batch<'_>>;
}

impl Pull for Cursor {
    fn pull(&mut self, max: usize, wait: Duration) -> mq::Result<Batch<'_>> {
        self.poll(max, wait)
    }
}

impl Pull for PartitionConsumer {
    fn pull(&mut self, max: usize, wait: Duration) -> mq::Result<Batch<'_>> {
        self.poll(max, wait)
    }
}

/// A consumer thread of the pull workloads; `together` as in [`rust_pull`].
fn pull_thread(
    mut c: impl Pull,
    n: u64,
    batch: usize,
    together: bool,
) -> thread::JoinHandle<Verifier> {
    // A long wait rather than forever: a lost message fails instead of hanging.
    let wait = Duration::from_secs(10);
    thread::spawn(move || {
        let mut v = Verifier::new("rust pull");
        if together {
            let mut cur = c.pull(batch, wait).expect("poll");
            loop {
                for m in &cur {
                    v.take(m.payload());
                }
                if v.next >= n {
                    cur.ack().expect("ack");
                    break;
                }
                cur = cur.ack_and_poll(batch, wait).expect("ack_and_poll");
            }
            return v;
        }
        while v.next < n {
            let cur = c.pull(batch, wait).expect("poll");
            for m in &cur {
                v.take(m.payload());
            }
            cur.ack().expect("ack");
        }
        v
    })
}

/// Workloads 1 (batch 64), 2 (single: publish one, poll one, ack one) and 3 (2 groups);
/// `together`: each batch's ack travels with the next poll (`Batch::ack_and_poll`); `handles`:
/// through a publisher and cursors (library 1.7), else by name.
fn rust_pull(n: u64, batch: usize, groups: usize, together: bool, handles: bool, want: u64) -> f64 {
    let b = broker();
    let names = ["g0", "g1", "g2", "g3"];
    for g in &names[..groups] {
        b.subscribe_group(TOPIC, g, &GroupOptions::new()).unwrap();
    }
    let consumers: Vec<_> = names[..groups]
        .iter()
        .map(|g| match handles {
            true => pull_thread(b.cursor(TOPIC, g, 0).unwrap(), n, batch, together),
            false => pull_thread(b.consumer(TOPIC, g, 0).unwrap(), n, batch, together),
        })
        .collect();
    let publisher = handles.then(|| b.publisher(TOPIC).unwrap());
    let t0 = Instant::now();
    let mut bufs = [[0u8; PAYLOAD]; BATCH];
    let mut seq = 0u64;
    while seq < n {
        if batch == 1 {
            bufs[0] = fill(seq);
            seq += 1;
            let r = Record::new(&bufs[0]);
            match &publisher {
                Some(p) => p.publish(r, Wait::Forever),
                None => b.publish(TOPIC, r, Wait::Forever),
            }
            .expect("publish");
        } else {
            let k = (BATCH as u64).min(n - seq) as usize;
            for (i, buf) in bufs[..k].iter_mut().enumerate() {
                *buf = fill(seq + i as u64);
            }
            seq += k as u64;
            let recs: [Record<'_>; BATCH] = std::array::from_fn(|i| Record::new(&bufs[i]));
            match &publisher {
                Some(p) => p.publish_batch(&recs[..k], Wait::Forever),
                None => b.publish_batch(TOPIC, &recs[..k], Wait::Forever),
            }
            .expect("publish_batch");
        }
    }
    let vs: Vec<Verifier> = consumers.into_iter().map(|c| c.join().unwrap()).collect();
    let elapsed = t0.elapsed().as_secs_f64();
    for v in vs {
        v.finish(n, want);
    }
    n as f64 / elapsed
}

/// Workload 5: 1 producer (publish_batch 64) -> 1 push subscription with `prefetch`.
fn rust_push(n: u64, prefetch: i32, want: u64) -> f64 {
    let b = broker();
    let done = Arc::new((Mutex::new(None::<Verifier>), Condvar::new()));
    let d = done.clone();
    let mut v = Some(Verifier::new("rust push"));
    let sub = b
        .subscribe(
            TOPIC,
            "push",
            &SubscriptionOptions::new().prefetch(prefetch),
            move |m: &Message<'_>| {
                let mine = v.as_mut().expect("called after the last message");
                mine.take(m.payload());
                if mine.next == n {
                    *d.0.lock().unwrap() = v.take();
                    d.1.notify_all();
                }
                Ok::<(), &str>(())
            },
        )
        .unwrap();
    let t0 = Instant::now();
    let mut bufs = [[0u8; PAYLOAD]; BATCH];
    let mut seq = 0u64;
    while seq < n {
        let k = (BATCH as u64).min(n - seq) as usize;
        for (i, buf) in bufs[..k].iter_mut().enumerate() {
            *buf = fill(seq + i as u64);
        }
        seq += k as u64;
        let recs: [Record<'_>; BATCH] = std::array::from_fn(|i| Record::new(&bufs[i]));
        b.publish_batch(TOPIC, &recs[..k], Wait::Forever)
            .expect("publish_batch");
    }
    let (lock, cv) = &*done;
    let got = cv
        .wait_timeout_while(lock.lock().unwrap(), Duration::from_secs(30), |v| {
            v.is_none()
        })
        .unwrap()
        .0
        .take()
        .expect("the handler stalled");
    let elapsed = t0.elapsed().as_secs_f64();
    sub.close().unwrap();
    got.finish(n, want);
    n as f64 / elapsed
}

// ---- the futures (library 1.4's asynchronous calls) ------------------------------------------

/// The runtime of the async workloads: 2 workers (this machine's cores).
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .expect("a tokio runtime")
}

/// A producer task (`publish_async`, or `publish_batch_async` of `batch`) and a consumer task
/// (`poll_async`, then `Batch::ack_and_poll_async`) of one partition.
fn rust_async(n: u64, batch: usize, want: u64) -> f64 {
    let b = broker();
    b.subscribe_group(TOPIC, "g0", &GroupOptions::new())
        .unwrap();
    let mut c = b.consumer(TOPIC, "g0", 0).unwrap();
    let wait = Duration::from_secs(10);
    // The producer's clone: `b` stays (the broker closes when its last clone goes).
    let pb = b.clone();
    runtime().block_on(async move {
        let consumer = tokio::spawn(async move {
            let mut v = Verifier::new("rust async");
            let mut cur = c.poll_async(batch, wait).await.expect("poll_async");
            loop {
                for m in &cur {
                    v.take(m.payload());
                }
                if v.next >= n {
                    cur.ack().expect("ack");
                    return v;
                }
                cur = cur
                    .ack_and_poll_async(batch, wait)
                    .await
                    .expect("ack_and_poll_async");
            }
        });
        let t0 = Instant::now();
        let producer = tokio::spawn(async move {
            let mut bufs = vec![[0u8; PAYLOAD]; batch];
            let mut seq = 0u64;
            while seq < n {
                let k = (batch as u64).min(n - seq) as usize;
                for (i, buf) in bufs[..k].iter_mut().enumerate() {
                    *buf = fill(seq + i as u64);
                }
                seq += k as u64;
                if batch == 1 {
                    pb.publish_async(TOPIC, Record::new(&bufs[0]), Wait::Forever)
                        .await
                        .expect("publish_async");
                } else {
                    let recs: Vec<Record<'_>> = bufs[..k].iter().map(|p| Record::new(p)).collect();
                    pb.publish_batch_async(TOPIC, &recs, Wait::Forever)
                        .await
                        .expect("publish_batch_async");
                }
            }
        });
        producer.await.expect("the producer");
        let v = consumer.await.expect("the consumer");
        let elapsed = t0.elapsed().as_secs_f64();
        v.finish(n, want);
        drop(b);
        n as f64 / elapsed
    })
}

/// `tokio::sync::mpsc::channel(1024)` between a producer task and a consumer task of the same
/// runtime, one message at a time.
fn tokio_mpsc_async(n: u64, want: u64) -> f64 {
    runtime().block_on(async move {
        let (tx, mut rx) = tokio::sync::mpsc::channel::<[u8; PAYLOAD]>(CAPACITY as usize);
        let consumer = tokio::spawn(async move {
            let mut v = Verifier::new("tokio mpsc async");
            while v.next < n {
                v.take(&rx.recv().await.expect("the sender lives"));
            }
            v
        });
        let t0 = Instant::now();
        let producer = tokio::spawn(async move {
            for seq in 0..n {
                tx.send(fill(seq)).await.unwrap();
            }
        });
        producer.await.expect("the producer");
        let v = consumer.await.expect("the consumer");
        let elapsed = t0.elapsed().as_secs_f64();
        v.finish(n, want);
        n as f64 / elapsed
    })
}

/// Wake-up latency of a consumer parked in a poll of an empty partition (a blocking poll on a
/// thread, or `poll_async` in a task of the runtime): from just before a publish to the
/// consumer's return, one message at a time, paced 200 µs apart so that the consumer is parked
/// again before the next. Returns the (p50, p99) in microseconds.
fn wake_latency(n: usize, asynchronous: bool) -> (f64, f64) {
    let b = broker();
    b.subscribe_group(TOPIC, "g0", &GroupOptions::new())
        .unwrap();
    let mut c = b.consumer(TOPIC, "g0", 0).unwrap();
    let base = Instant::now();
    let (tx, rx) = std::sync::mpsc::channel::<u64>();
    let wait = Duration::from_secs(10);
    let took = move |p: &[u8]| {
        let now = base.elapsed().as_nanos() as u64;
        now - u64::from_le_bytes(p[..8].try_into().unwrap())
    };
    let rt = runtime();
    let consumer = if asynchronous {
        rt.spawn(async move {
            for _ in 0..n {
                let batch = c.poll_async(1, wait).await.expect("poll_async");
                tx.send(took(batch.messages()[0].payload())).unwrap();
                batch.ack().expect("ack");
            }
        });
        None
    } else {
        Some(thread::spawn(move || {
            for _ in 0..n {
                let batch = c.poll(1, wait).expect("poll");
                tx.send(took(batch.messages()[0].payload())).unwrap();
                batch.ack().expect("ack");
            }
        }))
    };
    let mut lat = Vec::with_capacity(n);
    for _ in 0..n {
        let paced = Instant::now() + Duration::from_micros(200);
        while Instant::now() < paced {
            std::hint::spin_loop();
        }
        let mut p = [0u8; PAYLOAD];
        p[..8].copy_from_slice(&(base.elapsed().as_nanos() as u64).to_le_bytes());
        b.publish(TOPIC, Record::new(&p), Wait::Forever)
            .expect("publish");
        lat.push(rx.recv().expect("the consumer") as f64 / 1e3);
    }
    if let Some(t) = consumer {
        t.join().unwrap();
    }
    lat.sort_by(|a, b| a.partial_cmp(b).unwrap());
    (lat[n / 2], lat[n * 99 / 100])
}

// ---- what a Rust user would otherwise use ---------------------------------------------------

fn tokio_mpsc(n: u64, want: u64) -> f64 {
    let (tx, mut rx) = tokio::sync::mpsc::channel::<[u8; PAYLOAD]>(CAPACITY as usize);
    let consumer = thread::spawn(move || {
        let mut v = Verifier::new("tokio mpsc");
        while v.next < n {
            v.take(&rx.blocking_recv().expect("the sender lives"));
        }
        v
    });
    let t0 = Instant::now();
    for seq in 0..n {
        tx.blocking_send(fill(seq)).unwrap();
    }
    let v = consumer.join().unwrap();
    let elapsed = t0.elapsed().as_secs_f64();
    v.finish(n, want);
    n as f64 / elapsed
}

fn crossbeam(n: u64, want: u64) -> f64 {
    let (tx, rx) = crossbeam_channel::bounded::<[u8; PAYLOAD]>(CAPACITY as usize);
    let consumer = thread::spawn(move || {
        let mut v = Verifier::new("crossbeam");
        while v.next < n {
            v.take(&rx.recv().expect("the sender lives"));
        }
        v
    });
    let t0 = Instant::now();
    for seq in 0..n {
        tx.send(fill(seq)).unwrap();
    }
    let v = consumer.join().unwrap();
    let elapsed = t0.elapsed().as_secs_f64();
    v.finish(n, want);
    n as f64 / elapsed
}

// ---- rounds and the report -------------------------------------------------------------------

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let m = v.len() / 2;
    if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    }
}

struct Row {
    id: &'static str,
    label: &'static str,
    n: u64,
    run: Box<dyn Fn(u64, u64) -> f64>,
    samples: Vec<f64>,
}

fn main() {
    let mut rounds = 3usize;
    let mut scale = 1.0f64;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--rounds" => {
                rounds = args
                    .next()
                    .and_then(|v| v.parse().ok())
                    .expect("--rounds N")
            }
            "--scale" => scale = args.next().and_then(|v| v.parse().ok()).expect("--scale F"),
            "--smoke" => {
                rounds = 1;
                scale = 0.01;
            }
            _ => {
                eprintln!("usage: mq-bench [--rounds N] [--scale F] [--smoke]");
                std::process::exit(2);
            }
        }
    }
    let s = |n: f64| ((n * scale) as u64).max(640);
    // About 0.1-0.5 s each on this 2-core machine: the whole run stays within seconds.
    // SAFETY (c_*): the C suite's workloads take plain numbers and fail the process on error.
    let mut rows = vec![
        Row {
            id: "c1",
            label: "C   1. 1→1, batch 64",
            n: s(2e6),
            run: Box::new(|n, _| unsafe { mq_c_suite_pull(n, BATCH, 1) }),
            samples: vec![],
        },
        Row {
            id: "r1",
            label: "Rust 1. 1→1, batch 64",
            n: s(2e6),
            run: Box::new(|n, w| rust_pull(n, BATCH, 1, false, true, w)),
            samples: vec![],
        },
        Row {
            id: "r1a",
            label: "Rust 1. 1→1, batch 64, ack_and_poll",
            n: s(2e6),
            run: Box::new(|n, w| rust_pull(n, BATCH, 1, true, true, w)),
            samples: vec![],
        },
        Row {
            id: "c2",
            label: "C   2. 1→1, single",
            n: s(4e5),
            run: Box::new(|n, _| unsafe { mq_c_suite_pull(n, 1, 1) }),
            samples: vec![],
        },
        Row {
            id: "r2",
            label: "Rust 2. 1→1, single",
            n: s(4e5),
            run: Box::new(|n, w| rust_pull(n, 1, 1, false, true, w)),
            samples: vec![],
        },
        Row {
            id: "r2n",
            label: "Rust 2. 1→1, single, by name",
            n: s(4e5),
            run: Box::new(|n, w| rust_pull(n, 1, 1, false, false, w)),
            samples: vec![],
        },
        Row {
            id: "c3",
            label: "C   3. 1→2 groups, batch 64 (each)",
            n: s(1e6),
            run: Box::new(|n, _| unsafe { mq_c_suite_pull(n, BATCH, 2) }),
            samples: vec![],
        },
        Row {
            id: "r3",
            label: "Rust 3. 1→2 groups, batch 64 (each)",
            n: s(1e6),
            run: Box::new(|n, w| rust_pull(n, BATCH, 2, false, true, w)),
            samples: vec![],
        },
        Row {
            id: "c5a",
            label: "C   5. push, prefetch 10",
            n: s(1e6),
            run: Box::new(|n, _| unsafe { mq_c_suite_push(n, 10) }),
            samples: vec![],
        },
        Row {
            id: "r5a",
            label: "Rust 5. push, prefetch 10",
            n: s(1e6),
            run: Box::new(|n, w| rust_push(n, 10, w)),
            samples: vec![],
        },
        Row {
            id: "c5b",
            label: "C   5. push, prefetch 64",
            n: s(1e6),
            run: Box::new(|n, _| unsafe { mq_c_suite_push(n, 64) }),
            samples: vec![],
        },
        Row {
            id: "r5b",
            label: "Rust 5. push, prefetch 64",
            n: s(1e6),
            run: Box::new(|n, w| rust_push(n, 64, w)),
            samples: vec![],
        },
        Row {
            id: "ra1",
            label: "Rust async 1. batch 64, ack_and_poll",
            n: s(2e6),
            run: Box::new(|n, w| rust_async(n, BATCH, w)),
            samples: vec![],
        },
        Row {
            id: "ra2",
            label: "Rust async 2. single",
            n: s(4e5),
            run: Box::new(|n, w| rust_async(n, 1, w)),
            samples: vec![],
        },
        Row {
            id: "tka",
            label: "tokio::sync::mpsc(1024) tasks, 64 B",
            n: s(1e6),
            run: Box::new(tokio_mpsc_async),
            samples: vec![],
        },
        Row {
            id: "tk",
            label: "tokio::sync::mpsc(1024), 64 B",
            n: s(1e6),
            run: Box::new(tokio_mpsc),
            samples: vec![],
        },
        Row {
            id: "cb",
            label: "crossbeam bounded(1024), 64 B",
            n: s(1e6),
            run: Box::new(crossbeam),
            samples: vec![],
        },
    ];
    println!(
        "mq {} Rust benchmark: {rounds} round(s), scale {scale}",
        mq::version()
    );
    let digests: Vec<u64> = rows.iter().map(|r| expected_digest(r.n)).collect();
    for round in 1..=rounds {
        for (r, want) in rows.iter_mut().zip(&digests) {
            let t0 = Instant::now();
            let rate = (r.run)(r.n, *want);
            println!(
                "  round {round}/{rounds}: {:<38} {:>8.2} M msg/s  ({:.2} s)",
                r.label,
                rate / 1e6,
                t0.elapsed().as_secs_f64()
            );
            r.samples.push(rate);
        }
    }
    let get = |id: &str| rows.iter().find(|r| r.id == id).unwrap();
    let ratio = |a: &str, b: &str| {
        let (x, y) = (get(a), get(b));
        median(
            x.samples
                .iter()
                .zip(&y.samples)
                .map(|(p, q)| p / q)
                .collect(),
        )
    };
    println!("\n| workload | median | |\n|---|---:|---|");
    for r in &rows {
        println!(
            "| {} | {:.2} M msg/s | |",
            r.label,
            median(r.samples.clone()) / 1e6
        );
    }
    println!("\n| target | measured | holds |\n|---|---:|:---:|");
    let target = |what: &str, v: f64, ok: bool| {
        println!(
            "| {what} | {v:.2} | {} |",
            if ok { "yes" } else { "**no**" }
        )
    };
    // Per-message cost is 1/throughput: Rust's cost over C's is C's rate over Rust's.
    for (r, c, w) in [
        ("r1", "c1", "1. batch 64"),
        ("r2", "c2", "2. single"),
        ("r3", "c3", "3. fan-out"),
        ("r5a", "c5a", "5. push, prefetch 10"),
        ("r5b", "c5b", "5. push, prefetch 64"),
    ] {
        let cost = 1.0 / ratio(r, c);
        let bounded = r == "r1" || r == "r2";
        target(
            &format!(
                "{w}: Rust's cost per message ÷ C's{}",
                if bounded { " (≤ 1.1)" } else { "" }
            ),
            cost,
            !bounded || cost <= 1.1,
        );
    }
    let tk = ratio("r1", "tk");
    target("1. batch 64 ÷ tokio::sync::mpsc (≥ 2)", tk, tk >= 2.0);
    let cb = ratio("r1", "cb");
    target("1. batch 64 ÷ crossbeam bounded(1024) (≥ 3)", cb, cb >= 3.0);
    // The same targets with each ack travelling with the next poll (C's row 1 acks apart).
    let tk = ratio("r1a", "tk");
    target(
        "1. batch 64, ack_and_poll ÷ tokio::sync::mpsc (≥ 2)",
        tk,
        tk >= 2.0,
    );
    let cb = ratio("r1a", "cb");
    target(
        "1. batch 64, ack_and_poll ÷ crossbeam bounded(1024) (≥ 3)",
        cb,
        cb >= 3.0,
    );
    // The futures (tasks on a tokio runtime) against tokio's own channel between two tasks.
    let a1 = ratio("ra1", "tka");
    target(
        "async 1. batch 64 ÷ tokio::sync::mpsc tasks (≥ 2)",
        a1,
        a1 >= 2.0,
    );
    let a2 = ratio("ra2", "tka");
    target(
        "async 2. single ÷ tokio::sync::mpsc tasks (≥ 1)",
        a2,
        a2 >= 1.0,
    );
    let n = if scale < 1.0 { 200 } else { 2000 };
    let (bp50, bp99) = wake_latency(n, false);
    let (ap50, ap99) = wake_latency(n, true);
    println!(
        "\nwake-up latency, {n} publishes to a parked consumer: blocking poll p50 {bp50:.1} µs \
         p99 {bp99:.1} µs; poll_async (tokio task) p50 {ap50:.1} µs p99 {ap99:.1} µs"
    );
    target(
        "wake-up p50: poll_async ÷ blocking poll (≤ 2)",
        ap50 / bp50,
        ap50 / bp50 <= 2.0,
    );
    let own = ratio("r1a", "r1");
    println!("\n1. batch 64: ack_and_poll ÷ ack then poll = {own:.2}");
    let handles = ratio("r2", "r2n");
    println!("2. single: publisher and cursor ÷ by name = {handles:.2}");
}
