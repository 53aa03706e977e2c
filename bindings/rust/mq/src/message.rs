//! Records to publish and messages handed out.
use std::ffi::CStr;
use std::fmt;
use std::marker::PhantomData;
use std::time::Duration;

use mq_sys as sys;

use crate::wait::duration_ms;

/// Builds a slice from a C pointer and length; a NULL or dangling pointer with length 0 is
/// the empty slice.
///
/// # Safety
/// When `len > 0`, `p` must point to `len` readable bytes that live for `'a`.
unsafe fn bytes<'a>(p: *const std::ffi::c_void, len: usize) -> &'a [u8] {
    if len == 0 || p.is_null() {
        &[]
    } else {
        // SAFETY: the caller's promise.
        unsafe { std::slice::from_raw_parts(p.cast(), len) }
    }
}

fn ptr_of(b: &[u8]) -> *const std::ffi::c_void {
    b.as_ptr().cast()
}

/// A message header: a name and a value, both byte strings. Layout-compatible with
/// `mq_header`, so a `&[Header]` goes to the library as it is.
#[repr(transparent)]
#[derive(Clone, Copy)]
pub struct Header<'a>(sys::mq_header, PhantomData<&'a [u8]>);

// SAFETY: a Header is a pair of shared byte slices.
unsafe impl Send for Header<'_> {}
unsafe impl Sync for Header<'_> {}

impl<'a> Header<'a> {
    /// A header borrowing its name and value.
    pub fn new(name: &'a [u8], value: &'a [u8]) -> Header<'a> {
        Header(
            sys::mq_header {
                name: ptr_of(name),
                name_len: name.len(),
                value: ptr_of(value),
                value_len: value.len(),
            },
            PhantomData,
        )
    }
    /// The header's name.
    pub fn name(&self) -> &'a [u8] {
        // SAFETY: built from a slice of lifetime 'a, or handed out by the library for 'a.
        unsafe { bytes(self.0.name, self.0.name_len) }
    }
    /// The header's value.
    pub fn value(&self) -> &'a [u8] {
        // SAFETY: as for name.
        unsafe { bytes(self.0.value, self.0.value_len) }
    }
}

impl fmt::Debug for Header<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:?}={:?}",
            String::from_utf8_lossy(self.name()),
            String::from_utf8_lossy(self.value())
        )
    }
}

/// One message to publish: a payload, an optional key (it picks the partition; without one
/// messages go round-robin), headers and an optional delivery delay
/// ([`delay`](Record::delay)). Layout-compatible with `mq_record`, so
/// [`Broker::publish_batch`](crate::Broker::publish_batch) hands a `&[Record]` to the library
/// without converting it.
///
/// ```
/// use std::time::Duration;
/// let hdrs = [mq::Header::new(b"trace-id", b"42")];
/// let r = mq::Record::new(b"o-1").key(b"user-a").headers(&hdrs);
/// assert_eq!(r.key_bytes(), Some(&b"user-a"[..]));
/// assert_eq!(r.delay(Duration::from_millis(1500)).delay_millis(), 1500);
/// ```
#[repr(transparent)]
#[derive(Clone, Copy)]
pub struct Record<'a>(pub(crate) sys::mq_record, PhantomData<&'a [u8]>);

// SAFETY: a Record is a set of shared borrowed slices.
unsafe impl Send for Record<'_> {}
unsafe impl Sync for Record<'_> {}

