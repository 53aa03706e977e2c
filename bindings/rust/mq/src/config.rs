//! Builders for the broker, topic and group configurations.
use std::ffi::CString;
use std::fmt;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::error::{Error, Result};
use crate::wait::duration_ms;

/// A clock for tests: the broker reads it instead of the system's monotonic clock, and it moves
/// only when [`advance`](ManualClock::advance) is called. It starts at 1 s (1,000,000,000 ns).
///
/// The broker calls it with partition locks held, so it is a plain atomic read: no lock, no
/// callback into Rust code that could block.
///
/// ```
/// use std::time::Duration;
/// let clock = mq::ManualClock::new();
/// let broker = mq::Broker::with_options(&mq::BrokerOptions::new().clock(&clock))?;
/// clock.advance(Duration::from_secs(31));
/// assert_eq!(clock.now_ns(), 32_000_000_000);
/// # drop(broker);
/// # Ok::<(), mq::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct ManualClock(pub(crate) Arc<AtomicI64>);

impl ManualClock {
    /// A clock at 1,000,000,000 ns.
    pub fn new() -> ManualClock {
        ManualClock(Arc::new(AtomicI64::new(1_000_000_000)))
    }

    /// Moves the clock forward.
    pub fn advance(&self, by: Duration) {
        let ns = i64::try_from(by.as_nanos()).unwrap_or(i64::MAX);
        self.0.fetch_add(ns, Ordering::SeqCst);
    }

    /// The clock's reading in nanoseconds.
    pub fn now_ns(&self) -> i64 {
        self.0.load(Ordering::SeqCst)
    }
}

impl Default for ManualClock {
    fn default() -> Self {
        ManualClock::new()
    }
}

pub(crate) extern "C" fn manual_clock_read(user: *mut std::ffi::c_void) -> i64 {
    // SAFETY: `user` is the AtomicI64 of an Arc the broker keeps alive until mq_broker_free.
    unsafe { &*(user as *const AtomicI64) }.load(Ordering::SeqCst)
}

/// Options of a [`Broker`](crate::Broker).
///
/// ```
/// let opts = mq::BrokerOptions::new().max_message_bytes(4096);
/// let broker = mq::Broker::with_options(&opts)?;
/// # drop(broker);
/// # Ok::<(), mq::Error>(())
/// ```
#[derive(Clone, Default)]
pub struct BrokerOptions {
    pub(crate) max_message_bytes: Option<usize>,
    pub(crate) spin: Option<Duration>,
    pub(crate) clock: Option<ManualClock>,
    pub(crate) kafka_bootstrap: Option<String>,
    pub(crate) kafka_settings: Vec<(String, String)>,
}

// By hand: Kafka settings often hold credentials (sasl.password), so only their names show.
impl fmt::Debug for BrokerOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self
            .kafka_settings
            .iter()
            .map(|(n, _)| n.as_str())
            .collect();
        f.debug_struct("BrokerOptions")
            .field("max_message_bytes", &self.max_message_bytes)
            .field("spin", &self.spin)
            .field("clock", &self.clock)
            .field("kafka_bootstrap", &self.kafka_bootstrap)
            .field("kafka_settings", &names)
            .finish()
    }
}

impl BrokerOptions {
    /// The defaults: 1 MiB messages, no spinning, the system clock, the in-process log.
    pub fn new() -> BrokerOptions {
        BrokerOptions::default()
    }

    /// Largest key + payload + headers accepted (default 1 MiB; at most 1 GiB).
    pub fn max_message_bytes(mut self, n: usize) -> Self {
        self.max_message_bytes = Some(n);
        self
    }

    /// Before a poll with nothing to hand out blocks, it spins this long watching for a
    /// publish (default: block at once). Worth it only with cores to spare.
    pub fn spin(mut self, d: Duration) -> Self {
        self.spin = Some(d);
        self
    }

    /// Reads time from `clock` instead of the system's monotonic clock (for tests). Not with
    /// [`kafka`](Self::kafka): Kafka's clock is the cluster's ([`Error::Unsupported`]).
    pub fn clock(mut self, clock: &ManualClock) -> Self {
        self.clock = Some(clock.clone());
        self
    }

