//! A publish and a batch publish as futures (`mq_topic_publish_async`,
//! `mq_topic_publish_batch_async`): the records are copied when the future is made, and its one
//! call ([`BrokerCall`]) starts when it is first polled.
use std::ffi::{c_void, CString};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use mq_sys as sys;

use super::call::{BrokerCall, CallData};
use crate::cancel::CancelToken;
use crate::error::{BatchError, Result};
use crate::message::{Published, Record};
use crate::name;
use crate::wait::Wait;
use crate::Broker;

#[derive(Default)]
struct PublishData {
    topic: CString,
    key: Option<Vec<u8>>,
    payload: Vec<u8>,
    /// Header names and values, back to back; `headers` points into it.
    header_bytes: Vec<u8>,
    headers: Vec<sys::mq_header>,
    /// The record's delay: when not 0 the call is a batch of one (the C API's single publish
    /// has no delay), its record and result in `single`.
    delay_ms: i64,
    single: Option<(sys::mq_record, sys::mq_publish_result)>,
    partition: i32,
    offset: i64,
}

// SAFETY: the raw pointers of `headers` point into `header_bytes`, heap memory of the same value.
unsafe impl Send for PublishData {}
impl CallData for PublishData {}

/// Copies headers into one buffer and makes `mq_header`s pointing into it.
fn own_headers<'a>(
    pairs: impl Iterator<Item = (&'a [u8], &'a [u8])> + Clone,
    bytes: &mut Vec<u8>,
    out: &mut Vec<sys::mq_header>,
) {
    let total: usize = pairs.clone().map(|(n, v)| n.len() + v.len()).sum();
    bytes.reserve_exact(total);
    let start = bytes.len();
    let mut spans = Vec::new();
    for (n, v) in pairs {
        let at = bytes.len();
        bytes.extend_from_slice(n);
        bytes.extend_from_slice(v);
        spans.push((at, n.len(), v.len()));
    }
    debug_assert!(start + total == bytes.len());
    let base = bytes.as_ptr();
    out.extend(spans.into_iter().map(|(at, nl, vl)| sys::mq_header {
        // SAFETY: in bounds of `bytes`, which is not resized any more.
        name: unsafe { base.add(at) }.cast(),
        name_len: nl,
        value: unsafe { base.add(at + nl) }.cast(),
        value_len: vl,
    }));
}

/// The publish of `d`: its asynchronous form with `done` and `user`, else its blocking form.
///
/// # Safety
/// `b` is a live broker; `d` is valid and not otherwise used until the call has ended (for the
/// asynchronous form, until `done`).
unsafe fn publish_call(
    b: *mut sys::mq_broker,
    d: *mut PublishData,
    ms: i64,
    cancel: *mut sys::mq_cancel,
    done: Option<(sys::mq_done_fn, *mut c_void)>,
) -> sys::mq_status {
    // SAFETY: the caller's promise.
    unsafe {
        let d = &mut *d;
        let (key, key_len) = match &d.key {
            Some(k) => (k.as_ptr().cast::<c_void>(), k.len()),
            None => (std::ptr::null(), 0),
        };
        let headers = if d.headers.is_empty() {
            std::ptr::null()
        } else {
            d.headers.as_ptr()
        };
        let (t, p, pl, hl) = (
            d.topic.as_ptr(),
            d.payload.as_ptr().cast(),
            d.payload.len(),
            d.headers.len(),
        );
        if d.delay_ms != 0 {
            // A batch of one: the record and its result live in `d` (which stays put while the
            // call is pending).
            let (rec, res) = d.single.insert((
                sys::mq_record {
                    key,
                    key_len,
                    payload: p,
                    payload_len: pl,
                    headers,
                    header_count: hl,
                    delay_ms: d.delay_ms,
                },
                UNWRITTEN,
            ));
            let (rs, res_size) = (
                std::mem::size_of::<sys::mq_record>(),
                std::mem::size_of::<sys::mq_publish_result>(),
            );
            let published = std::ptr::null_mut();
            return match done {
                Some((done, user)) => sys::mq_topic_publish_batch_async(
                    b, t, rec, rs, 1, ms, cancel, res, res_size, published, done, user,
                ),
                None => sys::mq_topic_publish_batch(
                    b, t, rec, rs, 1, ms, cancel, res, res_size, published,
                ),
            };
        }
        match done {
            Some((done, user)) => sys::mq_topic_publish_async(
                b,
                t,
                key,
                key_len,
                p,
                pl,
                headers,
                hl,
                ms,
                cancel,
                &mut d.partition,
                &mut d.offset,
                done,
                user,
            ),
            None => sys::mq_topic_publish(
                b,
                t,
                key,
                key_len,
                p,
                pl,
                headers,
                hl,
                ms,
                cancel,
                &mut d.partition,
                &mut d.offset,
            ),
        }
    }
}

struct PublishFuture(BrokerCall<PublishData>);

