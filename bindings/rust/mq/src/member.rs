//! Live groups: members that join, get partitions assigned, and poll what they own.
use std::ffi::{c_char, c_void, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mq_sys as sys;

use crate::broker::{Broker, Raw};
use crate::cancel::{self, CancelToken};
use crate::copy::Copies;
use crate::error::{check, Error, Result};
use crate::future::member::BlockingCalls;
use crate::message::Message;
use crate::name;
use crate::report::{panic_text, report, CallbackError, Hook};
use crate::wait::{duration_ms, Wait};

/// An assignment strategy: for each partition `p` in `0..partitions`, write to `owners[p]` the
/// index (into `members`, listed in join order) of the member that owns it. An index out of
/// range leaves the partition unowned until the next rebalance.
///
/// It runs with the group's membership lock held, on whichever thread caused the rebalance:
/// keep it fast and pure, and do not call into mq from it. A panic is caught, reported, and
/// the rebalance falls back to round-robin. The group uses the strategy of its first member;
/// the broker keeps that strategy alive as long as it lives.
///
/// Any `Fn(i32, &[&str], &mut [i32]) + Send + Sync` is an assignor:
///
/// ```
/// // every partition to the member that joined last
/// let last = |_partitions: i32, members: &[&str], owners: &mut [i32]| {
///     owners.fill(members.len() as i32 - 1)
/// };
/// let opts = mq::MemberOptions::new().assignor(last);
/// # let _ = opts;
/// ```
pub trait Assignor: Send + Sync + 'static {
    /// Fills `owners` (one entry per partition).
    fn assign(&self, partitions: i32, members: &[&str], owners: &mut [i32]);
}

impl<F> Assignor for F
where
    F: Fn(i32, &[&str], &mut [i32]) + Send + Sync + 'static,
{
    fn assign(&self, partitions: i32, members: &[&str], owners: &mut [i32]) {
        self(partitions, members, owners)
    }
}

/// What a rebalance callback is told: the new generation, and the member's handle to fetch
/// its assignment with.
pub struct Rebalance<'a> {
    member: *mut sys::mq_member,
    generation: i64,
    _life: std::marker::PhantomData<&'a ()>,
}

impl Rebalance<'_> {
    /// The group's new generation.
    pub fn generation(&self) -> i64 {
        self.generation
    }
    /// The member's id.
    pub fn member_id(&self) -> &str {
        member_id(self.member)
    }
    /// Fetches the member's assignment now (marking the generation as seen).
    pub fn assignment(&self) -> Result<Assignment> {
        assignment(self.member)
    }
}

type RebalanceFn = dyn Fn(&Rebalance<'_>) + Send + Sync;

/// Options of [`Broker::join`].
#[derive(Clone, Default)]
pub struct MemberOptions {
    id: Option<String>,
    session_timeout_ms: Option<i64>,
    assignor: Option<Arc<dyn Assignor>>,
    on_rebalance: Option<Arc<RebalanceFn>>,
    on_error: Option<Hook>,
}

impl std::fmt::Debug for MemberOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemberOptions")
            .field("id", &self.id)
            .field("session_timeout_ms", &self.session_timeout_ms)
            .field("assignor", &self.assignor.is_some())
            .field("on_rebalance", &self.on_rebalance.is_some())
            .finish()
    }
}

impl MemberOptions {
    /// Defaults: a generated id (`<group>-<n>`), 10 s session timeout, round-robin.
    pub fn new() -> MemberOptions {
        MemberOptions::default()
    }
    /// The member's id (a legal name, unique in the group).
    pub fn id(mut self, id: &str) -> Self {
        self.id = Some(id.to_owned());
        self
    }
    /// A member that makes no call for this long is removed as if it had left.
    pub fn session_timeout(mut self, d: Duration) -> Self {
        self.session_timeout_ms = Some(duration_ms(d));
        self
    }
    /// [`session_timeout`](Self::session_timeout) in milliseconds, passed through unchecked.
    pub fn session_timeout_ms(mut self, ms: i64) -> Self {
        self.session_timeout_ms = Some(ms);
        self
    }
    /// The assignment strategy (the group uses its first member's); default round-robin.
    pub fn assignor(mut self, a: impl Assignor) -> Self {
        self.assignor = Some(Arc::new(a));
        self
    }
    /// The strategy as a shared trait object.
    pub fn assignor_arc(mut self, a: Arc<dyn Assignor>) -> Self {
        self.assignor = Some(a);
        self
    }
    /// Called after every rebalance of the group (its own join included, before
    /// [`Broker::join`] returns), on the thread that caused it, with no library lock held.
    /// It may fetch the assignment; a panic is caught and reported.
    pub fn on_rebalance(mut self, f: impl Fn(&Rebalance<'_>) + Send + Sync + 'static) -> Self {
        self.on_rebalance = Some(Arc::new(f));
        self
    }
    /// Where panics of the assignor and the rebalance callback are reported; default stderr.
    pub fn on_error(mut self, f: impl Fn(&CallbackError) + Send + Sync + 'static) -> Self {
        self.on_error = Some(Arc::new(f));
        self
    }
}

/// A member's partitions in one generation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Assignment {
    /// The group's generation.
    pub generation: i64,
    /// The partitions the member owns, in increasing order.
    pub partitions: Vec<i32>,
}

