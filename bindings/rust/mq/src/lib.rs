//! # mq — a Kafka-shaped publish-subscribe log inside one process
//!
//! Publishers append to named topics; every consumer group receives every message; inside a
//! group each partition has one owner; acks and leases give at-least-once delivery;
//! back-pressure slows publishers when the slowest group falls behind. This crate is the safe
//! Rust API over the C++ core (through [`mq_sys`]); no `unsafe` is needed to use it.
//!
//! ```
//! use mq::{Broker, GroupOptions, Record, TopicConfig, Wait};
//! # fn main() -> mq::Result<()> {
//! let broker = Broker::new()?;
//! broker.create_topic("orders", &TopicConfig::new().partitions(2).capacity(64))?;
//! broker.subscribe_group("orders", "billing", &GroupOptions::new())?;
//!
//! let at = broker.publish("orders", Record::new(b"o-1").key(b"user-a"), Wait::Forever)?;
//! let mut billing = broker.consumer("orders", "billing", at.partition)?;
//! let batch = billing.poll(10, std::time::Duration::from_secs(1))?;
//! for m in &batch {
//!     println!("{}: {}", m.offset(), String::from_utf8_lossy(m.payload()));
//! }
//! batch.ack()?; // cumulative, through the batch's last message
//! # Ok(()) }
//! ```
//!
//! ## Message lifetimes
//!
//! mq hands out **views** into its log, not copies: a polled message's key, payload and
//! headers point into the partition's memory, which the library frees once every group has
//! acked past them. The safe API makes the compiler enforce that rule:
//!
//! - [`PartitionConsumer::poll`] returns a [`Batch`] that borrows the consumer mutably, and
//!   the batch's [`Message`]s borrow the batch;
//! - the calls that can end views — [`Batch::ack`] (which consumes the batch),
//!   [`PartitionConsumer::ack`] and [`PartitionConsumer::seek`] (which need `&mut` on the
//!   consumer, so no batch may be alive) — cannot run while a message is still borrowed;
//! - [`Broker::unsubscribe_group`] is refused while a batch of the group is alive, and
//!   [`Broker::delete_topic`] while a batch of any group of the topic is, and one consumer per
//!   group and partition exists per process (others' acks would free its views);
//! - [`Batch::ack_and_poll`] consumes the batch (ending its borrows with the ack) and returns
//!   the next batch, which borrows the consumer in its place: the ack that travels with the
//!   next poll is one library call, and the compiler still sees the old views end first;
//! - [`Message::detach`] makes an owned copy ([`OwnedMessage`]) that outlives everything.
//!
//! The cost of this choice is nothing per message: the batch path allocates nothing in steady
//! state. Members ([`Member`]) copy instead (into a buffer they reuse), because a rebalance
//! can hand their partition to another member whose ack frees the log behind any borrow.
//! Push handlers get `&Message` for the duration of the call.
//!
//! A view used after the ack that frees it does not compile:
//!
//! ```compile_fail
//! # fn main() -> mq::Result<()> {
//! # let broker = mq::Broker::new()?;
//! # broker.create_topic("t", &mq::TopicConfig::new())?;
//! # broker.subscribe_group("t", "g", &mq::GroupOptions::new())?;
//! let mut c = broker.consumer("t", "g", 0)?;
//! let batch = c.poll(10, mq::Wait::NoWait)?;
//! let payload: &[u8] = batch.messages()[0].payload();
//! batch.ack()?; // error[E0505]: cannot move out of `batch` because it is borrowed
//! println!("{payload:?}");
//! # Ok(()) }
//! ```
//!
//! and neither does acking through the consumer while a batch is alive:
//!
//! ```compile_fail
//! # fn main() -> mq::Result<()> {
//! # let broker = mq::Broker::new()?;
//! # broker.create_topic("t", &mq::TopicConfig::new())?;
//! # broker.subscribe_group("t", "g", &mq::GroupOptions::new())?;
//! let mut c = broker.consumer("t", "g", 0)?;
//! let batch = c.poll(10, mq::Wait::NoWait)?;
//! c.ack(0)?; // error[E0499]: cannot borrow `c` as mutable more than once at a time
//! drop(batch);
//! # Ok(()) }
//! ```
//!
//! The same code with a copy compiles and is correct:
//!
//! ```
//! # fn main() -> mq::Result<()> {
//! # let broker = mq::Broker::new()?;
//! # broker.create_topic("t", &mq::TopicConfig::new())?;
//! # broker.subscribe_group("t", "g", &mq::GroupOptions::new())?;
//! # broker.publish("t", mq::Record::new(b"x"), mq::Wait::NoWait)?;
//! let mut c = broker.consumer("t", "g", 0)?;
//! let batch = c.poll(10, mq::Wait::NoWait)?;
//! let payload: Vec<u8> = batch.messages()[0].payload().to_vec();
//! batch.ack()?;
//! assert_eq!(payload, b"x");
//! # Ok(()) }
//! ```
//!
//! ## Errors, waits and cancellation
//!
//! Every fallible call returns [`Result`]; [`Error`] has one variant per status, each with
//! the library's message (read on the calling thread in the same call). Blocking calls take
//! anything that converts into a [`Wait`] (`Duration`, `Option<Duration>` with `None` =
//! forever, [`Wait::NoWait`]); the `*_cancellable` variants take a [`CancelToken`] another
//! thread can trigger. With the `tokio` feature, the async calls of `mq::tokio` cancel the C
//! call when their future is dropped.
//!
//! ## Kafka backend
//!
//! Library 1.2 can run a broker on a Kafka cluster: [`BrokerOptions::kafka`] (the bootstrap
//! servers) and [`BrokerOptions::kafka_setting`] (librdkafka settings), with
//! [`Error::Unsupported`] and [`Error::Backend`]. The core this crate builds has the backend
//! with the `kafka` feature (off by default; it links librdkafka, found by pkg-config), else it
//! returns `Unsupported`; a linked libmq has it when built with `-DMQ_KAFKA=ON` (see `mq-sys`).
//!
//! ## Threads and lifetimes
//!
//! [`Broker`], [`PartitionConsumer`], [`Subscription`], [`Member`] and [`CancelToken`] are
//! `Send + Sync`. They may be dropped in any order: the broker closes when its last clone goes
//! (waking blocked calls with [`Error::Closed`]), and its memory goes when the last thing made
//! from it goes. Callbacks (push handlers, assignors, rebalance callbacks) run on library
//! threads; their panics are caught, never unwind into C, and are reported
//! ([`CallbackError`]).
#![deny(missing_docs, unsafe_op_in_unsafe_fn)]
#![warn(rust_2018_idioms)]