impl Future for PublishFuture {
    type Output = Result<Published>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<Published>> {
        self.get_mut().0.poll(cx, Err, |r, d| {
            r.map(|()| match &d.single {
                Some((_, res)) => Published {
                    partition: res.partition,
                    offset: res.offset,
                },
                None => Published {
                    partition: d.partition,
                    offset: d.offset,
                },
            })
        })
    }
}

#[derive(Default)]
struct BatchData {
    topic: CString,
    /// Every key, payload, header name and value, back to back; the records point into it.
    bytes: Vec<u8>,
    headers: Vec<sys::mq_header>,
    records: Vec<sys::mq_record>,
    results: Vec<sys::mq_publish_result>,
    published: usize,
}

// SAFETY: the raw pointers of `headers` and `records` point into `bytes` and `headers`, heap
// memory of the same value.
unsafe impl Send for BatchData {}
impl CallData for BatchData {}

const UNWRITTEN: sys::mq_publish_result = sys::mq_publish_result {
    partition: i32::MIN,
    offset: i64::MIN,
};

impl BatchData {
    fn new(topic: &str, records: &[Record<'_>]) -> Result<BatchData> {
        let mut total = 0usize;
        let mut header_count = 0usize;
        for r in records {
            total += r.key_bytes().map_or(0, <[u8]>::len) + r.payload_bytes().len();
            for (n, v) in r.header_pairs() {
                total += n.len() + v.len();
                header_count += 1;
            }
        }
        let mut d = BatchData {
            topic: name::owned(topic)?,
            bytes: Vec::with_capacity(total),
            headers: Vec::with_capacity(header_count),
            records: Vec::with_capacity(records.len()),
            results: vec![UNWRITTEN; records.len()],
            published: 0,
        };
        // Offsets first (the buffers are not resized past their capacity, but pointers are
        // taken once everything is in).
        struct Spans {
            key: Option<(usize, usize)>,
            payload: (usize, usize),
            headers: (usize, usize),
            delay_ms: i64,
        }
        let mut spans = Vec::with_capacity(records.len());
        let mut hspans = Vec::with_capacity(header_count);
        for r in records {
            let mut put = |b: &[u8]| {
                let at = d.bytes.len();
                d.bytes.extend_from_slice(b);
                (at, b.len())
            };
            let key = r.key_bytes().map(&mut put);
            let payload = put(r.payload_bytes());
            let h0 = hspans.len();
            for (n, v) in r.header_pairs() {
                let (na, nl) = put(n);
                let (va, vl) = put(v);
                hspans.push((na, nl, va, vl));
            }
            spans.push(Spans {
                key,
                payload,
                headers: (h0, hspans.len() - h0),
                delay_ms: r.delay_millis(),
            });
        }
        let base = d.bytes.as_ptr();
        // SAFETY (the adds): every span lies inside `bytes`.
        let at = |o: usize| unsafe { base.add(o) }.cast::<c_void>();
        d.headers
            .extend(hspans.iter().map(|&(na, nl, va, vl)| sys::mq_header {
                name: at(na),
                name_len: nl,
                value: at(va),
                value_len: vl,
            }));
        let hbase = d.headers.as_ptr();
        d.records.extend(spans.iter().map(|s| sys::mq_record {
            key: s.key.map_or(std::ptr::null(), |(o, _)| at(o)),
            key_len: s.key.map_or(0, |(_, l)| l),
            payload: at(s.payload.0),
            payload_len: s.payload.1,
            // SAFETY: the record's headers lie inside `headers`.
            headers: if s.headers.1 == 0 {
                std::ptr::null()
            } else {
                unsafe { hbase.add(s.headers.0) }
            },
            header_count: s.headers.1,
            delay_ms: s.delay_ms,
        }));
        Ok(d)
    }
}

/// The batch publish of `d`: its asynchronous form with `done` and `user`, else its blocking
/// form.
///
/// # Safety
/// As [`publish_call`].
unsafe fn batch_call(
    b: *mut sys::mq_broker,
    d: *mut BatchData,
    ms: i64,
    cancel: *mut sys::mq_cancel,
    done: Option<(sys::mq_done_fn, *mut c_void)>,
) -> sys::mq_status {
    // SAFETY: the caller's promise.
    unsafe {
        let d = &mut *d;
        let results = if d.results.is_empty() {
            std::ptr::null_mut()
        } else {
            d.results.as_mut_ptr()
        };
        let (t, r, rs, n) = (
            d.topic.as_ptr(),
            d.records.as_ptr(),
            std::mem::size_of::<sys::mq_record>(),
            d.records.len(),
        );
        let res_size = std::mem::size_of::<sys::mq_publish_result>();
        match done {
            Some((done, user)) => sys::mq_topic_publish_batch_async(
                b,
                t,
                r,
                rs,
                n,
                ms,
                cancel,
                results,
                res_size,
                &mut d.published,
                done,
                user,
            ),
            None => sys::mq_topic_publish_batch(
                b,
                t,
                r,
                rs,
                n,
                ms,
                cancel,
                results,
                res_size,
                &mut d.published,
            ),
        }
    }
}

struct BatchFuture(BrokerCall<BatchData>);

impl Future for BatchFuture {
    type Output = (Result<(), BatchError>, Vec<Published>);

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let refused = |error| {
            (
                Err(BatchError {
                    published: 0,
                    error,
                }),
                Vec::new(),
            )
        };
        self.get_mut().0.poll(cx, refused, |r, d| {
            let results = if d.results.iter().all(|r| r.partition != i32::MIN) {
                d.results
                    .iter()
                    .map(|r| Published {
                        partition: r.partition,
                        offset: r.offset,
                    })
                    .collect()
            } else {
                Vec::new()
            };
            let published = d.published;
            (r.map_err(|error| BatchError { published, error }), results)
        })
    }
}