fn member_id<'a>(m: *mut sys::mq_member) -> &'a str {
    // SAFETY: valid while the member is open; "" for NULL.
    unsafe { CStr::from_ptr(sys::mq_member_id(m)) }
        .to_str()
        .unwrap_or("")
}

fn assignment(m: *mut sys::mq_member) -> Result<Assignment> {
    let mut generation = 0i64;
    let mut count = 0usize;
    let mut parts = vec![0i32; 16];
    loop {
        // SAFETY: live member; `parts` has room for its length.
        check(unsafe {
            sys::mq_member_get_assignment(
                m,
                &mut generation,
                parts.as_mut_ptr(),
                parts.len(),
                &mut count,
            )
        })?;
        if count <= parts.len() {
            parts.truncate(count);
            return Ok(Assignment {
                generation,
                partitions: parts,
            });
        }
        parts.resize(count, 0);
    }
}

struct AssignorState {
    assignor: Arc<dyn Assignor>,
    on_error: Option<Hook>,
}

extern "C" fn call_assignor(
    user: *mut c_void,
    partitions: i32,
    ids: *const *const c_char,
    count: i32,
    owner_out: *mut i32,
) {
    // SAFETY: `user` is an AssignorState the broker keeps alive; the arrays have `count` ids
    // and `partitions` owners.
    let state = unsafe { &*(user as *const AssignorState) };
    let owners = unsafe { std::slice::from_raw_parts_mut(owner_out, partitions.max(0) as usize) };
    let r = catch_unwind(AssertUnwindSafe(|| {
        let ids: Vec<&str> = (0..count.max(0) as usize)
            // SAFETY: NUL-terminated ids, valid during the call.
            .map(|i| {
                unsafe { CStr::from_ptr(*ids.add(i)) }
                    .to_str()
                    .unwrap_or("")
            })
            .collect();
        state.assignor.assign(partitions, &ids, owners);
    }));
    if let Err(p) = r {
        for (i, o) in owners.iter_mut().enumerate() {
            *o = (i as i32) % count.max(1);
        }
        report(
            state.on_error.as_ref(),
            CallbackError::AssignorPanic {
                panic: panic_text(&*p),
            },
        );
    }
}

struct RebalanceState {
    f: Arc<RebalanceFn>,
    on_error: Option<Hook>,
}

extern "C" fn call_rebalance(user: *mut c_void, member: *mut sys::mq_member, generation: i64) {
    // SAFETY: `user` is the RebalanceState of this member, freed only after mq_member_close
    // (which waits for a running callback).
    let state = unsafe { &*(user as *const RebalanceState) };
    let rb = Rebalance {
        member,
        generation,
        _life: std::marker::PhantomData,
    };
    if let Err(p) = catch_unwind(AssertUnwindSafe(|| (state.f)(&rb))) {
        report(
            state.on_error.as_ref(),
            CallbackError::RebalancePanic {
                member: member_id(member).to_owned(),
                generation,
                panic: panic_text(&*p),
            },
        );
    }
}

