//! The broker: topics, groups, publishing and introspection.
use std::any::Any;
use std::ffi::c_char;
use std::ptr::NonNull;
use std::sync::{Arc, Mutex};

use mq_sys as sys;

use crate::cancel::{self, CancelToken};
use crate::config::{manual_clock_read, BrokerOptions, GroupOptions, ManualClock, TopicConfig};
use crate::error::{check, BatchError, Error, Result};
use crate::info::{GroupInfo, PartitionInfo, TopicInfo};
use crate::message::{Published, Record};
use crate::name::with_name;
use crate::wait::Wait;

/// The C broker and what must outlive it. Freed (`mq_broker_free`) when the last owner goes:
/// every `Broker` clone, subscription, member, consumer, publisher and cursor holds one.
pub(crate) struct Raw {
    ptr: NonNull<sys::mq_broker>,
    _clock: Option<ManualClock>,
    /// Callback state the library may use until its memory goes (assignors).
    keep: Mutex<Vec<Arc<dyn Any + Send + Sync>>>,
}

// SAFETY: every mq function is thread-safe on one broker.
unsafe impl Send for Raw {}
unsafe impl Sync for Raw {}

impl Raw {
    pub(crate) fn as_ptr(&self) -> *mut sys::mq_broker {
        self.ptr.as_ptr()
    }

    /// Keeps `v` until after `mq_broker_free`.
    pub(crate) fn keep_alive(&self, v: Arc<dyn Any + Send + Sync>) {
        self.keep.lock().unwrap_or_else(|e| e.into_inner()).push(v);
    }
}

impl Drop for Raw {
    fn drop(&mut self) {
        // SAFETY: the last owner; nothing made from the broker is alive any more.
        unsafe { sys::mq_broker_free(self.ptr.as_ptr()) }
    }
}

/// Shared by the clones of one `Broker`: when the last clone goes, the broker closes.
struct Handle(Arc<Raw>);

impl Drop for Handle {
    fn drop(&mut self) {
        // SAFETY: live handle. Closing wakes every waiting call with Closed; the memory stays
        // until the subscriptions, members and consumers still holding it are dropped too.
        unsafe { sys::mq_broker_close(self.0.as_ptr()) };
    }
}

/// An mq broker: a set of topics living in this process.
///
/// `Broker` is `Send + Sync` and cheap to clone (clones share one broker). When the last clone
/// is dropped the broker **closes**: every waiting publish or poll returns
/// [`Error::Closed`], push handlers stop, later calls fail with `Closed`. Its memory lives on
/// until every [`Subscription`](crate::Subscription), [`Member`](crate::Member),
/// [`PartitionConsumer`](crate::PartitionConsumer), [`Publisher`](crate::Publisher) and
/// [`Cursor`](crate::Cursor) made from it is dropped too, so nothing
/// made from a broker can dangle, in whatever order things are dropped.
///
/// ```
/// use mq::{Broker, GroupOptions, Record, TopicConfig, Wait};
/// # fn main() -> mq::Result<()> {
/// let broker = Broker::new()?;
/// broker.create_topic("orders", &TopicConfig::new().partitions(2))?;
/// broker.subscribe_group("orders", "billing", &GroupOptions::new())?;
/// let at = broker.publish("orders", Record::new(b"o-1").key(b"user-a"), Wait::Forever)?;
/// let mut billing = broker.consumer("orders", "billing", at.partition)?;
/// let batch = billing.poll(10, Wait::NoWait)?;
/// assert_eq!(batch.messages()[0].payload(), b"o-1");
/// batch.ack()?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Broker {
    h: Arc<Handle>,
}

impl std::fmt::Debug for Broker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Broker")
            .field("ptr", &self.raw().ptr)
            .finish()
    }
}

impl Broker {
    /// A broker with default options.
    pub fn new() -> Result<Broker> {
        Broker::with_options(&BrokerOptions::new())
    }

