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
    /// Share groups (library 1.6; 0 for an ordered group): messages acquired and not settled
    /// (their locks still run). For a share group `committed` is the oldest unsettled offset,
    /// `next` the first offset no poll has looked at, and `in_flight` `next - committed`.
    pub acquired: i64,
    /// Share groups: messages a poll could acquire now.
    pub available: i64,
    /// Share groups: messages not handed out before a later time (a delayed record, a
    /// release with a delay).
    pub delayed: i64,
    /// Share groups: messages settled with [`Settle::Reject`](crate::Settle::Reject)
    /// (dead-lettered or dropped).
    pub rejected: i64,
    /// Share groups: age of the oldest unsettled message; `None` if none (or an ordered group).
    pub oldest_unsettled_age: Option<Duration>,
    /// Share groups: the delivery-count histogram of unsettled messages: how many were handed
    /// out once, twice, three times, and four times or more.
    pub delivered: [i64; 4],
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
            acquired: i.acquired,
            available: i.available,
            delayed: i.delayed,
            rejected: i.rejected,
            oldest_unsettled_age: age(i.oldest_unsettled_age_ns),
            delivered: [
                i.delivered_once,
                i.delivered_twice,
                i.delivered_thrice,
                i.delivered_more,
            ],
        }
    }
}