/// A member of a group: it owns the partitions the group assigns it and polls them.
///
/// Member polls **copy** messages (the library's copying poll) into buffers the member reuses
/// (no allocation in steady state), so a rebalance that moves a partition to another member,
/// whose ack frees the log, ends nothing a batch reads. Every method takes `&self`: a member may be shared between threads
/// (one blocked in [`poll`](Member::poll) while another fetches the assignment).
///
/// Dropping the member (or [`close`](Member::close)) leaves the group; what it had in flight
/// goes to the new owners.
///
/// Its polls have futures too ([`poll_async`](Member::poll_async) and the others, library
/// 1.4), which borrow the member like the batches they return: the member cannot be closed or
/// dropped under a pending one.
///
/// ```
/// # fn main() -> mq::Result<()> {
/// let broker = mq::Broker::new()?;
/// broker.create_topic("jobs", &mq::TopicConfig::new().partitions(2))?;
/// let m = broker.join("jobs", "workers", &mq::MemberOptions::new().id("w-1"))?;
/// assert_eq!(m.assignment()?.partitions, vec![0, 1]);
/// broker.publish("jobs", mq::Record::new(b"j-1").key(b"k"), mq::Wait::Forever)?;
/// let batch = m.poll(10, std::time::Duration::from_secs(5))?;
/// assert_eq!(batch.messages()[0].payload(), b"j-1");
/// batch.ack()?;
/// # Ok(()) }
/// ```
pub struct Member {
    raw: Arc<Raw>,
    ptr: *mut sys::mq_member,
    topic: String,
    group: String,
    rebalance: Option<Box<RebalanceState>>,
    /// Buffers of batches no longer alive, for the next polls to reuse.
    pool: Mutex<Vec<Copies>>,
    /// Cancel tokens of ended futures (never triggered), for the next ones to reuse.
    tokens: Mutex<Vec<CancelToken>>,
    /// Futures' calls running their blocking form on threads of their own (a broker without
    /// asynchronous calls): closing the member ends them first.
    blocking: Arc<BlockingCalls>,
}

// SAFETY: member calls are thread-safe; the member's handle is only closed once.
unsafe impl Send for Member {}
unsafe impl Sync for Member {}

impl std::fmt::Debug for Member {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Member")
            .field("id", &self.id())
            .field("topic", &self.topic)
            .field("group", &self.group)
            .finish()
    }
}

impl Broker {
    /// Joins `group` on `topic` (subscribing the group at the end of the log if needed); the
    /// group rebalances. [`Error::Exists`] if the id is taken, [`Error::Owned`] if push
    /// subscriptions with partition lists hold the group.
    pub fn join(&self, topic: &str, group: &str, opts: &MemberOptions) -> Result<Member> {
        let (t, g) = (name::owned(topic)?, name::owned(group)?);
        let id = opts.id.as_deref().map(name::owned).transpose()?;
        let mut o = sys::mq_member_options::default();
        // SAFETY: valid options of the size passed.
        unsafe { sys::mq_member_options_init(&mut o, std::mem::size_of_val(&o)) };
        if let Some(id) = &id {
            o.member_id = id.as_ptr();
        }
        if let Some(ms) = opts.session_timeout_ms {
            o.session_timeout_ms = ms;
        }
        if let Some(a) = &opts.assignor {
            // The group may go on using its first member's strategy after that member has
            // left: the broker keeps every strategy it was given until its memory goes.
            let state = Arc::new(AssignorState {
                assignor: a.clone(),
                on_error: opts.on_error.clone(),
            });
            o.assignor = Some(call_assignor);
            o.assignor_user = Arc::as_ptr(&state) as *mut c_void;
            self.raw().keep_alive(state);
        }
        let rebalance = opts.on_rebalance.as_ref().map(|f| {
            Box::new(RebalanceState {
                f: f.clone(),
                on_error: opts.on_error.clone(),
            })
        });
        if let Some(r) = &rebalance {
            o.on_rebalance = Some(call_rebalance);
            o.on_rebalance_user = &**r as *const RebalanceState as *mut c_void;
        }
        let mut m = std::ptr::null_mut();
        // SAFETY: live broker, valid names and options; the callback states outlive the member.
        check(unsafe {
            sys::mq_member_join(self.raw().as_ptr(), t.as_ptr(), g.as_ptr(), &o, &mut m)
        })?;
        Ok(Member {
            raw: self.raw().clone(),
            ptr: m,
            topic: topic.to_owned(),
            group: group.to_owned(),
            rebalance,
            pool: Mutex::new(Vec::new()),
            tokens: Mutex::new(Vec::new()),
            blocking: Arc::default(),
        })
    }
}

impl Member {
    /// The member's id.
    pub fn id(&self) -> &str {
        member_id(self.ptr)
    }

    /// The member's current assignment; fetching marks the generation as seen, so calls stop
    /// returning [`Error::Rebalanced`]. [`Error::Fenced`] if the member was removed.
    pub fn assignment(&self) -> Result<Assignment> {
        assignment(self.ptr)
    }