    /// A broker with `opts`.
    ///
    /// With [`BrokerOptions::kafka`]: [`Error::Unsupported`] when the library has no Kafka
    /// backend (this crate builds it only with the `kafka` feature), [`Error::Backend`] when the
    /// cluster does not answer within 10 s, [`Error::Invalid`] for a Kafka setting the C API
    /// cannot carry or librdkafka rejects.
    pub fn with_options(opts: &BrokerOptions) -> Result<Broker> {
        // Checked before anything else, and alive across mq_broker_new, which copies them.
        let (kafka_bootstrap, kafka_config) = opts.kafka_c()?;
        let mut o = sys::mq_broker_options::default();
        // SAFETY: valid options struct of the size passed.
        unsafe { sys::mq_broker_options_init(&mut o, std::mem::size_of_val(&o)) };
        if let Some(n) = opts.max_message_bytes {
            o.max_message_bytes = n;
        }
        if let Some(d) = opts.spin {
            o.spin_ns = i64::try_from(d.as_nanos()).unwrap_or(i64::MAX);
        }
        if let Some(c) = &opts.clock {
            o.clock = Some(manual_clock_read);
            o.clock_user = Arc::as_ptr(&c.0) as *mut std::ffi::c_void;
        }
        if let Some(b) = &kafka_bootstrap {
            o.kafka_bootstrap = b.as_ptr();
        }
        if let Some(c) = &kafka_config {
            o.kafka_config = c.as_ptr();
        }
        let mut p = std::ptr::null_mut();
        // SAFETY: valid options and out-pointer; the clock's atomic is kept alive by Raw, the
        // Kafka strings until after the call (the library copies them).
        check(unsafe { sys::mq_broker_new(&o, &mut p) })?;
        let raw = Raw {
            ptr: NonNull::new(p).expect("mq_broker_new returned MQ_OK and NULL"),
            _clock: opts.clock.clone(),
            keep: Mutex::new(Vec::new()),
        };
        Ok(Broker {
            h: Arc::new(Handle(Arc::new(raw))),
        })
    }

    pub(crate) fn raw(&self) -> &Arc<Raw> {
        &self.h.0
    }

    fn ptr(&self) -> *mut sys::mq_broker {
        self.raw().as_ptr()
    }

    /// Closes the broker now (what dropping the last clone does): waiting calls return
    /// [`Error::Closed`], handlers stop, later calls fail with `Closed` except introspection.
    /// Idempotent.
    pub fn close(&self) -> Result<()> {
        // SAFETY: live handle.
        check(unsafe { sys::mq_broker_close(self.ptr()) })
    }

    /// Creates a topic.
    pub fn create_topic(&self, name: &str, config: &TopicConfig) -> Result<()> {
        let c = config.raw();
        // SAFETY: live handle, NUL-terminated name, valid config.
        with_name(name, |n| {
            check(unsafe { sys::mq_topic_create(self.ptr(), n, &c) })
        })
    }

    /// Deletes a topic (library 1.1). When it returns the name is free: calls by name fail
    /// with [`Error::NoTopic`], and [`create_topic`](Self::create_topic) makes a new, empty
    /// topic of that name that shares nothing with the old one.
    ///
    /// What was using the topic:
    /// - a [`publish`](Self::publish) or poll waiting on it returns [`Error::NoTopic`] at once;
    /// - a [`PartitionConsumer`](crate::PartitionConsumer) of it gets [`Error::NoTopic`] from
    ///   every call (it names its topic: if the name is created again and the group subscribed
    ///   anew, it consumes the new topic);
    /// - a [`Publisher`](crate::Publisher) or [`Cursor`](crate::Cursor) of it gets
    ///   [`Error::NoTopic`] from every call, even once the name is created again (it holds the
    ///   topic, not the name); drop it as usual;
    /// - a [`Subscription`](crate::Subscription) stops calling its handler (a call already
    ///   running finishes, its message valid); close or drop it as usual;
    /// - a [`Member`](crate::Member) gets [`Error::NoTopic`] from every call but
    ///   [`id`](crate::Member::id) and [`close`](crate::Member::close), and no rebalance
    ///   callback runs any more; its [`MemberBatch`](crate::MemberBatch)es are copies and stay
    ///   readable; close or drop it as usual;
    /// - a [`Batch`](crate::Batch) stays readable (a copy).
    ///
    /// [`Error::NoTopic`] (no such topic), [`Error::Invalid`] (an illegal name),
    /// [`Error::Closed`].
    ///
    /// ```
    /// # fn main() -> mq::Result<()> {
    /// let broker = mq::Broker::new()?;
    /// broker.create_topic("t", &mq::TopicConfig::new())?;
    /// broker.subscribe_group("t", "g", &mq::GroupOptions::new())?;
    /// broker.publish("t", mq::Record::new(b"x"), mq::Wait::NoWait)?;
    /// let mut c = broker.consumer("t", "g", 0)?;
    /// let batch = c.poll(10, mq::Wait::NoWait)?;
    /// broker.delete_topic("t")?;
    /// assert_eq!(batch.messages()[0].payload(), b"x"); // a batch is a copy: it stays readable
    /// drop(batch);
    /// assert!(matches!(c.poll(10, mq::Wait::NoWait), Err(mq::Error::NoTopic(_))));
    /// # Ok(()) }
    /// ```
    pub fn delete_topic(&self, name: &str) -> Result<()> {
        with_name(name, |n| {
            // SAFETY: live handle, NUL-terminated name.
            check(unsafe { sys::mq_topic_delete(self.ptr(), n) })
        })
    }

