//! Introspection: what a topic, partition or group looks like now. Works after close.
use std::time::Duration;

use mq_sys as sys;

use crate::config::Retention;

fn ms(v: i64) -> Duration {
    Duration::from_millis(v.max(0) as u64)
}

fn age(ns: i64) -> Option<Duration> {
    (ns >= 0).then(|| Duration::from_nanos(ns as u64))
}

/// A topic's configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct TopicInfo {
    /// Number of partitions.
    pub partitions: i32,
    /// Messages retained per partition.
    pub capacity: i64,
    /// Byte budget per partition (0 = none).
    pub max_bytes: i64,
    /// Lease length.
    pub ack_timeout: Duration,
    /// What happens when a partition is full.
    pub retention: Retention,
    /// Maximum age of a message (`None` = no limit).
    pub max_age: Option<Duration>,
}

impl TopicInfo {
    pub(crate) fn from_raw(i: &sys::mq_topic_info) -> TopicInfo {
        TopicInfo {
            partitions: i.partitions,
            capacity: i.capacity,
            max_bytes: i.max_bytes,
            ack_timeout: ms(i.ack_timeout_ms),
            retention: Retention::from_raw(i.retention),
            max_age: (i.max_age_ms > 0).then(|| ms(i.max_age_ms)),
        }
    }
}

/// A partition's state.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct PartitionInfo {
    /// Oldest retained offset.
    pub start: i64,
    /// Next offset to be published.
    pub end: i64,
    /// `end` minus the slowest group's committed offset (0 with no groups).
    pub backlog: i64,
    /// Messages retained at most.
    pub capacity: i64,
    /// Key + payload + header bytes retained.
    pub retained_bytes: i64,
    /// Byte budget (0 = none).
    pub max_bytes: i64,
    /// Publishes that found the partition full and waited.
    pub producer_waits: i64,
    /// Largest backlog seen.
    pub max_backlog: i64,
    /// Messages trimmed before every group acked them.
    pub dropped: i64,
    /// Timestamp (broker clock, ns) of the oldest message, `None` when empty.
    pub oldest_timestamp_ns: Option<i64>,
    /// Age of the oldest message, `None` when empty.
    pub oldest_age: Option<Duration>,
}

impl PartitionInfo {
    pub(crate) fn from_raw(i: &sys::mq_partition_info) -> PartitionInfo {
        PartitionInfo {
            start: i.start,
            end: i.end,
            backlog: i.backlog,
            capacity: i.capacity,
            retained_bytes: i.retained_bytes,
            max_bytes: i.max_bytes,
            producer_waits: i.producer_waits,
            max_backlog: i.max_backlog,
            dropped: i.dropped,
            oldest_timestamp_ns: (i.oldest_timestamp_ns >= 0).then_some(i.oldest_timestamp_ns),
            oldest_age: age(i.oldest_age_ns),
        }
    }
}

/// A group's cursor on one partition.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct GroupInfo {
    /// Every offset below it is acked.
    pub committed: i64,
    /// Next offset to hand out.
    pub next: i64,
    /// `end - committed`.
    pub lag: i64,
    /// `next - committed`.
    pub in_flight: i64,
    /// Messages dropped before this group acked them.
    pub lost: i64,
    /// Messages this group sent to its dead-letter topic.
    pub dead_lettered: i64,
    /// Age of the message at `next`, `None` if there is none.
    pub next_age: Option<Duration>,
    /// Broker clock (ns) a delayed nack holds the group until, `None` if not paused.
    pub paused_until_ns: Option<i64>,
}

impl GroupInfo {
    pub(crate) fn from_raw(i: &sys::mq_group_info) -> GroupInfo {
        GroupInfo {
            committed: i.committed,
            next: i.next,
            lag: i.lag,
            in_flight: i.in_flight,
            lost: i.lost,
            dead_lettered: i.dead_lettered,
            next_age: age(i.next_age_ns),
            paused_until_ns: (i.paused_until_ns != 0).then_some(i.paused_until_ns),
        }
    }
}
