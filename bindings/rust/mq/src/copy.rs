//! The copying poll's buffer (mq.h, "the copying poll", layout 1): one per consumer, member
//! batch or async poll, reused from poll to poll.
//!
//! The library copies the messages into it under the lock that keeps them alive, so what a
//! batch reads is the batch's own memory: no ack, seek, unsubscribe, deletion or rebalance by
//! anyone can end it. After the call the layout is turned in place into what
//! [`Message`](crate::Message) reads (`mq_message` views into the buffer): header entries are
//! rewritten as `mq_header`s where they lie, and only dead letters (rare) have their names
//! copied once more, to be NUL-terminated as `mq_dead_letter` has them.
use std::ffi::c_void;

use mq_sys as sys;

use crate::error::{check, Error, Result};

const HEADER: usize = std::mem::size_of::<sys::mq_copy_header>();
const ENTRY: usize = std::mem::size_of::<sys::mq_copied_message>();
/// Polls grow the buffer on their own up to this (when it, not the log, cut a batch short);
/// beyond it a batch holds what fits. A single message larger than it still gets its room.
const ADAPTIVE_LIMIT: usize = 16 << 20;

// The layout's header and dead-letter entries are rewritten in place into the C structs the
// views use; each must fit where its entry lies (on 32-bit targets they are smaller).
const _: () = assert!(
    std::mem::size_of::<sys::mq_header>() <= std::mem::size_of::<sys::mq_copied_header>()
        && std::mem::align_of::<sys::mq_header>() <= 8
        && std::mem::size_of::<sys::mq_dead_letter>()
            <= std::mem::size_of::<sys::mq_copied_dead_letter>()
        && std::mem::align_of::<sys::mq_dead_letter>() <= 8
);

/// A copying poll's destination and the views of what it copied.
#[derive(Default)]
pub(crate) struct Copies {
    /// The buffer the library writes (u64 words: 8-byte aligned, as it requires).
    buf: Vec<u64>,
    /// Views of the copied messages, pointing into `buf`.
    msgs: Vec<sys::mq_message>,
    /// The dead letters' topic and group names, NUL-terminated.
    names: Vec<u8>,
    /// The size the next poll grows the buffer to before it starts (growing after a poll would
    /// move the bytes its views point to).
    grow: usize,
}

// SAFETY: the raw pointers in `msgs` point into `buf` and `names`, heap memory owned by the
// same value (a move does not move it); they are only read through a batch borrowing it.
unsafe impl Send for Copies {}
unsafe impl Sync for Copies {}

/// What a copying poll is given: `(first, buf, cap, count_out, needed_out)`. `first` is false
/// on a retry after `MQ_ERR_TOO_LARGE`, which must poll without acking again (the first
/// call's ack stands).
pub(crate) type CopyCall<'f> =
    dyn FnMut(bool, *mut c_void, usize, &mut usize, &mut usize) -> sys::mq_status + 'f;

impl Copies {
    /// The views of the last poll's messages.
    pub(crate) fn messages(&self) -> &[sys::mq_message] {
        &self.msgs
    }

    fn cap(&self) -> usize {
        self.buf.len() * 8
    }

    fn grow_to(&mut self, bytes: usize) {
        let words = bytes.div_ceil(8);
        if words > self.buf.len() {
            self.buf.resize(words, 0);
        }
    }

    /// Runs a copying poll of up to `max` messages into the buffer (growing it and polling
    /// again on `MQ_ERR_TOO_LARGE`) and makes the views; returns how many it handed out.
    pub(crate) fn poll(&mut self, max: usize, call: &mut CopyCall<'_>) -> Result<usize> {
        self.begin(max);
        let mut first = true;
        loop {
            let (mut n, mut needed) = (0usize, 0usize);
            let (buf, cap) = self.target();
            let r = check(call(first, buf, cap, &mut n, &mut needed));
            if let Some(done) = self.end(r, n, needed, cap, max) {
                return done;
            }
            first = false;
        }
    }

    /// Readies the buffer for a poll of up to `max` messages (the views of the last one end).
    pub(crate) fn begin(&mut self, max: usize) {
        self.msgs.clear();
        if self.buf.is_empty() {
            // A first guess (small messages); the polls correct it.
            self.grow_to(HEADER + max.clamp(1, 1024) * (ENTRY + 128));
        }
        let grow = std::mem::take(&mut self.grow);
        self.grow_to(grow);
    }