    /// The topics, in creation order.
    pub fn topics(&self) -> Result<Vec<String>> {
        // SAFETY: live handle; list_into passes valid buffers.
        list_into(|buf, cap, needed| unsafe { sys::mq_topic_list(self.ptr(), buf, cap, needed) })
    }

    /// The groups of a topic, in subscription order.
    pub fn groups(&self, topic: &str) -> Result<Vec<String>> {
        with_name(topic, |t| {
            // SAFETY: live handle, valid name; list_into passes valid buffers.
            list_into(|buf, cap, needed| unsafe {
                sys::mq_group_list(self.ptr(), t, buf, cap, needed)
            })
        })
    }

    /// Subscribes a consumer group to a topic.
    pub fn subscribe_group(&self, topic: &str, group: &str, opts: &GroupOptions) -> Result<()> {
        let (o, _dlq) = opts.raw()?;
        with_name(topic, |t| {
            with_name(group, |g| {
                // SAFETY: live handle, valid names and options (`_dlq` outlives the call).
                check(unsafe { sys::mq_group_subscribe(self.ptr(), t, g, &o) })
            })
        })
    }

    /// Removes a group from a topic: its cursors go, and what only it held back is trimmed.
    /// Its members' calls return [`Error::NoGroup`] (a waiting member poll at once) and their
    /// rebalance callbacks are not called any more; drop them as usual. Its
    /// [`Cursor`](crate::Cursor)s' calls return [`Error::NoGroup`], even once the group is
    /// subscribed again.
    /// A [`Batch`](crate::Batch) of the group stays readable (it is a copy).
    pub fn unsubscribe_group(&self, topic: &str, group: &str) -> Result<()> {
        with_name(topic, |t| {
            with_name(group, |g| {
                // SAFETY: live handle, valid names.
                check(unsafe { sys::mq_group_unsubscribe(self.ptr(), t, g) })
            })
        })
    }

    /// Publishes one record, waiting up to `wait` while its partition is full.
    ///
    /// A record with a [`delay`](Record::delay) is appended at once but handed out only when it
    /// is due (the C API has no delay on its single publish: such a record goes to it as a batch
    /// of one, with the same outcome).
    ///
    /// Fails with [`Error::Full`] when the partition is still full when the wait ends (nothing
    /// appended), [`Error::Closed`], [`Error::NoTopic`], [`Error::TooLarge`], ...
    pub fn publish(
        &self,
        topic: &str,
        record: Record<'_>,
        wait: impl Into<Wait>,
    ) -> Result<Published> {
        self.publish_inner(topic, &record, wait.into(), None)
    }

    /// [`publish`](Self::publish) that `token` can interrupt ([`Error::Cancelled`]).
    pub fn publish_cancellable(
        &self,
        topic: &str,
        record: Record<'_>,
        wait: impl Into<Wait>,
        token: &CancelToken,
    ) -> Result<Published> {
        self.publish_inner(topic, &record, wait.into(), Some(token))
    }

    #[inline]
    fn publish_inner(
        &self,
        topic: &str,
        r: &Record<'_>,
        wait: Wait,
        token: Option<&CancelToken>,
    ) -> Result<Published> {
        with_name(topic, |t| {
            Target::Named(self.ptr(), t).publish(r, wait, token)
        })
    }