    /// Polls the member's partitions (each call starts at the next one) and returns messages
    /// of one partition, waiting up to `wait`. [`Error::Rebalanced`] when the generation
    /// changed: fetch the [`assignment`](Self::assignment) and poll again.
    pub fn poll(&self, max: usize, wait: impl Into<Wait>) -> Result<MemberBatch<'_>> {
        self.poll_inner(None, None, max, wait.into(), None)
    }

    /// [`poll`](Self::poll) that `token` can interrupt ([`Error::Cancelled`]).
    pub fn poll_cancellable(
        &self,
        max: usize,
        wait: impl Into<Wait>,
        token: &CancelToken,
    ) -> Result<MemberBatch<'_>> {
        self.poll_inner(None, None, max, wait.into(), Some(token))
    }

    /// [`ack`](Self::ack) of `offset` on `partition`, then [`poll`](Self::poll), in one call
    /// into the library (the ack shares the poll's first look when that is its partition,
    /// always so for a member owning one). [`MemberBatch::ack_and_poll`] does this for the
    /// batch just handled.
    ///
    /// The ack comes first and stands whatever the poll then finds (after [`Error::Timeout`],
    /// [`Error::Cancelled`] or an [`Error::Rebalanced`] during the wait, the offset is acked).
    /// A rejected ack polls nothing, changes nothing and does not wait:
    /// [`Error::NotInFlight`], [`Error::Rebalanced`], [`Error::Fenced`] as [`ack`](Self::ack).
    ///
    /// ```
    /// # fn main() -> mq::Result<()> {
    /// # let broker = mq::Broker::new()?;
    /// # broker.create_topic("t", &mq::TopicConfig::new())?;
    /// let m = broker.join("t", "g", &mq::MemberOptions::new())?;
    /// # for p in [b"a", b"b"] { broker.publish("t", mq::Record::new(p), mq::Wait::NoWait)?; }
    /// drop(m.poll(1, mq::Wait::NoWait)?); // offset 0 in flight
    /// let batch = m.ack_and_poll(0, 0, 10, mq::Wait::NoWait)?;
    /// assert_eq!(batch.messages()[0].payload(), b"b");
    /// # Ok(()) }
    /// ```
    pub fn ack_and_poll(
        &self,
        partition: i32,
        offset: i64,
        max: usize,
        wait: impl Into<Wait>,
    ) -> Result<MemberBatch<'_>> {
        self.poll_inner(None, Some((partition, offset)), max, wait.into(), None)
    }

    /// [`ack_and_poll`](Self::ack_and_poll) whose poll `token` can interrupt
    /// ([`Error::Cancelled`], the ack made).
    pub fn ack_and_poll_cancellable(
        &self,
        partition: i32,
        offset: i64,
        max: usize,
        wait: impl Into<Wait>,
        token: &CancelToken,
    ) -> Result<MemberBatch<'_>> {
        self.poll_inner(
            None,
            Some((partition, offset)),
            max,
            wait.into(),
            Some(token),
        )
    }

    /// A poll into `reuse` (a finished batch's buffers) or pooled buffers, after acking `ack`
    /// in the same call when given.
    fn poll_inner(
        &self,
        reuse: Option<Copies>,
        ack: Option<(i32, i64)>,
        max: usize,
        wait: Wait,
        token: Option<&CancelToken>,
    ) -> Result<MemberBatch<'_>> {
        let mut b = reuse.unwrap_or_else(|| self.take_copies());
        let (m, ms, c) = (self.ptr, wait.millis(), cancel::ptr(token));
        let r = b.poll(max, &mut |first, buf, cap, n, needed| {
            // SAFETY: live member; `buf` is `cap` writable, 8-byte aligned bytes. The batch
            // that read `b` before was consumed.
            unsafe {
                match ack {
                    Some((p, o)) if first => {
                        sys::mq_member_ack_poll_copy(m, p, o, buf, cap, max, ms, c, n, needed)
                    }
                    // A retry after MQ_ERR_TOO_LARGE: the first call's ack stands.
                    _ => sys::mq_member_poll_copy(m, buf, cap, max, ms, c, n, needed),
                }
            }
        });
        match r {
            Ok(n) => Ok(MemberBatch::new(self, b, n)),
            Err(e) => {
                self.give_back(b);
                Err(e)
            }
        }
    }

    /// Pooled buffers for a poll.
    pub(crate) fn take_copies(&self) -> Copies {
        self.pool
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pop()
            .unwrap_or_default()
    }

    pub(crate) fn give_back(&self, b: Copies) {
        self.pool.lock().unwrap_or_else(|e| e.into_inner()).push(b);
    }

    /// A pooled or new cancel token for a future's call.
    pub(crate) fn take_token(&self) -> Result<CancelToken> {
        let pooled = self.tokens.lock().unwrap_or_else(|e| e.into_inner()).pop();
        pooled.map_or_else(CancelToken::new, Ok)
    }

    /// A token of an ended call, never triggered.
    pub(crate) fn give_token(&self, t: CancelToken) {
        self.tokens
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(t);
    }

    /// The open handle (futures borrow the member, so it stays open while they live).
    pub(crate) fn ptr(&self) -> *mut sys::mq_member {
        self.ptr
    }

    pub(crate) fn blocking_calls(&self) -> &Arc<BlockingCalls> {
        &self.blocking
    }
}