    /// The partition of the first of `n` messages a copying poll just wrote (its views not
    /// made), if any.
    pub(crate) fn first_partition(&self, n: usize) -> Option<i32> {
        if n == 0 || self.cap() < HEADER + ENTRY {
            return None;
        }
        // SAFETY: a poll that wrote `n` > 0 messages wrote their entries after the header, in
        // the buffer (8-byte aligned words).
        let e = unsafe {
            std::ptr::read(
                self.buf
                    .as_ptr()
                    .cast::<u8>()
                    .add(HEADER)
                    .cast::<sys::mq_copied_message>(),
            )
        };
        Some(e.partition)
    }

    /// Where a copying poll writes: the buffer and its capacity in bytes.
    pub(crate) fn target(&mut self) -> (*mut c_void, usize) {
        (self.buf.as_mut_ptr().cast(), self.cap())
    }

    /// Takes the outcome `r` of a copying poll into [`target`](Self::target) (`cap` bytes) that
    /// wrote `n` and `needed`: the number of messages (their views made), its error, or `None`
    /// when the buffer was too small and has grown, to poll again (without an ack: the first
    /// call's ack stands).
    pub(crate) fn end(
        &mut self,
        r: Result<()>,
        n: usize,
        needed: usize,
        cap: usize,
        max: usize,
    ) -> Option<Result<usize>> {
        match r {
            Err(Error::TooLarge(_)) if needed > cap => {
                self.grow_to(needed.max(cap.saturating_mul(2).min(ADAPTIVE_LIMIT)));
                return None;
            }
            Err(e) => return Some(Err(e)),
            Ok(()) => {}
        }
        // SAFETY: the library wrote layout 1 for `n` messages into the buffer.
        if let Err(e) = unsafe { self.parse(n) } {
            return Some(Err(e));
        }
        if n > 0 && n < max && cap < ADAPTIVE_LIMIT {
            // Another message of the batch's average size would not have fitted: the
            // buffer may have cut the batch short; make room for `max` of them next time
            // (not now: the views just made point into the buffer).
            let avg = (needed.saturating_sub(HEADER) / n).max(ENTRY);
            if cap - needed.min(cap) < avg {
                let want = max.saturating_mul(avg);
                self.grow = want
                    .saturating_add(want / 4)
                    .saturating_add(HEADER)
                    .min(ADAPTIVE_LIMIT);
            }
        }
        Some(Ok(n))
    }

    /// Turns the layout of `n` copied messages into `mq_message` views into the buffer.
    ///
    /// # Safety
    /// The buffer holds layout 1 as a copying poll that returned `n` wrote it.
    unsafe fn parse(&mut self, n: usize) -> Result<()> {
        let base = self.buf.as_mut_ptr().cast::<u8>();
        // SAFETY: the header is at 0 (the buffer is at least HEADER bytes: the call checked).
        let head = unsafe { std::ptr::read(base.cast::<sys::mq_copy_header>()) };
        if head.layout != sys::MQ_COPY_LAYOUT_1 || head.count as usize != n {
            return Err(Error::Internal(format!(
                "a copying poll wrote layout {} with {} messages; expected layout 1 with {n}",
                head.layout, head.count
            )));
        }
        let at = |pos: u64| -> *const c_void {
            if pos == sys::MQ_COPY_ABSENT {
                std::ptr::null()
            } else {
                // SAFETY: positions the library wrote lie inside the buffer.
                unsafe { base.add(pos as usize) }.cast()
            }
        };
        let entries = unsafe { base.add(HEADER) }.cast::<sys::mq_copied_message>();
        let mut dead = 0usize;
        for i in 0..n {
            // SAFETY: entry i of n, 8-byte aligned (the header is 16 bytes, entries 96).
            let e = unsafe { std::ptr::read(entries.add(i)) };
            let headers = if e.header_count == 0 || e.headers_at == sys::MQ_COPY_ABSENT {
                std::ptr::null()
            } else {
                // SAFETY: header_count entries at headers_at.
                unsafe { headers_in_place(base, e.headers_at, e.header_count) }
            };
            if e.dead_letter_at != sys::MQ_COPY_ABSENT {
                dead += 1;
            }
            self.msgs.push(sys::mq_message {
                partition: e.partition,
                delivery_count: e.delivery_count,
                offset: e.offset,
                key: at(e.key_at),
                key_len: e.key_len as usize,
                // A payload is never absent; an empty one may have no position.
                payload: at(e.payload_at),
                payload_len: e.payload_len as usize,
                headers,
                header_count: if headers.is_null() {
                    0
                } else {
                    e.header_count as usize
                },
                timestamp_ns: e.timestamp_ns,
                lost: e.lost,
                // Filled in below, once `names` has its room.
                dead_letter: at(e.dead_letter_at).cast(),
            });
        }
        if dead > 0 {
            // SAFETY: the dead-letter positions just stored are the library's.
            unsafe { self.dead_letters_in_place() };
        }
        Ok(())
    }