    /// Publishes `records`, taking each partition's lock once for all of its records, within
    /// one overall `wait`. Records of one partition are appended in order.
    ///
    /// On `Full`, `Closed` or `Cancelled` the batch may have stopped part-way:
    /// [`BatchError::published`] says how many records went in (a prefix of each partition's
    /// records). An invalid record fails the whole batch with nothing appended. Each record
    /// carries its own [`delay`](Record::delay); a record that is due still waits behind an
    /// earlier one of its partition that is not.
    ///
    /// ```
    /// # fn main() -> mq::Result<()> {
    /// let broker = mq::Broker::new()?;
    /// broker.create_topic("t", &mq::TopicConfig::new().capacity(2))?;
    /// broker.subscribe_group("t", "g", &mq::GroupOptions::new())?;
    /// let recs = [mq::Record::new(b"a"), mq::Record::new(b"b"), mq::Record::new(b"c")];
    /// let err = broker.publish_batch("t", &recs, mq::Wait::NoWait).unwrap_err();
    /// assert_eq!(err.published, 2);
    /// assert!(matches!(err.error, mq::Error::Full(_)));
    /// # Ok(()) }
    /// ```
    pub fn publish_batch(
        &self,
        topic: &str,
        records: &[Record<'_>],
        wait: impl Into<Wait>,
    ) -> Result<(), BatchError> {
        self.batch_inner(topic, records, wait.into(), None, None)
    }

    /// [`publish_batch`](Self::publish_batch) with a cancel token and, in `results` (one
    /// entry per record, or an empty slice), where each record went (offset -1 if not
    /// appended; `results` is left as it was when the batch is refused as a whole).
    pub fn publish_batch_with(
        &self,
        topic: &str,
        records: &[Record<'_>],
        wait: impl Into<Wait>,
        token: Option<&CancelToken>,
        results: &mut [Published],
    ) -> Result<(), BatchError> {
        check_results(records, results)?;
        self.batch_inner(topic, records, wait.into(), token, Some(results))
    }

    fn batch_inner(
        &self,
        topic: &str,
        records: &[Record<'_>],
        wait: Wait,
        token: Option<&CancelToken>,
        results: Option<&mut [Published]>,
    ) -> Result<(), BatchError> {
        with_name(topic, |t| {
            Ok(Target::Named(self.ptr(), t).publish_batch(records, wait, token, results))
        })
        .unwrap_or_else(|error| {
            Err(BatchError {
                published: 0,
                error,
            })
        })
    }

    /// The topic's configuration.
    pub fn topic_info(&self, topic: &str) -> Result<TopicInfo> {
        let mut i = sys::mq_topic_info::default();
        with_name(topic, |t| {
            // SAFETY: live handle, valid name, `i` of the size passed.
            check(unsafe {
                sys::mq_topic_get_info(self.ptr(), t, &mut i, std::mem::size_of_val(&i))
            })
        })?;
        Ok(TopicInfo::from_raw(&i))
    }

    /// A partition's state.
    pub fn partition_info(&self, topic: &str, partition: i32) -> Result<PartitionInfo> {
        let mut i = sys::mq_partition_info::default();
        with_name(topic, |t| {
            // SAFETY: as above.
            check(unsafe {
                sys::mq_partition_get_info(
                    self.ptr(),
                    t,
                    partition,
                    &mut i,
                    std::mem::size_of_val(&i),
                )
            })
        })?;
        Ok(PartitionInfo::from_raw(&i))
    }

    /// A group's cursor on a partition.
    pub fn group_info(&self, topic: &str, group: &str, partition: i32) -> Result<GroupInfo> {
        let mut i = sys::mq_group_info::default();
        with_name(topic, |t| {
            with_name(group, |g| {
                // SAFETY: as above.
                check(unsafe {
                    sys::mq_group_get_info(
                        self.ptr(),
                        t,
                        g,
                        partition,
                        &mut i,
                        std::mem::size_of_val(&i),
                    )
                })
            })
        })?;
        Ok(GroupInfo::from_raw(&i))
    }

    /// A partition as the reference trace prints it, e.g.
    /// `"log 1..3, backlog 3/3; billing 1/4; email 3/3"`.
    pub fn describe(&self, topic: &str, partition: i32) -> Result<String> {
        with_name(topic, |t| {
            // SAFETY: live handle; string_into passes valid buffers.
            string_into(|buf, cap, needed| unsafe {
                sys::mq_partition_describe(self.ptr(), t, partition, buf, cap, needed)
            })
        })
    }
}

/// Where a publish goes: a topic by name, or a publisher (its topic looked up once). Both
/// take the same arguments after the name and give the same outcomes.
#[derive(Clone, Copy)]
pub(crate) enum Target {
    /// `mq_topic_publish*` on the broker's topic of that NUL-terminated name.
    Named(*mut sys::mq_broker, *const c_char),
    /// `mq_publisher_publish*`.
    Publisher(*mut sys::mq_publisher),
}

impl Target {
    /// Publishes one record. The callers keep what the target points to alive for the call.
    #[inline]
    pub(crate) fn publish(
        self,
        r: &Record<'_>,
        wait: Wait,
        token: Option<&CancelToken>,
    ) -> Result<Published> {
        if r.0.delay_ms != 0 {
            return self.delayed_single(r, wait, token);
        }
        let r = &r.0;
        let mut at = Published::default();
        let (w, c) = (wait.millis(), cancel::ptr(token));
        // SAFETY: a live broker and name or a live publisher (the callers'); the record's
        // slices are borrowed for the call.
        check(unsafe {
            match self {
                Target::Named(b, t) => sys::mq_topic_publish(
                    b,
                    t,
                    r.key,
                    r.key_len,
                    r.payload,
                    r.payload_len,
                    r.headers,
                    r.header_count,
                    w,
                    c,
                    &mut at.partition,
                    &mut at.offset,
                ),
                Target::Publisher(p) => sys::mq_publisher_publish(
                    p,
                    r.key,
                    r.key_len,
                    r.payload,
                    r.payload_len,
                    r.headers,
                    r.header_count,
                    w,
                    c,
                    &mut at.partition,
                    &mut at.offset,
                ),
            }
        })?;
        Ok(at)
    }

    /// A delayed single publish: a batch of one (the single form has no delay).
    fn delayed_single(
        self,
        r: &Record<'_>,
        wait: Wait,
        token: Option<&CancelToken>,
    ) -> Result<Published> {
        let mut at = [Published {
            partition: -1,
            offset: -1,
        }];
        self.publish_batch(std::slice::from_ref(r), wait, token, Some(&mut at))
            .map_err(|e| e.error)?;
        Ok(at[0])
    }

    /// Publishes `records`; `results`, when given and not empty, has one entry per record.
    pub(crate) fn publish_batch(
        self,
        records: &[Record<'_>],
        wait: Wait,
        token: Option<&CancelToken>,
        results: Option<&mut [Published]>,
    ) -> Result<(), BatchError> {
        let mut published = 0usize;
        // Published is not layout-compatible with mq_publish_result (padding aside, a
        // future field could be added there): results go through a C-shaped scratch array.
        // Marked so that results the library did not write (a batch refused as a whole) are
        // left untouched.
        let unwritten = sys::mq_publish_result {
            partition: i32::MIN,
            offset: i64::MIN,
        };
        let mut scratch: Vec<sys::mq_publish_result> = match &results {
            Some(r) if !r.is_empty() => vec![unwritten; r.len()],
            _ => Vec::new(),
        };
        let res_ptr = if scratch.is_empty() {
            std::ptr::null_mut()
        } else {
            scratch.as_mut_ptr()
        };
        let (recs, rec_size, res_size) = (
            records.as_ptr().cast(),
            std::mem::size_of::<sys::mq_record>(),
            std::mem::size_of::<sys::mq_publish_result>(),
        );
        let (w, c) = (wait.millis(), cancel::ptr(token));
        // SAFETY: as in `publish`; Record is repr(transparent) over mq_record; `scratch` has
        // one entry per record or is NULL.
        let r = check(unsafe {
            match self {
                Target::Named(b, t) => sys::mq_topic_publish_batch(
                    b,
                    t,
                    recs,
                    rec_size,
                    records.len(),
                    w,
                    c,
                    res_ptr,
                    res_size,
                    &mut published,
                ),
                Target::Publisher(p) => sys::mq_publisher_publish_batch(
                    p,
                    recs,
                    rec_size,
                    records.len(),
                    w,
                    c,
                    res_ptr,
                    res_size,
                    &mut published,
                ),
            }
        });
        if let Some(out) = results {
            for (o, s) in out
                .iter_mut()
                .zip(&scratch)
                .filter(|(_, s)| s.partition != i32::MIN)
            {
                *o = Published {
                    partition: s.partition,
                    offset: s.offset,
                };
            }
        }
        r.map_err(|error| BatchError { published, error })
    }
}

/// `results` of a `publish_batch_with`: one entry per record, or none.
pub(crate) fn check_results(
    records: &[Record<'_>],
    results: &[Published],
) -> Result<(), BatchError> {
    if !results.is_empty() && results.len() != records.len() {
        return Err(BatchError {
            published: 0,
            error: Error::Invalid(format!(
                "results has {} entries for {} records (pass one per record, or none)",
                results.len(),
                records.len()
            )),
        });
    }
    Ok(())
}

/// Calls an snprintf-style C function, growing the buffer until the text fits.
fn string_into(
    mut f: impl FnMut(*mut c_char, usize, *mut usize) -> sys::mq_status,
) -> Result<String> {
    let mut buf = vec![0u8; 256];
    loop {
        let mut needed = 0usize;
        check(f(buf.as_mut_ptr().cast(), buf.len(), &mut needed))?;
        if needed <= buf.len() {
            let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
            buf.truncate(end);
            return Ok(String::from_utf8_lossy(&buf).into_owned());
        }
        buf.resize(needed, 0);
    }
}

fn list_into(
    f: impl FnMut(*mut c_char, usize, *mut usize) -> sys::mq_status,
) -> Result<Vec<String>> {
    Ok(string_into(f)?.lines().map(str::to_owned).collect())
}

/// Kafka's default partition for a key: `(murmur2(key) & 0x7fffffff) % partitions`.
///
/// ```
/// assert_eq!(mq::key_partition(b"user-a", 2)?, 1);
/// # Ok::<(), mq::Error>(())
/// ```
pub fn key_partition(key: &[u8], partitions: i32) -> Result<i32> {
    let mut out = 0;
    // SAFETY: key is a valid slice (pointer and length), out a valid out-pointer.
    check(unsafe { sys::mq_key_partition(key.as_ptr().cast(), key.len(), partitions, &mut out) })?;
    Ok(out)
}

/// Kafka's murmur2 of a key (signed, as Kafka's `Utils.murmur2` returns it).
///
/// ```
/// assert_eq!(mq::murmur2(b"21"), -973932308);
/// ```
pub fn murmur2(key: &[u8]) -> i32 {
    // SAFETY: a valid slice.
    unsafe { sys::mq_key_murmur2(key.as_ptr().cast(), key.len()) }
}

/// The partitions member `member` of `members` owns under round-robin assignment (partition
/// `p` goes to member `p % members`).
///
/// ```
/// assert_eq!(mq::round_robin(5, 2, 1)?, vec![1, 3]);
/// # Ok::<(), mq::Error>(())
/// ```
pub fn round_robin(partitions: i32, members: i32, member: i32) -> Result<Vec<i32>> {
    let mut count = 0usize;
    // SAFETY: cap 0 with a NULL buffer asks for the count.
    check(unsafe {
        sys::mq_assignment_round_robin(
            partitions,
            members,
            member,
            std::ptr::null_mut(),
            0,
            &mut count,
        )
    })?;
    let mut out = vec![0i32; count];
    // SAFETY: `out` has room for `count`.
    check(unsafe {
        sys::mq_assignment_round_robin(
            partitions,
            members,
            member,
            out.as_mut_ptr(),
            out.len(),
            &mut count,
        )
    })?;
    out.truncate(count);
    Ok(out)
}

/// The library's version at run time, e.g. `"1.3.0"`.
pub fn version() -> &'static str {
    // SAFETY: a static NUL-terminated string.
    unsafe { std::ffi::CStr::from_ptr(sys::mq_version_string()) }
        .to_str()
        .unwrap_or("")
}

/// The library's version number at run time (`major * 1000000 + minor * 1000 + patch`).
pub fn version_number() -> i32 {
    // SAFETY: no arguments.
    unsafe { sys::mq_version_number() }
}