impl Member {
    /// Acknowledges (cumulatively) through `offset` on a partition the member owns.
    pub fn ack(&self, partition: i32, offset: i64) -> Result<()> {
        // SAFETY: live member.
        check(unsafe { sys::mq_member_ack(self.ptr, partition, offset) })
    }

    /// Rewinds a partition the member owns: what is in flight comes again after `delay`.
    pub fn nack(&self, partition: i32, delay: Duration) -> Result<()> {
        self.nack_ms(partition, duration_ms(delay))
    }

    /// [`nack`](Self::nack) with the delay in milliseconds, passed through unchecked.
    pub fn nack_ms(&self, partition: i32, delay_ms: i64) -> Result<()> {
        // SAFETY: live member.
        check(unsafe { sys::mq_member_nack(self.ptr, partition, delay_ms) })
    }

    /// Restarts the lease of what is in flight on a partition the member owns.
    pub fn extend_lease(&self, partition: i32) -> Result<()> {
        // SAFETY: live member.
        check(unsafe { sys::mq_member_extend_lease(self.ptr, partition) })
    }

    /// Leaves the group. [`Error::Deadlock`] from inside the member's own rebalance callback
    /// (it then leaves once that callback returns, on a helper thread).
    ///
    /// No future of the member is alive then (they borrow it). A dropped future whose call
    /// was pending has cancelled it, and one leaked with [`std::mem::forget`] is ended here
    /// (`Closed`): either way this returns once the library has finished with the call.
    pub fn close(mut self) -> Result<()> {
        self.close_inner()
    }

    fn close_inner(&mut self) -> Result<()> {
        let ptr = std::mem::replace(&mut self.ptr, std::ptr::null_mut());
        if ptr.is_null() {
            return Ok(());
        }
        // A blocking form running on a thread of its own (its future gone) must not have the
        // handle freed under it: ended (its token) and waited for. The library does the same
        // for its asynchronous calls.
        self.blocking.end_all();
        // SAFETY: live handle, closed once.
        let r = check(unsafe { sys::mq_member_close(ptr) });
        if let Err(Error::Deadlock(m)) = r {
            let p = SendMember(ptr, self.rebalance.take());
            // The broker's memory stays until that close is done.
            let raw = self.raw.clone();
            std::thread::spawn(move || {
                let p = p;
                // SAFETY: live handle, closed once, from a thread that runs no callback of it.
                let _ = unsafe { sys::mq_member_close(p.0) };
                drop(p.1);
                drop(raw);
            });
            return Err(Error::Deadlock(m));
        }
        // The member is gone: no rebalance callback of it can run any more.
        self.rebalance = None;
        r
    }
}

struct SendMember(*mut sys::mq_member, Option<Box<RebalanceState>>);
// SAFETY: the handle is only closed through it, which is thread-safe.
unsafe impl Send for SendMember {}

impl Drop for Member {
    fn drop(&mut self) {
        let _ = self.close_inner();
    }
}

/// The messages of one member poll (all of one partition), copied out of the log. Dropping it
/// gives its buffers back to the member for the next poll.
pub struct MemberBatch<'m> {
    m: &'m Member,
    b: Option<Copies>,
    len: usize,
}