impl Broker {
    /// [`publish`](Broker::publish) as a future, on the library's asynchronous publish (a
    /// record with a [`delay`](Record::delay) on its asynchronous batch publish, as one record):
    /// the
    /// record and the topic's name are copied when this is called (the future borrows nothing,
    /// so it can be handed to `tokio::spawn`), the call starts when the future is first
    /// polled, and dropping the future while it waits for room cancels it (nothing appended,
    /// unless it had completed).
    ///
    /// A pending call holds no thread: it is parked in the library and completed by the
    /// broker's one completer thread (started by its first pending call, shared by all), which
    /// wakes the task. Any executor runs these futures; they are `Send`.
    /// On the Kafka backend, which has no asynchronous calls, the blocking form runs on a
    /// thread of its own instead (a thread per pending call there).
    pub fn publish_async(
        &self,
        topic: &str,
        record: Record<'_>,
        wait: impl Into<Wait>,
    ) -> impl Future<Output = Result<Published>> + Send + 'static {
        self.publish_future(topic, &record, wait.into(), None)
    }

    /// [`publish_async`](Self::publish_async) that `token` can interrupt
    /// ([`Error::Cancelled`](crate::Error::Cancelled)); dropping the future while its call is
    /// pending triggers `token`.
    pub fn publish_async_cancellable(
        &self,
        topic: &str,
        record: Record<'_>,
        wait: impl Into<Wait>,
        token: &CancelToken,
    ) -> impl Future<Output = Result<Published>> + Send + 'static {
        self.publish_future(topic, &record, wait.into(), Some(token))
    }

    fn publish_future(
        &self,
        topic: &str,
        record: &Record<'_>,
        wait: Wait,
        token: Option<&CancelToken>,
    ) -> PublishFuture {
        let data = name::owned(topic).map(|topic| {
            let mut d = PublishData {
                topic,
                key: record.key_bytes().map(<[u8]>::to_vec),
                payload: record.payload_bytes().to_vec(),
                delay_ms: record.delay_millis(),
                ..PublishData::default()
            };
            own_headers(record.header_pairs(), &mut d.header_bytes, &mut d.headers);
            d
        });
        PublishFuture(BrokerCall::new(
            self.raw().clone(),
            data,
            wait,
            token,
            publish_call,
            "publish",
        ))
    }

    /// [`publish_batch`](Broker::publish_batch) as a future (see
    /// [`publish_async`](Self::publish_async)): the records are copied when this is called.
    /// Returns where each record went.
    pub fn publish_batch_async(
        &self,
        topic: &str,
        records: &[Record<'_>],
        wait: impl Into<Wait>,
    ) -> impl Future<Output = Result<Vec<Published>, BatchError>> + Send + 'static {
        let f = self.batch_future(topic, records, wait.into(), None);
        async move {
            let (r, results) = f.await;
            r.map(|()| results)
        }
    }

    /// [`publish_batch_with`](Broker::publish_batch_with) as a future: with an optional cancel
    /// token (triggered when the future is dropped while its call is pending), it ends with
    /// the outcome and where each record went (one entry per record, offset -1 where not
    /// appended), or no entries when the batch was refused as a whole.
    pub fn publish_batch_async_with(
        &self,
        topic: &str,
        records: &[Record<'_>],
        wait: impl Into<Wait>,
        token: Option<&CancelToken>,
    ) -> impl Future<Output = (Result<(), BatchError>, Vec<Published>)> + Send + 'static {
        self.batch_future(topic, records, wait.into(), token)
    }

    fn batch_future(
        &self,
        topic: &str,
        records: &[Record<'_>],
        wait: Wait,
        token: Option<&CancelToken>,
    ) -> BatchFuture {
        BatchFuture(BrokerCall::new(
            self.raw().clone(),
            BatchData::new(topic, records),
            wait,
            token,
            batch_call,
            "batch",
        ))
    }
}

// Every future of this module is `Send` (so `tokio::spawn` takes it), checked when the crate
// compiles; the signatures say `+ Send` too.
const _: fn() = || {
    fn assert_send<T: Send>() {}
    assert_send::<PublishFuture>();
    assert_send::<BatchFuture>();
    assert_send::<Result<Published>>();
};