impl<'a> Record<'a> {
    /// A keyless record (round-robin over partitions).
    pub fn new(payload: &'a [u8]) -> Record<'a> {
        Record(
            sys::mq_record {
                key: std::ptr::null(),
                key_len: 0,
                payload: ptr_of(payload),
                payload_len: payload.len(),
                headers: std::ptr::null(),
                header_count: 0,
                delay_ms: 0,
            },
            PhantomData,
        )
    }
    /// Sets the key: the partition is Kafka's `murmur2(key) % partitions`. An empty key is a
    /// key (it is not the same as no key).
    pub fn key(mut self, key: &'a [u8]) -> Self {
        self.0.key = ptr_of(key);
        self.0.key_len = key.len();
        self
    }
    /// Sets the key, or removes it with `None`.
    pub fn maybe_key(self, key: Option<&'a [u8]>) -> Self {
        match key {
            Some(k) => self.key(k),
            None => {
                let mut r = self;
                r.0.key = std::ptr::null();
                r.0.key_len = 0;
                r
            }
        }
    }
    /// Sets the headers (an ordered list; duplicates allowed).
    pub fn headers(mut self, headers: &'a [Header<'a>]) -> Self {
        self.0.headers = if headers.is_empty() {
            std::ptr::null()
        } else {
            headers.as_ptr().cast()
        };
        self.0.header_count = headers.len();
        self
    }
    /// Delays the message's delivery (library 1.5): it is appended (and counted, and retained)
    /// at once, but no group is handed it before the broker clock reaches its publish time +
    /// `delay`. Zero (the default) hands it out at once. Rounded up to whole milliseconds.
    ///
    /// A group hands out a partition in offset order, so a delayed message holds the messages
    /// after it in its partition, for every group, until it is due (per-key order is kept):
    /// publish delayed messages to a topic of their own, or with a key whose partition carries
    /// nothing urgent, when that matters. Polls waiting on the partition wake when it is due.
    ///
    /// Works with every publish: [`Broker::publish`](crate::Broker::publish) (a delayed single
    /// message goes to the library as a batch of one), the batches (each record its own delay)
    /// and their futures. A delay above 2^40 ms is refused when published
    /// ([`Error::Invalid`](crate::Error::Invalid)); the Kafka backend refuses any delay
    /// ([`Error::Unsupported`](crate::Error::Unsupported)).
    ///
    /// ```
    /// # fn main() -> mq::Result<()> {
    /// use std::time::Duration;
    /// let clock = mq::ManualClock::new();
    /// let broker = mq::Broker::with_options(&mq::BrokerOptions::new().clock(&clock))?;
    /// broker.create_topic("t", &mq::TopicConfig::new())?;
    /// broker.subscribe_group("t", "g", &mq::GroupOptions::new())?;
    /// let r = mq::Record::new(b"reminder").delay(Duration::from_secs(60));
    /// broker.publish("t", r, mq::Wait::NoWait)?;
    /// let mut c = broker.consumer("t", "g", 0)?;
    /// assert!(matches!(c.poll(10, mq::Wait::NoWait), Err(mq::Error::Timeout(_))));
    /// clock.advance(Duration::from_secs(60));
    /// assert_eq!(c.poll(10, mq::Wait::NoWait)?.messages()[0].payload(), b"reminder");
    /// # Ok(()) }
    /// ```
    pub fn delay(mut self, delay: Duration) -> Self {
        self.0.delay_ms = duration_ms(delay);
        self
    }
    /// [`delay`](Self::delay) in milliseconds, passed through unchecked: the library refuses a
    /// negative one or one above 2^40 ms ([`Error::Invalid`](crate::Error::Invalid), naming
    /// the record) when the record is published.
    pub fn delay_ms(mut self, delay_ms: i64) -> Self {
        self.0.delay_ms = delay_ms;
        self
    }
    /// The delivery delay in milliseconds (0: none).
    pub fn delay_millis(&self) -> i64 {
        self.0.delay_ms
    }
    /// The key, if any.
    pub fn key_bytes(&self) -> Option<&'a [u8]> {
        // SAFETY: built from slices of lifetime 'a.
        (!self.0.key.is_null()).then(|| unsafe { bytes(self.0.key, self.0.key_len) })
    }
    /// The headers, as `(name, value)` pairs.
    pub fn header_pairs(&self) -> Headers<'a> {
        let all: &'a [Header<'a>] = if self.0.header_count == 0 || self.0.headers.is_null() {
            &[]
        } else {
            // SAFETY: built from a slice of `header_count` headers of lifetime 'a.
            unsafe {
                std::slice::from_raw_parts(self.0.headers.cast::<Header<'a>>(), self.0.header_count)
            }
        };
        Headers(all.iter())
    }
    /// The payload.
    pub fn payload_bytes(&self) -> &'a [u8] {
        // SAFETY: as above.
        unsafe { bytes(self.0.payload, self.0.payload_len) }
    }
}