    /// Works on a Kafka cluster instead of the in-process log (library 1.2,
    /// `mq_broker_options.kafka_bootstrap`): `bootstrap` is its bootstrap servers,
    /// `"host:port,..."`, and topics, groups and committed offsets are the cluster's.
    /// Opening the broker then blocks until the cluster answers, at most 10 s
    /// ([`Error::Backend`] if it does not).
    ///
    /// **The core this crate builds has the backend only with the `kafka` feature** (off by
    /// default; it links librdkafka, found by pkg-config). Without it,
    /// [`Broker::with_options`](crate::Broker::with_options) returns [`Error::Unsupported`]
    /// (its message says how to rebuild). A linked libmq (`MQ_DIR`, or the `system` feature;
    /// see `mq-sys`) has it when built with CMake's `-DMQ_KAFKA=ON`.
    ///
    /// ```no_run
    /// let opts = mq::BrokerOptions::new()
    ///     .kafka("kafka-1:9092,kafka-2:9092")
    ///     .kafka_setting("client.id", "billing");
    /// match mq::Broker::with_options(&opts) {
    ///     Ok(broker) => { /* the cluster's topics */ }
    ///     Err(mq::Error::Unsupported(why)) => eprintln!("no Kafka backend: {why}"),
    ///     Err(e) => eprintln!("{e}"),
    /// }
    /// ```
    pub fn kafka(mut self, bootstrap: impl Into<String>) -> Self {
        self.kafka_bootstrap = Some(bootstrap.into());
        self
    }

    /// Adds a Kafka client setting passed to librdkafka as it is (library 1.2,
    /// `mq_broker_options.kafka_config`), e.g. `("security.protocol", "ssl")`; ignored without
    /// [`kafka`](Self::kafka). Settings are passed in the order added (a name given twice: the
    /// last wins); the library rejects a setting librdkafka does not know ([`Error::Invalid`]
    /// naming it).
    ///
    /// The C API takes them as `name=value` lines, so some cannot be expressed: a name that is
    /// empty or contains `'='` or a newline, a value that contains a newline, and a NUL byte
    /// anywhere. [`Broker::with_options`](crate::Broker::with_options) refuses those with
    /// [`Error::Invalid`] before calling the library. A value may contain `'='`.
    ///
    /// ```
    /// let opts = mq::BrokerOptions::new()
    ///     .kafka("localhost:9092")
    ///     .kafka_setting("bad=name", "x");
    /// match mq::Broker::with_options(&opts) {
    ///     Err(mq::Error::Invalid(m)) => assert!(m.contains("bad=name")),
    ///     other => panic!("expected Invalid, got {other:?}"),
    /// }
    /// ```
    pub fn kafka_setting(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.kafka_settings.push((name.into(), value.into()));
        self
    }

    /// Adds every setting of `settings` (a map, or pairs) as
    /// [`kafka_setting`](Self::kafka_setting) does, in its iteration order.
    ///
    /// ```
    /// use std::collections::BTreeMap;
    /// let settings = BTreeMap::from([("client.id", "billing"), ("acks", "all")]);
    /// let opts = mq::BrokerOptions::new().kafka("localhost:9092").kafka_settings(settings);
    /// # drop(opts);
    /// ```
    pub fn kafka_settings<I, K, V>(mut self, settings: I) -> Self
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<String>,
        V: Into<String>,
    {
        self.kafka_settings
            .extend(settings.into_iter().map(|(k, v)| (k.into(), v.into())));
        self
    }