/// The binding's README, whose code blocks `cargo test` compiles and runs as doctests so that
/// none can go stale (`README.md` beside `Cargo.toml` links to it; a packaged crate has a copy).
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

mod broker;
mod cancel;
mod config;
mod consumer;
mod error;
mod info;
mod member;
mod message;
mod name;
mod registry;
mod report;
mod subscription;
mod wait;

#[cfg(feature = "tokio")]
pub mod tokio;

pub use broker::{key_partition, murmur2, round_robin, version, version_number, Broker};
pub use cancel::CancelToken;
pub use config::{BrokerOptions, GroupOptions, ManualClock, Retention, Start, TopicConfig};
pub use consumer::{Batch, PartitionConsumer, SeekTo};
pub use error::{BatchError, Error, Result, Status};
pub use info::{GroupInfo, PartitionInfo, TopicInfo};
pub use member::{Assignment, Assignor, Member, MemberBatch, MemberOptions, Rebalance};
pub use message::{
    DeadLetter, Header, Headers, Message, OwnedDeadLetter, OwnedMessage, Published, Record,
};
pub use report::CallbackError;
pub use subscription::{handler, Subscription, SubscriptionOptions};
pub use wait::Wait;

/// The raw FFI, for what the safe API does not cover.
pub use mq_sys;