impl fmt::Debug for Record<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Record")
            .field("key", &self.key_bytes().map(String::from_utf8_lossy))
            .field("payload", &String::from_utf8_lossy(self.payload_bytes()))
            .field("delay_ms", &self.0.delay_ms)
            .finish()
    }
}

/// Where a record went: its partition and offset.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Published {
    /// The partition it was appended to (or would have been).
    pub partition: i32,
    /// Its offset, or -1 if a batch stopped before it.
    pub offset: i64,
}

/// Where a dead-lettered message came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeadLetter<'a> {
    /// The topic it was first published to.
    pub topic: &'a str,
    /// The group that gave up on it.
    pub group: &'a str,
    /// Its partition there.
    pub partition: i32,
    /// Its offset there.
    pub offset: i64,
    /// How often that group had been handed it.
    pub delivery_count: u32,
}

/// A message handed out by a poll (in the consumer's copy buffer) or to a push handler (a
/// view into the log, for the call).
///
/// Its lifetime `'a` is the borrow of the [`Batch`](crate::Batch) (or handler call) it came
/// from, which ends when the batch is acked: the compiler keeps it from outliving the buffer
/// the next poll reuses. [`detach`](Message::detach) makes an owned copy that lives on.
#[repr(transparent)]
pub struct Message<'a>(sys::mq_message, PhantomData<&'a [u8]>);

// SAFETY: a Message is a set of shared views into memory nobody changes while it is borrowed.
unsafe impl Send for Message<'_> {}
unsafe impl Sync for Message<'_> {}

impl<'a> Message<'a> {
    /// Views `m` as a Message.
    ///
    /// # Safety
    /// Every pointer of `m` must stay valid for `'a`.
    pub(crate) unsafe fn from_raw(m: &'a sys::mq_message) -> &'a Message<'a> {
        // SAFETY: Message is repr(transparent) over mq_message; validity is the caller's promise.
        unsafe { &*(m as *const sys::mq_message).cast::<Message<'a>>() }
    }

    /// Views a slice of library messages.
    ///
    /// # Safety
    /// As for [`from_raw`](Self::from_raw), for every element.
    pub(crate) unsafe fn slice(m: &'a [sys::mq_message]) -> &'a [Message<'a>] {
        // SAFETY: as for from_raw, element by element.
        unsafe { std::slice::from_raw_parts(m.as_ptr().cast(), m.len()) }
    }

    /// The partition it came from.
    pub fn partition(&self) -> i32 {
        self.0.partition
    }
    /// Its offset in the partition.
    pub fn offset(&self) -> i64 {
        self.0.offset
    }
    /// How many polls have handed this offset to this group, this one included (1 on first
    /// delivery). A nack or an expired lease alone does not count; the poll that hands the
    /// message out again does. In a push subscription, the rest of a polled batch that the loop
    /// gives back unseen (after a handler fails, or when it stops) does not count, so a failing
    /// message never takes the ones behind it to the dead-letter topic before a handler saw them.
    pub fn delivery_count(&self) -> u32 {
        self.0.delivery_count
    }
    /// The key, or `None` for a message published without one.
    pub fn key(&self) -> Option<&'a [u8]> {
        // SAFETY: valid for 'a (from_raw's contract).
        (!self.0.key.is_null()).then(|| unsafe { bytes(self.0.key, self.0.key_len) })
    }
    /// The payload.
    pub fn payload(&self) -> &'a [u8] {
        // SAFETY: valid for 'a.
        unsafe { bytes(self.0.payload, self.0.payload_len) }
    }
    /// The headers in publish order, as `(name, value)` pairs.
    pub fn headers(&self) -> Headers<'a> {
        let all: &'a [Header<'a>] = if self.0.header_count == 0 || self.0.headers.is_null() {
            &[]
        } else {
            // SAFETY: header_count headers, valid for 'a; Header is repr(transparent).
            unsafe {
                std::slice::from_raw_parts(self.0.headers.cast::<Header<'a>>(), self.0.header_count)
            }
        };
        Headers(all.iter())
    }
    /// The broker clock (ns) when it was published.
    pub fn timestamp_ns(&self) -> i64 {
        self.0.timestamp_ns
    }
    /// Messages of this partition the group lost (bounded retention, max age) since the one it
    /// was handed before this.
    pub fn lost(&self) -> i64 {
        self.0.lost
    }
    /// Where it came from, if it was dead-lettered into this topic.
    pub fn dead_letter(&self) -> Option<DeadLetter<'a>> {
        if self.0.dead_letter.is_null() {
            return None;
        }
        // SAFETY: valid for 'a, its NUL-terminated strings too.
        let d = unsafe { &*self.0.dead_letter };
        let s = |p: *const std::ffi::c_char| {
            if p.is_null() {
                ""
            } else {
                // SAFETY: NUL-terminated names, valid for 'a.
                unsafe { CStr::from_ptr(p) }.to_str().unwrap_or("")
            }
        };
        Some(DeadLetter {
            topic: s(d.topic),
            group: s(d.group),
            partition: d.partition,
            offset: d.offset,
            delivery_count: d.delivery_count,
        })
    }

    /// An owned copy that outlives the batch (one allocation for key, payload and headers).
    pub fn detach(&self) -> OwnedMessage {
        OwnedMessage {
            partition: self.partition(),
            offset: self.offset(),
            delivery_count: self.delivery_count(),
            key: self.key().map(<[u8]>::to_vec),
            payload: self.payload().to_vec(),
            headers: self
                .headers()
                .map(|(n, v)| (n.to_vec(), v.to_vec()))
                .collect(),
            timestamp_ns: self.timestamp_ns(),
            lost: self.lost(),
            dead_letter: self.dead_letter().map(|d| OwnedDeadLetter {
                topic: d.topic.to_owned(),
                group: d.group.to_owned(),
                partition: d.partition,
                offset: d.offset,
                delivery_count: d.delivery_count,
            }),
        }
    }
}