    /// The C strings of `kafka_bootstrap` and `kafka_config`; they need to outlive
    /// `mq_broker_new` only (it copies them).
    pub(crate) fn kafka_c(&self) -> Result<(Option<CString>, Option<CString>)> {
        let bootstrap = match &self.kafka_bootstrap {
            None => None,
            Some(b) => Some(CString::new(b.as_str()).map_err(|_| {
                Error::Invalid(format!("the Kafka bootstrap {b:?} contains a NUL byte"))
            })?),
        };
        if self.kafka_settings.is_empty() {
            return Ok((bootstrap, None));
        }
        let mut text = String::new();
        for (name, value) in &self.kafka_settings {
            check_kafka_setting(name, value)?;
            if !text.is_empty() {
                text.push('\n');
            }
            text.push_str(name);
            text.push('=');
            text.push_str(value);
        }
        let text = CString::new(text).expect("checked for NUL above");
        Ok((bootstrap, Some(text)))
    }
}

/// What the `name=value` lines of `mq_broker_options.kafka_config` cannot carry. The message
/// names the setting, never its value (values are often credentials).
fn check_kafka_setting(name: &str, value: &str) -> Result<()> {
    let why = if name.is_empty() {
        Some("its name is empty")
    } else if name.contains('=') {
        Some("its name contains '='")
    } else if name.contains('\n') {
        Some("its name contains a newline")
    } else if value.contains('\n') {
        Some("its value contains a newline")
    } else if name.contains('\0') || value.contains('\0') {
        Some("it contains a NUL byte")
    } else {
        None
    };
    match why {
        None => Ok(()),
        Some(why) => Err(Error::Invalid(format!(
            "the Kafka setting {name:?} cannot be passed: {why} (the library takes \
             settings as name=value lines: a name is not empty and has no '=' or newline, a \
             value has no newline)"
        ))),
    }
}

/// What a topic does when a partition is full.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Retention {
    /// The slowest group holds messages; publishers wait (back-pressure). The default.
    #[default]
    UntilAcked,
    /// Publishers never wait: the oldest messages are dropped, and a group that falls behind
    /// is told how many it lost ([`Message::lost`](crate::Message::lost)).
    Bounded,
}

impl Retention {
    pub(crate) fn raw(self) -> i32 {
        match self {
            Retention::UntilAcked => mq_sys::mq_retention::MQ_RETAIN_UNTIL_ACKED as i32,
            Retention::Bounded => mq_sys::mq_retention::MQ_RETAIN_BOUNDED as i32,
        }
    }

    pub(crate) fn from_raw(v: i32) -> Retention {
        if v == mq_sys::mq_retention::MQ_RETAIN_BOUNDED as i32 {
            Retention::Bounded
        } else {
            Retention::UntilAcked
        }
    }
}

/// A topic's configuration: `TopicConfig::new().partitions(4).capacity(64)`.
///
/// Unset fields keep the library's defaults (1 partition, capacity 1024, no byte budget, 30 s
/// ack timeout, [`Retention::UntilAcked`], no maximum age). Values are checked by the library
/// when the topic is created ([`Error::Invalid`](crate::Error::Invalid)).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TopicConfig {
    pub(crate) partitions: Option<i32>,
    pub(crate) capacity: Option<i64>,
    pub(crate) max_bytes: Option<i64>,
    pub(crate) ack_timeout_ms: Option<i64>,
    pub(crate) retention: Option<Retention>,
    pub(crate) max_age_ms: Option<i64>,
}

impl TopicConfig {
    /// The library's defaults.
    pub fn new() -> TopicConfig {
        TopicConfig::default()
    }
    /// Number of partitions (1 to 65536).
    pub fn partitions(mut self, n: i32) -> Self {
        self.partitions = Some(n);
        self
    }
    /// Messages retained per partition (at least 1).
    pub fn capacity(mut self, n: i64) -> Self {
        self.capacity = Some(n);
        self
    }
    /// Key + payload + header bytes retained per partition (0 = no budget).
    pub fn max_bytes(mut self, n: i64) -> Self {
        self.max_bytes = Some(n);
        self
    }
    /// How long a poll's lease lasts before unacked messages are delivered again.
    pub fn ack_timeout(mut self, d: Duration) -> Self {
        self.ack_timeout_ms = Some(duration_ms(d));
        self
    }
    /// [`ack_timeout`](Self::ack_timeout) in milliseconds, passed through unchecked.
    pub fn ack_timeout_ms(mut self, ms: i64) -> Self {
        self.ack_timeout_ms = Some(ms);
        self
    }
    /// What happens when a partition is full.
    pub fn retention(mut self, r: Retention) -> Self {
        self.retention = Some(r);
        self
    }
    /// Trim messages older than this, whatever the groups' cursors.
    pub fn max_age(mut self, d: Duration) -> Self {
        self.max_age_ms = Some(duration_ms(d));
        self
    }
    /// [`max_age`](Self::max_age) in milliseconds, passed through unchecked (0 = no limit).
    pub fn max_age_ms(mut self, ms: i64) -> Self {
        self.max_age_ms = Some(ms);
        self
    }

