#![allow(dead_code)]
use std::time::{Duration, Instant};

use mq::{Broker, BrokerOptions, GroupOptions, ManualClock, TopicConfig};

/// A broker on a manual clock with topic `t` (`partitions`, `capacity`) and group `g`.
pub fn setup(partitions: i32, capacity: i64) -> (Broker, ManualClock) {
    let clock = ManualClock::new();
    let b = Broker::with_options(&BrokerOptions::new().clock(&clock)).unwrap();
    b.create_topic(
        "t",
        &TopicConfig::new().partitions(partitions).capacity(capacity),
    )
    .unwrap();
    b.subscribe_group("t", "g", &GroupOptions::new()).unwrap();
    (b, clock)
}

/// Waits (at most 10 s) until `cond` holds; the pause between looks is not a synchronisation.
pub fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    let until = Instant::now() + Duration::from_secs(10);
    while !cond() {
        assert!(Instant::now() < until, "timed out waiting for: {what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}
