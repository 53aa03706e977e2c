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
//! A poll copies its messages (the library's copying poll, under the lock that keeps them
//! alive) into a buffer the consumer reuses: nobody's ack, seek, unsubscribe, topic deletion
//! or rebalance can end what a batch reads, so any number of consumers, members and push
//! subscriptions may share a group. The borrow rules keep the next poll from overwriting a
//! batch still in use:
//!
//! - [`PartitionConsumer::poll`] returns a [`Batch`] that borrows the consumer mutably, and
//!   the batch's [`Message`]s borrow the batch;
//! - [`Batch::ack`] consumes the batch, and [`PartitionConsumer::ack`] and
//!   [`PartitionConsumer::seek`] need `&mut` on the consumer, so no batch is alive when they
//!   run (an ack-then-poll would reuse the buffer);
//! - [`Batch::ack_and_poll`] consumes the batch and returns the next batch, which borrows the
//!   consumer in its place (the ack travels with the next poll in one library call);
//! - [`Message::detach`] makes an owned copy ([`OwnedMessage`]) that outlives everything.
//!
//! Steady state allocates nothing: the buffer grows when a message does not fit (or when it,
//! not the log, cut a batch short) and is reused. Members ([`Member`]) copy the same way.
//! Push handlers get `&Message` (a view into the log) for the duration of the call.
//!
//! A message used after its batch was acked does not compile:
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
//! thread can trigger.
//!
//! ## Async
//!
//! [`Broker::publish_async`], [`Broker::publish_batch_async`],
//! [`PartitionConsumer::poll_async`], [`PartitionConsumer::ack_and_poll_async`] and
//! [`Batch::ack_and_poll_async`] (with `*_cancellable` forms) are futures on the library's
//! asynchronous calls (library 1.4): a pending call holds no thread (the broker's one
//! completer thread completes them all and wakes the task), any executor runs them, they are
//! `Send`, and dropping one cancels its call. The `tokio` feature adds a push subscription as a
//! `Stream` (`mq::tokio::MessageStream`).
//!
//! ## Share groups
//!
//! Library 1.6: a group subscribed with [`GroupOptions::share`] ([`ShareMode::All`], or
//! [`ShareMode::Key`] for per-key order) is a task queue: any number of consumers poll the
//! same partition, each acquiring messages no other poll holds, each under its own lock, and
//! settle them one by one ([`PartitionConsumer::settle`], [`Batch::settle`] with a
//! [`Settle`]); the delivery count fences an acquisition whose lock ran out.
//!
//! ## Handles
//!
//! Library 1.7: a [`Publisher`] ([`Broker::publisher`]) is a topic looked up once, a
//! [`Cursor`] ([`Broker::cursor`]) one group's partition looked up once; their calls are the
//! named ones minus the lookups (the same batches, results and errors). A handle holds its
//! topic and group, not their names: after a deletion or unsubscription its calls fail
//! ([`Error::NoTopic`], [`Error::NoGroup`]) even if the name comes back.
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
//! [`Broker`], [`PartitionConsumer`], [`Publisher`], [`Cursor`], [`Subscription`], [`Member`]
//! and [`CancelToken`] are `Send + Sync`. They may be dropped in any order: the broker closes when its last clone goes
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
mod copy;
mod cursor;
mod error;
mod future;
mod info;
mod member;
mod message;
mod name;
mod publisher;
mod report;
mod subscription;
mod wait;

#[cfg(feature = "tokio")]
pub mod tokio;

pub use broker::{key_partition, murmur2, round_robin, version, version_number, Broker};
pub use cancel::CancelToken;
pub use config::{
    BrokerOptions, GroupOptions, ManualClock, Retention, ShareMode, Start, TopicConfig,
};
pub use consumer::{Batch, PartitionConsumer, SeekTo, Settle};
pub use cursor::Cursor;
pub use error::{BatchError, Error, Result, Status};
pub use info::{GroupInfo, PartitionInfo, TopicInfo};
pub use member::{Assignment, Assignor, Member, MemberBatch, MemberOptions, Rebalance};
pub use message::{
    DeadLetter, Header, Headers, Message, OwnedDeadLetter, OwnedMessage, Published, Record,
};
pub use publisher::Publisher;
pub use report::CallbackError;
pub use subscription::{handler, Subscription, SubscriptionOptions};
pub use wait::Wait;

/// The raw FFI, for what the safe API does not cover.
pub use mq_sys;