    pub(crate) fn raw(&self) -> mq_sys::mq_topic_config {
        let mut c = mq_sys::mq_topic_config::default();
        // SAFETY: `c` is a valid config of the size passed.
        unsafe { mq_sys::mq_topic_config_init(&mut c, std::mem::size_of_val(&c)) };
        if let Some(v) = self.partitions {
            c.partitions = v;
        }
        if let Some(v) = self.capacity {
            c.capacity = v;
        }
        if let Some(v) = self.max_bytes {
            c.max_bytes = v;
        }
        if let Some(v) = self.ack_timeout_ms {
            c.ack_timeout_ms = v;
        }
        if let Some(v) = self.retention {
            c.retention = v.raw();
        }
        if let Some(v) = self.max_age_ms {
            c.max_age_ms = v;
        }
        c
    }
}

/// Where a new group starts reading.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Start {
    /// At the end of the log: it sees what is published after it subscribes. The default.
    #[default]
    Latest,
    /// At the oldest retained message.
    Earliest,
}

/// What kind of group [`GroupOptions::share`] subscribes (library 1.6, `mq_share_mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum ShareMode {
    /// An ordered group: each partition is handed out in offset order under one lease, and
    /// acks are cumulative. The default (`MQ_SHARE_NONE`).
    #[default]
    None,
    /// A share group (`MQ_SHARE_ALL`, Kafka's share groups): any number of polls share a
    /// partition, each message acquired under its own lock and settled on its own
    /// ([`PartitionConsumer::settle`](crate::PartitionConsumer::settle)).
    All,
    /// A key-shared group (`MQ_SHARE_KEY`, Pulsar's Key_Shared): a share group that does not
    /// hand out a message while an earlier one with the same key is unsettled, so each key's
    /// messages are handled one at a time, in offset order.
    Key,
}

impl ShareMode {
    pub(crate) fn raw(self) -> i32 {
        use mq_sys::mq_share_mode as m;
        (match self {
            ShareMode::None => m::MQ_SHARE_NONE,
            ShareMode::All => m::MQ_SHARE_ALL,
            ShareMode::Key => m::MQ_SHARE_KEY,
        }) as i32
    }
}

/// A group's options: start position, poison-message handling, share mode.
///
/// ```
/// let opts = mq::GroupOptions::new()
///     .start(mq::Start::Earliest)
///     .max_deliveries(3, "orders.dlq");
/// # let _ = opts;
/// let workers = mq::GroupOptions::new()
///     .share(mq::ShareMode::All)
///     .max_acquired(100);
/// # let _ = workers;
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GroupOptions {
    pub(crate) start: Start,
    pub(crate) max_deliveries: u32,
    pub(crate) dead_letter_topic: Option<String>,
    pub(crate) share: ShareMode,
    pub(crate) max_acquired: u32,
}

