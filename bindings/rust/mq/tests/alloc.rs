//! The batch (poll, ack and ack_and_poll), single and member paths allocate nothing per
//! message in steady state: the library copies into a buffer the consumer (the member) reuses,
//! read in place (counted by a global allocator; this file is its own test binary, and runs
//! its one test alone). Only the test's own thread is counted:
//! the test harness's threads allocate when they please, and every call measured here runs on
//! the test's thread.
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};

use mq::{Broker, GroupOptions, Record, TopicConfig, Wait};

struct Counting;
thread_local! {
    // const-initialised, no destructor: reading it never allocates.
    static COUNTING: Cell<bool> = const { Cell::new(false) };
}
static ALLOCS: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards to the system allocator; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        if COUNTING.with(Cell::get) {
            ALLOCS.fetch_add(1, Ordering::Relaxed);
        }
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        unsafe { System.dealloc(p, l) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn no_rust_allocation_per_message_in_steady_state() {
    let b = Broker::new().unwrap();
    b.create_topic("t", &TopicConfig::new().capacity(1024))
        .unwrap();
    b.subscribe_group("t", "g", &GroupOptions::new()).unwrap();
    let mut c = b.consumer("t", "g", 0).unwrap();
    b.create_topic("m", &TopicConfig::new().capacity(1024))
        .unwrap();
    let member = b.join("m", "w", &mq::MemberOptions::new()).unwrap();
    let payloads = [[7u8; 64]; 64];
    let hdrs = [mq::Header::new(b"trace", b"42")];
    let mut round = |count: bool| {
        COUNTING.with(|c| c.set(count));
        let recs: [Record<'_>; 64] = std::array::from_fn(|i| Record::new(&payloads[i]));
        b.publish_batch("t", &recs, Wait::Forever).unwrap();
        // Half through poll, half through the ack that travels with the next poll.
        let first = c.poll(32, Wait::NoWait).unwrap();
        assert_eq!(first.len(), 32);
        let mut sum: u64 = first.iter().map(|m| u64::from(m.payload()[0])).sum();
        let batch = first.ack_and_poll(32, Wait::NoWait).unwrap();
        assert_eq!(batch.len(), 32);
        sum += batch.iter().map(|m| u64::from(m.payload()[0])).sum::<u64>();
        batch.ack().unwrap();
        b.publish("t", Record::new(&payloads[0]).key(b"k"), Wait::Forever)
            .unwrap();
        let one = c.poll(1, Wait::NoWait).unwrap();
        one.ack().unwrap();
        // A member, with headers (rewritten in place in the copy).
        let recs: [Record<'_>; 16] =
            std::array::from_fn(|i| Record::new(&payloads[i]).headers(&hdrs));
        b.publish_batch("m", &recs, Wait::Forever).unwrap();
        let mb = member.poll(8, Wait::NoWait).unwrap();
        assert_eq!(mb.len(), 8);
        let mb = mb.ack_and_poll(8, Wait::NoWait).unwrap();
        assert_eq!(mb.len(), 8);
        for m in &mb {
            sum += m
                .headers()
                .map(|(_, v)| u64::from(v[0] - b'0'))
                .sum::<u64>();
        }
        mb.ack().unwrap();
        COUNTING.with(|c| c.set(false));
        assert_eq!(sum, 7 * 64 + 4 * 8);
    };
    for _ in 0..10 {
        round(false); // warm up: the consumer's buffer grows once
    }
    ALLOCS.store(0, Ordering::SeqCst);
    for _ in 0..100 {
        round(true);
    }
    assert_eq!(
        ALLOCS.load(Ordering::SeqCst),
        0,
        "allocations over 100 rounds of 81 messages"
    );
}