impl<'m> MemberBatch<'m> {
    /// `len` messages polled into `b`.
    pub(crate) fn new(m: &'m Member, b: Copies, len: usize) -> MemberBatch<'m> {
        MemberBatch { m, b: Some(b), len }
    }

    /// Ends the batch: its member, its buffers and where its last message was.
    pub(crate) fn into_parts(mut self) -> (&'m Member, Copies, Option<(i32, i64)>) {
        let last = self.raw().last().map(|m| (m.partition, m.offset));
        let b = self.b.take().expect("a live batch has its buffers");
        (self.m, b, last)
    }

    fn raw(&self) -> &[sys::mq_message] {
        &self
            .b
            .as_ref()
            .expect("a live batch has its buffers")
            .messages()[..self.len]
    }
    /// The messages, in partition order.
    pub fn messages(&self) -> &[Message<'_>] {
        // SAFETY: the views point into this batch's own buffers, unchanged while it lives.
        unsafe { Message::slice(self.raw()) }
    }
    /// Iterates over the messages.
    pub fn iter(&self) -> std::slice::Iter<'_, Message<'_>> {
        self.messages().iter()
    }
    /// Number of messages.
    pub fn len(&self) -> usize {
        self.len
    }
    /// Whether the poll handed out nothing.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// The partition the messages came from.
    pub fn partition(&self) -> Option<i32> {
        self.raw().first().map(|m| m.partition)
    }
    /// Acknowledges the batch (through its last message).
    pub fn ack(self) -> Result<()> {
        match self.raw().last().map(|m| (m.partition, m.offset)) {
            Some((p, o)) => self.m.ack(p, o),
            None => Ok(()),
        }
    }
    /// Acknowledges the batch and polls again in one call into the library (see
    /// [`Member::ack_and_poll`]), reusing the batch's buffers. An empty batch acks nothing
    /// and just polls.
    ///
    /// ```
    /// # fn main() -> mq::Result<()> {
    /// # let broker = mq::Broker::new()?;
    /// # broker.create_topic("t", &mq::TopicConfig::new())?;
    /// let m = broker.join("t", "g", &mq::MemberOptions::new())?;
    /// # for i in 0..10u8 { broker.publish("t", mq::Record::new(&[i]), mq::Wait::NoWait)?; }
    /// let mut seen = Vec::new();
    /// let mut batch = m.poll(4, mq::Wait::NoWait)?;
    /// loop {
    ///     seen.extend(batch.iter().map(|m| m.payload()[0]));
    ///     match batch.ack_and_poll(4, mq::Wait::NoWait) {
    ///         Ok(next) => batch = next,
    ///         Err(mq::Error::Timeout(_)) => break, // the last batch is acked
    ///         Err(e) => return Err(e),
    ///     }
    /// }
    /// assert_eq!(seen, (0..10).collect::<Vec<u8>>());
    /// # Ok(()) }
    /// ```
    pub fn ack_and_poll(self, max: usize, wait: impl Into<Wait>) -> Result<MemberBatch<'m>> {
        self.ack_and_poll_inner(max, wait.into(), None)
    }

    /// [`ack_and_poll`](Self::ack_and_poll) whose poll `token` can interrupt
    /// ([`Error::Cancelled`], the batch acked).
    pub fn ack_and_poll_cancellable(
        self,
        max: usize,
        wait: impl Into<Wait>,
        token: &CancelToken,
    ) -> Result<MemberBatch<'m>> {
        self.ack_and_poll_inner(max, wait.into(), Some(token))
    }

    fn ack_and_poll_inner(
        self,
        max: usize,
        wait: Wait,
        token: Option<&CancelToken>,
    ) -> Result<MemberBatch<'m>> {
        let (m, b, last) = self.into_parts();
        m.poll_inner(Some(b), last, max, wait, token)
    }

    /// Hands the batch's partition's in-flight messages out again after `delay`.
    pub fn nack(self, delay: Duration) -> Result<()> {
        match self.partition() {
            Some(p) => self.m.nack(p, delay),
            None => Ok(()),
        }
    }
}

impl Drop for MemberBatch<'_> {
    fn drop(&mut self) {
        if let Some(b) = self.b.take() {
            self.m.give_back(b);
        }
    }
}

impl std::fmt::Debug for MemberBatch<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl<'b> IntoIterator for &'b MemberBatch<'_> {
    type Item = &'b Message<'b>;
    type IntoIter = std::slice::Iter<'b, Message<'b>>;
    fn into_iter(self) -> Self::IntoIter {
        self.messages().iter()
    }
}