    /// Rewrites each copied dead letter as an `mq_dead_letter` whose names are NUL-terminated
    /// copies in `names` (the layout's are not terminated; `mq_dead_letter`'s are).
    ///
    /// # Safety
    /// Every non-null `dead_letter` of `msgs` points to an `mq_copied_dead_letter` in `buf`.
    unsafe fn dead_letters_in_place(&mut self) {
        let base = self.buf.as_ptr().cast::<u8>();
        let copied = |m: &sys::mq_message| {
            // SAFETY: the caller's promise.
            unsafe { std::ptr::read(m.dead_letter.cast::<sys::mq_copied_dead_letter>()) }
        };
        let room: usize = self
            .msgs
            .iter()
            .filter(|m| !m.dead_letter.is_null())
            .map(|m| {
                let d = copied(m);
                d.topic_len as usize + d.group_len as usize + 2
            })
            .sum();
        self.names.clear();
        self.names.reserve(room);
        let names = &mut self.names;
        // No push below reallocates (reserved above), so the pointers taken stay valid.
        let mut put = |at: u64, len: u64| -> *const std::ffi::c_char {
            let start = names.len();
            // SAFETY: `len` bytes at `at` inside the buffer.
            names.extend_from_slice(unsafe {
                std::slice::from_raw_parts(base.add(at as usize), len as usize)
            });
            names.push(0);
            // SAFETY: within the reserved allocation.
            unsafe { names.as_ptr().add(start) }.cast()
        };
        for m in self.msgs.iter_mut().filter(|m| !m.dead_letter.is_null()) {
            let d = copied(m);
            let dl = sys::mq_dead_letter {
                topic: put(d.topic_at, d.topic_len),
                group: put(d.group_at, d.group_len),
                partition: d.partition,
                delivery_count: d.delivery_count,
                offset: d.offset,
            };
            // SAFETY: no larger than the entry it replaces (asserted above), which was read.
            unsafe { std::ptr::write(m.dead_letter as *mut sys::mq_dead_letter, dl) };
        }
    }
}

/// Rewrites the `count` `mq_copied_header`s at position `at` of the buffer at `base` as
/// `mq_header`s from the same place on; returns where they start.
///
/// # Safety
/// `base` is the buffer a copying poll wrote, with `count` header entries at `at`.
unsafe fn headers_in_place(base: *mut u8, at: u64, count: u64) -> *const sys::mq_header {
    // SAFETY (all below): entry i is read before header i is written; header i lies at or
    // before entry i (no larger), so it overwrites only entries already read.
    let copied = unsafe { base.add(at as usize) }.cast::<sys::mq_copied_header>();
    let out = copied.cast::<sys::mq_header>();
    let to = |pos: u64| -> *const c_void {
        if pos == sys::MQ_COPY_ABSENT {
            std::ptr::null()
        } else {
            unsafe { base.add(pos as usize) }.cast()
        }
    };
    for i in 0..count as usize {
        let h = unsafe { std::ptr::read(copied.add(i)) };
        let v = sys::mq_header {
            name: to(h.name_at),
            name_len: h.name_len as usize,
            value: to(h.value_at),
            value_len: h.value_len as usize,
        };
        unsafe { std::ptr::write(out.add(i), v) };
    }
    out
}