impl fmt::Debug for Message<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Message")
            .field("partition", &self.partition())
            .field("offset", &self.offset())
            .field("delivery_count", &self.delivery_count())
            .field("key", &self.key().map(String::from_utf8_lossy))
            .field("payload", &String::from_utf8_lossy(self.payload()))
            .finish()
    }
}

/// The headers of a [`Message`]: an iterator of `(name, value)`.
#[derive(Clone)]
pub struct Headers<'a>(std::slice::Iter<'a, Header<'a>>);

impl<'a> Iterator for Headers<'a> {
    type Item = (&'a [u8], &'a [u8]);
    fn next(&mut self) -> Option<Self::Item> {
        self.0.next().map(|h| (h.name(), h.value()))
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.0.size_hint()
    }
}

impl ExactSizeIterator for Headers<'_> {}

/// Where an owned dead letter came from (see [`DeadLetter`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OwnedDeadLetter {
    /// The topic it was first published to.
    pub topic: String,
    /// The group that gave up on it.
    pub group: String,
    /// Its partition there.
    pub partition: i32,
    /// Its offset there.
    pub offset: i64,
    /// How often that group had been handed it.
    pub delivery_count: u32,
}

/// An owned copy of a [`Message`], independent of the log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OwnedMessage {
    /// See [`Message::partition`].
    pub partition: i32,
    /// See [`Message::offset`].
    pub offset: i64,
    /// See [`Message::delivery_count`].
    pub delivery_count: u32,
    /// See [`Message::key`].
    pub key: Option<Vec<u8>>,
    /// See [`Message::payload`].
    pub payload: Vec<u8>,
    /// See [`Message::headers`].
    pub headers: Vec<(Vec<u8>, Vec<u8>)>,
    /// See [`Message::timestamp_ns`].
    pub timestamp_ns: i64,
    /// See [`Message::lost`].
    pub lost: i64,
    /// See [`Message::dead_letter`].
    pub dead_letter: Option<OwnedDeadLetter>,
}