impl GroupOptions {
    /// Start at the latest offset, no delivery limit.
    pub fn new() -> GroupOptions {
        GroupOptions::default()
    }
    /// Where the group starts.
    pub fn start(mut self, s: Start) -> Self {
        self.start = s;
        self
    }
    /// After `n` deliveries without an ack, a message is moved to `dead_letter_topic` (which
    /// must exist) and counted as acked for this group.
    pub fn max_deliveries(mut self, n: u32, dead_letter_topic: &str) -> Self {
        self.max_deliveries = n;
        self.dead_letter_topic = Some(dead_letter_topic.to_owned());
        self
    }
    /// The two halves of [`max_deliveries`](Self::max_deliveries) set apart, passed through
    /// unchecked (the library refuses a limit without a topic and the reverse).
    pub fn max_deliveries_raw(mut self, n: u32, dead_letter_topic: Option<&str>) -> Self {
        self.max_deliveries = n;
        self.dead_letter_topic = dead_letter_topic.map(str::to_owned);
        self
    }
    /// The group's kind (library 1.6; default [`ShareMode::None`], an ordered group).
    ///
    /// A share group ([`ShareMode::All`], [`ShareMode::Key`]) is a task queue: any number of
    /// consumers poll the same partition, each poll acquires up to `max` messages no other
    /// poll holds, each under its own lock of the topic's ack timeout, and each acquired
    /// message is settled on its own, in any order, with
    /// [`PartitionConsumer::settle`](crate::PartitionConsumer::settle) (or
    /// [`Batch::settle`](crate::Batch::settle)); a message whose lock runs out is available
    /// again. [`max_deliveries`](Self::max_deliveries) and the dead-letter topic work as for
    /// ordered groups. [`PartitionConsumer::ack`](crate::PartitionConsumer::ack) accepts one
    /// acquired message (not cumulative), [`nack`](crate::PartitionConsumer::nack) releases
    /// every message the group holds on the partition, and
    /// [`extend_lease`](crate::PartitionConsumer::extend_lease) renews their locks.
    ///
    /// Push subscriptions and members take partitions exclusively: they refuse a share group
    /// ([`Error::Invalid`](crate::Error::Invalid)); the Kafka backend refuses one
    /// ([`Error::Unsupported`](crate::Error::Unsupported)).
    pub fn share(mut self, mode: ShareMode) -> Self {
        self.share = mode;
        self
    }
    /// Share groups only (library 1.6): at most `n` messages of one partition are acquired at
    /// once (0, the default, means the library's 2000; at most 1,000,000, else
    /// [`Error::Invalid`](crate::Error::Invalid) when subscribing). A poll that finds the
    /// limit reached waits until a message is settled or a lock runs out; publishers are not
    /// slowed by it.
    pub fn max_acquired(mut self, n: u32) -> Self {
        self.max_acquired = n;
        self
    }

    /// The C struct, and the C string its `dead_letter_topic` points to (keep it alive).
    pub(crate) fn raw(&self) -> crate::Result<(mq_sys::mq_group_options, Option<CString>)> {
        let mut o = mq_sys::mq_group_options::default();
        // SAFETY: `o` is a valid options struct of the size passed.
        unsafe { mq_sys::mq_group_options_init(&mut o, std::mem::size_of_val(&o)) };
        o.start = match self.start {
            Start::Latest => mq_sys::mq_start::MQ_START_LATEST as i32,
            Start::Earliest => mq_sys::mq_start::MQ_START_EARLIEST as i32,
        };
        o.max_deliveries = self.max_deliveries;
        o.share = self.share.raw();
        o.max_acquired = self.max_acquired;
        let dlq = self
            .dead_letter_topic
            .as_deref()
            .map(crate::name::owned)
            .transpose()?;
        if let Some(d) = &dlq {
            o.dead_letter_topic = d.as_ptr();
        }
        Ok((o, dlq))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kafka_settings_become_name_value_lines_in_order() {
        let opts = BrokerOptions::new()
            .kafka("h:9092")
            .kafka_setting("client.id", "billing")
            .kafka_setting("sasl.jaas.config", "user=a pass=b")
            .kafka_setting("client.id", "");
        let (bootstrap, config) = opts.kafka_c().unwrap();
        assert_eq!(bootstrap.unwrap().to_bytes(), b"h:9092");
        assert_eq!(
            config.unwrap().to_bytes(),
            b"client.id=billing\nsasl.jaas.config=user=a pass=b\nclient.id="
        );
        let (bootstrap, config) = BrokerOptions::new().kafka_c().unwrap();
        assert!(bootstrap.is_none() && config.is_none());
    }
}
