//! The Rust testee of the conformance runner: executes the runner's requests (one line on
//! stdin, one reply line on stdout; see tests/conformance/FORMAT.md) through the `mq` crate's
//! public API, and reports what the library did. It checks nothing: the runner compares.
use std::collections::HashMap;
use std::future::Future;
use std::io::{BufRead, Write};
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::thread::JoinHandle;
use std::time::Duration;

use mq::{
    Batch, BatchError, Broker, BrokerOptions, CancelToken, Cursor, Error, GroupOptions, Header,
    ManualClock, Member, MemberOptions, Message, PartitionConsumer, Published, Publisher, Record,
    Retention, SeekTo, Settle, ShareMode, Start, Subscription, SubscriptionOptions, TopicConfig,
    Wait,
};

// ---- the line protocol ---------------------------------------------------------------------

/// Every byte outside `[A-Za-z0-9._-]` as `%XX`.
fn enc(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len());
    for &b in bytes {
        if b.is_ascii_alphanumeric() || b"._-".contains(&b) {
            s.push(b as char);
        } else {
            s.push_str(&format!("%{b:02X}"));
        }
    }
    s
}

fn dec(raw: &str) -> Vec<u8> {
    let b = raw.as_bytes();
    let hex = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            if let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2])) {
                out.push(h * 16 + l);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    out
}

#[derive(Clone)]
struct Req {
    verb: String,
    fields: Vec<(String, String)>,
}

impl Req {
    fn parse(line: &str) -> Option<Req> {
        let mut it = line.split(' ').filter(|t| !t.is_empty());
        let verb = it.next()?.to_owned();
        let mut fields = Vec::new();
        for t in it {
            let (n, v) = t.split_once('=')?;
            fields.push((n.to_owned(), v.to_owned()));
        }
        Some(Req { verb, fields })
    }
    fn raw(&self, name: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
    fn has(&self, name: &str) -> bool {
        self.raw(name).is_some()
    }
    fn bytes(&self, name: &str) -> Option<Vec<u8>> {
        self.raw(name).map(dec)
    }
    /// A name (topic, group, member id) as text; absent is "" (an illegal name, as NULL is).
    fn name(&self, field: &str) -> String {
        String::from_utf8_lossy(&self.bytes(field).unwrap_or_default()).into_owned()
    }
    fn int(&self, name: &str, dflt: i64) -> i64 {
        self.raw(name).map_or(dflt, |v| {
            let end = v
                .find(|c: char| !(c.is_ascii_digit() || c == '-'))
                .unwrap_or(v.len());
            v[..end].parse().unwrap_or(0)
        })
    }
    fn all(&self, name: &str) -> Vec<Vec<u8>> {
        self.fields
            .iter()
            .filter(|(n, _)| n == name)
            .map(|(_, v)| dec(v))
            .collect()
    }
}

/// A reply line under construction.
#[derive(Default)]
struct Out(String);

impl Out {
    fn status<T>(&mut self, r: &Result<T, Error>) {
        match r {
            Ok(_) => self.0.push_str("MQ_OK"),
            Err(e) => self.error(e),
        }
    }
    fn error(&mut self, e: &Error) {
        self.0.push_str(e.status().name());
        self.bytes("error", e.message().as_bytes());
    }
    fn field(&mut self, name: &str, raw: impl std::fmt::Display) {
        self.0.push_str(&format!(" {name}={raw}"));
    }
    fn bytes(&mut self, name: &str, b: &[u8]) {
        self.field(name, enc(b));
    }
}

fn status_name<T>(r: &Result<T, Error>) -> &'static str {
    match r {
        Ok(_) => "MQ_OK",
        Err(e) => e.status().name(),
    }
}

fn put_message(out: &mut String, m: &Message<'_>) {
    let mut o = Out(std::mem::take(out));
    o.field("message", format!("{}:{}", m.partition(), m.offset()));
    o.bytes("payload", m.payload());
    if let Some(k) = m.key() {
        o.bytes("key", k);
    }
    o.field("delivery_count", m.delivery_count());
    o.field("timestamp_ns", m.timestamp_ns());
    o.field("lost", m.lost());
    for (n, v) in m.headers() {
        o.field("header", format!("{}:{}", enc(n), enc(v)));
    }
    if let Some(d) = m.dead_letter() {
        o.field(
            "dead_letter",
            format!(
                "{}:{}:{}:{}:{}",
                enc(d.topic.as_bytes()),
                enc(d.group.as_bytes()),
                d.partition,
                d.offset,
                d.delivery_count
            ),
        );
    }
    *out = o.0;
}

// ---- the world of one scenario ---------------------------------------------------------------

struct Push {
    sub: Option<Subscription>,
    frees: Arc<AtomicUsize>,
    calls: Arc<Mutex<String>>,
}

struct MemberRec {
    member: Option<Arc<Member>>,
    rebalances: Arc<Mutex<String>>,
}

struct Background {
    token: CancelToken,
    reply: Arc<Mutex<Option<String>>>,
    thread: Option<JoinHandle<()>>,
}

/// The Kafka backend (FORMAT.md, "On the Kafka backend"): with `MQ_CONFORMANCE_BACKEND=kafka`
/// the broker is opened on the cluster at `MQ_KAFKA_BOOTSTRAP`, without the manual clock (Kafka's
/// time is the cluster's), and the topics a scenario created are deleted at its end so the next
/// one starts clean. An unset address still selects the cluster: the broker then fails to open,
/// and the scenario says so, instead of passing in-process.
fn kafka_bootstrap() -> Option<String> {
    if std::env::var_os("MQ_CONFORMANCE_BACKEND").is_some_and(|b| b == "kafka") {
        Some(match std::env::var("MQ_KAFKA_BOOTSTRAP") {
            Ok(b) if !b.is_empty() => b,
            _ => "MQ_KAFKA_BOOTSTRAP-is-not-set".into(),
        })
    } else {
        None
    }
}

/// An open cursor; a background call locks it for its duration (the cursor's calls take
/// `&mut`), so a foreground call on it meanwhile is a testee error, not a wait.
type SharedCursor = Arc<Mutex<Cursor>>;

#[derive(Default)]
struct World {
    clock: ManualClock,
    broker: Option<Broker>,
    /// On Kafka, the topics this scenario created: `end` deletes them.
    kafka_topics: Vec<String>,
    pushes: HashMap<String, Push>,
    members: HashMap<String, MemberRec>,
    background: HashMap<String, Background>,
    started: HashMap<String, StartedCall>,
    /// Handles (ABI 1.7) by name; `None` once closed or when the open failed.
    publishers: HashMap<String, Option<Arc<Publisher>>>,
    cursors: HashMap<String, Option<SharedCursor>>,
}

/// Counts the drops of a push handler: its user data must be released exactly once.
struct Frees(Arc<AtomicUsize>);
impl Drop for Frees {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// One `fail=` or `extend=` use: spent by one handler call with that payload.
struct Use {
    payload: Vec<u8>,
    left: bool,
}

fn take(uses: &mut [Use], payload: &[u8]) -> bool {
    match uses.iter_mut().find(|u| u.left && u.payload == payload) {
        Some(u) => {
            u.left = false;
            true
        }
        None => false,
    }
}

/// The payload=/key=/header=/delay_ms= runs of a request.
struct OwnedRecord {
    payload: Vec<u8>,
    key: Option<Vec<u8>>,
    headers: Vec<(Vec<u8>, Vec<u8>)>,
    delay_ms: i64,
}

fn records(r: &Req) -> Vec<OwnedRecord> {
    let mut recs: Vec<OwnedRecord> = Vec::new();
    for (n, v) in &r.fields {
        match n.as_str() {
            "payload" => recs.push(OwnedRecord {
                payload: dec(v),
                key: None,
                headers: Vec::new(),
                delay_ms: 0,
            }),
            "key" | "header" | "delay_ms" if recs.is_empty() => {}
            "key" => recs.last_mut().unwrap().key = Some(dec(v)),
            "header" => {
                let (name, value) = v.split_once(':').unwrap_or((v, ""));
                recs.last_mut()
                    .unwrap()
                    .headers
                    .push((dec(name), dec(value)));
            }
            // Passed through unchecked (Record::delay_ms), so that the library judges it.
            "delay_ms" => recs.last_mut().unwrap().delay_ms = v.parse().unwrap_or(i64::MIN),
            _ => {}
        }
    }
    recs
}

fn wait_of(r: &Req) -> Result<Wait, Error> {
    Wait::from_millis(r.int("wait", 0))
}

/// Builds the records of a request's payload=/key=/header=/delay_ms= runs and hands them to
/// `f` (a delayed `publish` goes through [`Broker::publish`] with the record's delay).
fn with_records<R>(r: &Req, f: impl FnOnce(&[Record<'_>]) -> R) -> R {
    let owned = records(r);
    let hdrs: Vec<Vec<Header<'_>>> = owned
        .iter()
        .map(|o| o.headers.iter().map(|(n, v)| Header::new(n, v)).collect())
        .collect();
    let recs: Vec<Record<'_>> = owned
        .iter()
        .zip(&hdrs)
        .map(|(o, h)| {
            Record::new(&o.payload)
                .maybe_key(o.key.as_deref())
                .headers(h)
                .delay_ms(o.delay_ms)
        })
        .collect();
    f(&recs)
}

/// A call that may run in the background: it needs only the broker (and a member or a
/// publisher: `via`, the call then goes through it).
fn publish(
    b: &Broker,
    via: Option<&Publisher>,
    r: &Req,
    token: Option<&CancelToken>,
    batch: bool,
) -> String {
    let wait = match wait_of(r) {
        Ok(w) => w,
        Err(e) => {
            let mut out = Out::default();
            out.error(&e);
            return out.0;
        }
    };
    let topic = r.name("topic");
    with_records(r, |recs| {
        if !batch {
            let rec = recs.first().copied().unwrap_or_else(|| Record::new(&[]));
            let res = match (via, token) {
                (Some(p), Some(t)) => p.publish_cancellable(rec, wait, t),
                (Some(p), None) => p.publish(rec, wait),
                (None, Some(t)) => b.publish_cancellable(&topic, rec, wait, t),
                (None, None) => b.publish(&topic, rec, wait),
            };
            publish_reply(&res)
        } else {
            let unwritten = Published {
                partition: i32::MIN,
                offset: i64::MIN,
            };
            let mut results = vec![unwritten; recs.len()];
            let res = match via {
                Some(p) => p.publish_batch_with(recs, wait, token, &mut results),
                None => b.publish_batch_with(&topic, recs, wait, token, &mut results),
            };
            if !results.iter().all(|p| p.partition != i32::MIN) {
                results.clear();
            }
            batch_reply(res, recs.len(), &results)
        }
    })
}

/// A call started through the binding's native async form (`start=NAME`): a future whose
/// output is the reply line the blocking call would have given.
type Started = Pin<Box<dyn Future<Output = String> + Send>>;

/// `member`: the member of a `member_poll` / `member_ack_poll` (its futures borrow it: the
/// started future holds this reference).
fn start_call(b: &Broker, member: Option<Arc<Member>>, r: &Req, token: &CancelToken) -> Started {
    let poll = !r.verb.starts_with("publish");
    let wait = match wait_of(r) {
        Ok(w) => w,
        Err(e) => {
            let mut out = Out::default();
            out.error(&e);
            if poll {
                out.field("count", 0);
            }
            return Box::pin(std::future::ready(out.0));
        }
    };
    let topic = r.name("topic");
    match r.verb.as_str() {
        "publish" => {
            let f = with_records(r, |recs| {
                let rec = recs.first().copied().unwrap_or_else(|| Record::new(&[]));
                b.publish_async_cancellable(&topic, rec, wait, token)
            });
            Box::pin(async move { publish_reply(&f.await) })
        }
        "publish_batch" => {
            let (n, f) = with_records(r, |recs| {
                (
                    recs.len(),
                    b.publish_batch_async_with(&topic, recs, wait, Some(token)),
                )
            });
            Box::pin(async move {
                let (res, results) = f.await;
                batch_reply(res, n, &results)
            })
        }
        "member_poll" | "member_ack_poll" => {
            let max = r.int("max", 10).max(0) as usize;
            let ack = (r.verb == "member_ack_poll")
                .then(|| (r.int("partition", 0) as i32, r.int("offset", 0)));
            let m = member.expect("the member of a member call");
            let token = token.clone();
            Box::pin(async move {
                let got = match ack {
                    Some((p, o)) => {
                        m.ack_and_poll_async_cancellable(p, o, max, wait, &token)
                            .await
                    }
                    None => m.poll_async_cancellable(max, wait, &token).await,
                };
                let mut body = String::new();
                let res = got.map(|batch| {
                    batch.iter().for_each(|m| put_message(&mut body, m));
                    batch.len()
                });
                poll_reply(res, &body)
            })
        }
        _ => {
            let max = r.int("max", 10).max(0) as usize;
            let ack = (r.verb == "ack_poll").then(|| r.int("offset", 0));
            let consumer = b.consumer(&topic, &r.name("group"), r.int("partition", 0) as i32);
            let token = token.clone();
            Box::pin(async move {
                let mut c = match consumer {
                    Ok(c) => c,
                    Err(e) => return poll_reply(Err(e), ""),
                };
                let got = match ack {
                    Some(o) => c.ack_and_poll_async_cancellable(o, max, wait, &token).await,
                    None => c.poll_async_cancellable(max, wait, &token).await,
                };
                let mut body = String::new();
                let res = got.map(|batch| {
                    batch.iter().for_each(|m| put_message(&mut body, m));
                    batch.len()
                });
                poll_reply(res, &body)
            })
        }
    }
}

/// The executor of the started calls: polled when started, on `await` and at `end`. The waker
/// does nothing (the runner asks again): whether a call has ended is in its future's state.
struct NoWake;
impl std::task::Wake for NoWake {
    fn wake(self: Arc<Self>) {}
}

struct StartedCall {
    token: CancelToken,
    future: Option<Started>,
    reply: Option<String>,
}

impl StartedCall {
    /// The reply once the call has ended.
    fn step(&mut self) -> Option<&str> {
        if let Some(f) = &mut self.future {
            let waker = std::task::Waker::from(Arc::new(NoWake));
            if let Poll::Ready(line) = f.as_mut().poll(&mut Context::from_waker(&waker)) {
                self.reply = Some(line);
                self.future = None;
            }
        }
        self.reply.as_deref()
    }
}

fn publish_reply(res: &Result<Published, Error>) -> String {
    let mut out = Out::default();
    out.status(res);
    if let Ok(at) = res {
        out.field("partition", at.partition);
        out.field("offset", at.offset);
    }
    out.0
}

/// `results`: one per record, or none when the library wrote none.
fn batch_reply(res: Result<(), BatchError>, records: usize, results: &[Published]) -> String {
    let mut out = Out::default();
    let published = match &res {
        Ok(()) => records,
        Err(e) => e.published,
    };
    out.status(&res.map_err(|e| e.error));
    out.field("published", published);
    for p in results {
        out.field("result", format!("{}:{}", p.partition, p.offset));
    }
    out.0
}

fn poll_reply(res: Result<usize, Error>, body: &str) -> String {
    let mut out = Out::default();
    out.status(&res);
    out.field("count", *res.as_ref().unwrap_or(&0));
    out.0.push_str(body);
    out.0
}

/// The poll forms a consumer and a cursor share.
trait Polls {
    fn poll_with(
        &mut self,
        ack: Option<i64>,
        max: usize,
        wait: Wait,
        token: Option<&CancelToken>,
    ) -> Result<Batch<'_>, Error>;
}

macro_rules! polls {
    ($t:ty) => {
        impl Polls for $t {
            fn poll_with(
                &mut self,
                ack: Option<i64>,
                max: usize,
                wait: Wait,
                token: Option<&CancelToken>,
            ) -> Result<Batch<'_>, Error> {
                match (ack, token) {
                    (Some(o), Some(t)) => self.ack_and_poll_cancellable(o, max, wait, t),
                    (Some(o), None) => self.ack_and_poll(o, max, wait),
                    (None, Some(t)) => self.poll_cancellable(max, wait, t),
                    (None, None) => self.poll(max, wait),
                }
            }
        }
    };
}
polls!(PartitionConsumer);
polls!(Cursor);

/// A poll's messages into `body`; how many.
fn read(got: Result<Batch<'_>, Error>, body: &mut String) -> Result<usize, Error> {
    got.map(|batch| {
        batch.iter().for_each(|m| put_message(body, m));
        batch.len()
    })
}

/// `cursor`: the call goes through it (`via`).
fn poll(
    b: &Broker,
    member: Option<&Member>,
    cursor: Option<&mut Cursor>,
    r: &Req,
    token: Option<&CancelToken>,
) -> String {
    let mut out = Out::default();
    let max = r.int("max", 10).max(0) as usize;
    let wait = match wait_of(r) {
        Ok(w) => w,
        Err(e) => {
            out.error(&e);
            out.field("count", 0);
            return out.0;
        }
    };
    let mut body = String::new();
    // ack_poll, member_ack_poll: the ack travels with the poll.
    let ack = r
        .verb
        .ends_with("ack_poll")
        .then(|| (r.int("partition", 0) as i32, r.int("offset", 0)));
    let res: Result<usize, Error> = match member {
        Some(m) => {
            let got = match (ack, token) {
                (Some((p, o)), Some(t)) => m.ack_and_poll_cancellable(p, o, max, wait, t),
                (Some((p, o)), None) => m.ack_and_poll(p, o, max, wait),
                (None, Some(t)) => m.poll_cancellable(max, wait, t),
                (None, None) => m.poll(max, wait),
            };
            got.map(|batch| {
                batch.iter().for_each(|m| put_message(&mut body, m));
                batch.len()
            })
        }
        None => {
            let ack = ack.map(|(_, o)| o);
            match cursor {
                Some(c) => read(c.poll_with(ack, max, wait, token), &mut body),
                None => b
                    .consumer(
                        &r.name("topic"),
                        &r.name("group"),
                        r.int("partition", 0) as i32,
                    )
                    .and_then(|mut c| read(c.poll_with(ack, max, wait, token), &mut body)),
            }
        }
    };
    poll_reply(res, &body)
}

impl World {
    fn broker(&self) -> Result<&Broker, String> {
        self.broker.as_ref().ok_or_else(|| "no broker".to_owned())
    }

    fn member(&self, r: &Req) -> Result<Arc<Member>, String> {
        self.members
            .get(&r.name("member"))
            .and_then(|m| m.member.clone())
            .ok_or_else(|| "no such member".to_owned())
    }

    /// The publisher of a request's `publisher=` (FORMAT.md, "Handles"), if it names one.
    fn publisher(&self, r: &Req) -> Result<Option<Arc<Publisher>>, String> {
        if !r.has("publisher") {
            return Ok(None);
        }
        self.publishers
            .get(&r.name("publisher"))
            .cloned()
            .flatten()
            .map(Some)
            .ok_or_else(|| "no such publisher".to_owned())
    }

    /// The cursor of a request's `cursor=`, if it names one.
    fn cursor(&self, r: &Req) -> Result<Option<SharedCursor>, String> {
        if !r.has("cursor") {
            return Ok(None);
        }
        self.cursors
            .get(&r.name("cursor"))
            .cloned()
            .flatten()
            .map(Some)
            .ok_or_else(|| "no such cursor".to_owned())
    }

    /// A foreground call's cursor: one a background call holds is a script error here (the
    /// wait could be forever).
    fn with_cursor<T>(
        &self,
        r: &Req,
        f: impl FnOnce(Option<&mut Cursor>) -> T,
    ) -> Result<T, String> {
        match self.cursor(r)? {
            None => Ok(f(None)),
            Some(c) => {
                let mut g = c
                    .try_lock()
                    .map_err(|_| "the cursor is in use by a background call".to_owned())?;
                Ok(f(Some(&mut g)))
            }
        }
    }

    fn start_background(&mut self, r: Req) -> String {
        let name = r.name("async");
        let Ok(b) = self.broker().cloned() else {
            return "testee_error detail=no%20broker".into();
        };
        let member = if r.verb.starts_with("member_") {
            match self.member(&r) {
                Ok(m) => Some(m),
                Err(e) => return format!("testee_error detail={}", enc(e.as_bytes())),
            }
        } else {
            None
        };
        let (publisher, cursor) = match (self.publisher(&r), self.cursor(&r)) {
            (Ok(p), Ok(c)) => (p, c),
            (Err(e), _) | (_, Err(e)) => {
                return format!("testee_error detail={}", enc(e.as_bytes()))
            }
        };
        let Ok(token) = CancelToken::new() else {
            return "testee_error detail=cannot%20make%20a%20cancel%20token".into();
        };
        let reply = Arc::new(Mutex::new(None));
        let (t, rep) = (token.clone(), reply.clone());
        let thread = std::thread::spawn(move || {
            let line = match r.verb.as_str() {
                "publish" => publish(&b, publisher.as_deref(), &r, Some(&t), false),
                "publish_batch" => publish(&b, publisher.as_deref(), &r, Some(&t), true),
                "poll" | "member_poll" | "ack_poll" | "member_ack_poll" => {
                    let mut held = cursor.as_ref().map(|c| c.lock().unwrap());
                    poll(&b, member.as_deref(), held.as_deref_mut(), &r, Some(&t))
                }
                _ => "testee_error detail=not%20a%20background%20call".into(),
            };
            drop((member, publisher, cursor));
            *rep.lock().unwrap() = Some(line);
        });
        self.background.insert(
            name,
            Background {
                token,
                reply,
                thread: Some(thread),
            },
        );
        "MQ_OK".into()
    }

    fn start_native(&mut self, r: &Req) -> String {
        let Ok(b) = self.broker().cloned() else {
            return "testee_error detail=no%20broker".into();
        };
        let member = if r.verb.starts_with("member_") {
            match self.member(r) {
                Ok(m) => Some(m),
                Err(e) => return format!("testee_error detail={}", enc(e.as_bytes())),
            }
        } else {
            None
        };
        let Ok(token) = CancelToken::new() else {
            return "testee_error detail=cannot%20make%20a%20cancel%20token".into();
        };
        let mut call = StartedCall {
            future: Some(start_call(&b, member, r, &token)),
            token,
            reply: None,
        };
        call.step(); // the call starts here, on this thread
        self.started.insert(r.name("start"), call);
        "MQ_OK".into()
    }

    fn run(&mut self, r: &Req) -> Result<String, String> {
        let mut out = Out::default();
        let v = r.verb.as_str();
        match v {
            "hello" => {
                return Ok(if r.int("protocol", 0) == 1 {
                    "MQ_OK protocol=1".into()
                } else {
                    "testee_error detail=protocol%201".into()
                })
            }
            "broker_new" => {
                let mut o = match kafka_bootstrap() {
                    Some(b) => BrokerOptions::new().kafka(b),
                    None => BrokerOptions::new().clock(&self.clock),
                };
                if r.has("max_message_bytes") {
                    o = o.max_message_bytes(r.int("max_message_bytes", 0).max(0) as usize);
                }
                let res = Broker::with_options(&o);
                out.status(&res);
                if let Ok(b) = res {
                    self.broker = Some(b);
                }
            }
            "clock" if kafka_bootstrap().is_some() => {
                return Err("no manual clock on the Kafka backend".into());
            }
            "clock" => {
                self.clock
                    .advance(Duration::from_nanos(r.int("advance_ns", 0).max(0) as u64));
                out.0.push_str("MQ_OK");
            }
            "topic_create" => {
                let mut c = TopicConfig::new();
                if r.has("partitions") {
                    c = c.partitions(r.int("partitions", 0) as i32);
                }
                if r.has("capacity") {
                    c = c.capacity(r.int("capacity", 0));
                }
                if r.has("max_bytes") {
                    c = c.max_bytes(r.int("max_bytes", 0));
                }
                if r.has("ack_timeout_ms") {
                    c = c.ack_timeout_ms(r.int("ack_timeout_ms", 0));
                }
                if r.has("max_age_ms") {
                    c = c.max_age_ms(r.int("max_age_ms", 0));
                }
                if let Some(ret) = r.bytes("retention") {
                    c = c.retention(if ret == b"bounded" {
                        Retention::Bounded
                    } else {
                        Retention::UntilAcked
                    });
                }
                let topic = r.name("topic");
                let res = self.broker()?.create_topic(&topic, &c);
                if res.is_ok() && kafka_bootstrap().is_some() {
                    self.kafka_topics.push(topic);
                }
                out.status(&res);
            }
            "subscribe" => {
                let mut o = GroupOptions::new();
                if let Some(s) = r.bytes("start") {
                    o = o.start(if s == b"earliest" {
                        Start::Earliest
                    } else {
                        Start::Latest
                    });
                }
                let dlq = r
                    .has("dead_letter_topic")
                    .then(|| r.name("dead_letter_topic"));
                o = o.max_deliveries_raw(r.int("max_deliveries", 0) as u32, dlq.as_deref());
                if let Some(s) = r.raw("share") {
                    o = o.share(match s {
                        "all" => ShareMode::All,
                        "key" => ShareMode::Key,
                        _ => ShareMode::None,
                    });
                }
                o = o.max_acquired(r.int("max_acquired", 0) as u32);
                out.status(
                    &self
                        .broker()?
                        .subscribe_group(&r.name("topic"), &r.name("group"), &o),
                );
            }
            "unsubscribe" => out.status(
                &self
                    .broker()?
                    .unsubscribe_group(&r.name("topic"), &r.name("group")),
            ),
            "topic_delete" => out.status(&self.broker()?.delete_topic(&r.name("topic"))),
            "broker_close" => out.status(&self.broker()?.close()),
            "publish" | "publish_batch" => {
                let p = self.publisher(r)?;
                return Ok(publish(
                    self.broker()?,
                    p.as_deref(),
                    r,
                    None,
                    v == "publish_batch",
                ));
            }
            "poll" | "ack_poll" => {
                let b = self.broker()?;
                return self.with_cursor(r, |c| poll(b, None, c, r, None));
            }
            "ack" if r.has("cursor") => {
                let res = self.with_cursor(r, |c| c.map(|c| c.ack(r.int("offset", 0))))?;
                out.status(&res.ok_or("no such cursor")?);
            }
            "publisher_open" => {
                let res = self.broker()?.publisher(&r.name("topic"));
                out.status(&res);
                self.publishers
                    .insert(r.name("publisher"), res.ok().map(Arc::new));
            }
            "cursor_open" => {
                let res = self.broker()?.cursor(
                    &r.name("topic"),
                    &r.name("group"),
                    r.int("partition", 0) as i32,
                );
                out.status(&res);
                self.cursors
                    .insert(r.name("cursor"), res.ok().map(|c| Arc::new(Mutex::new(c))));
            }
            "publisher_close" => {
                let p = self
                    .publishers
                    .get_mut(&r.name("publisher"))
                    .ok_or("no such publisher")?;
                let open = p.take().ok_or("the publisher is not open")?;
                match Arc::try_unwrap(open) {
                    Ok(open) => open.close(),
                    Err(open) => {
                        *p = Some(open);
                        return Err("the publisher is in use by a background call".into());
                    }
                }
                out.0.push_str("MQ_OK");
            }
            "cursor_close" => {
                let c = self
                    .cursors
                    .get_mut(&r.name("cursor"))
                    .ok_or("no such cursor")?;
                let open = c.take().ok_or("the cursor is not open")?;
                match Arc::try_unwrap(open) {
                    Ok(open) => open.into_inner().unwrap().close(),
                    Err(open) => {
                        *c = Some(open);
                        return Err("the cursor is in use by a background call".into());
                    }
                }
                out.0.push_str("MQ_OK");
            }
            "member_poll" | "member_ack_poll" => {
                let m = self.member(r)?;
                return Ok(poll(self.broker()?, Some(&m), None, r, None));
            }
            "ack" | "nack" | "extend_lease" | "seek" => {
                let b = self.broker()?;
                let c = b.consumer(
                    &r.name("topic"),
                    &r.name("group"),
                    r.int("partition", 0) as i32,
                );
                let res = c.and_then(|mut c| match v {
                    "ack" => c.ack(r.int("offset", 0)),
                    "nack" => c.nack_ms(r.int("delay_ms", 0)),
                    "extend_lease" => c.extend_lease(),
                    _ => c.seek(match r.raw("offset").unwrap_or("") {
                        "earliest" => SeekTo::Earliest,
                        "end" => SeekTo::End,
                        _ => SeekTo::Offset(r.int("offset", 0)),
                    }),
                });
                out.status(&res);
            }
            "settle" => {
                let action = match r.raw("action").unwrap_or("") {
                    "accept" => Settle::Accept,
                    "release" => Settle::Release,
                    "reject" => Settle::Reject,
                    _ => Settle::Renew,
                };
                let res = self
                    .broker()?
                    .consumer(
                        &r.name("topic"),
                        &r.name("group"),
                        r.int("partition", 0) as i32,
                    )
                    .and_then(|c| {
                        c.settle_ms(
                            r.int("offset", 0),
                            r.int("delivery_count", 0) as u32,
                            action,
                            r.int("delay_ms", 0),
                        )
                    });
                out.status(&res);
            }
            "topic_list" => {
                let res = self.broker()?.topics();
                out.status(&res);
                for n in res.unwrap_or_default() {
                    out.bytes("name", n.as_bytes());
                }
            }
            "group_list" => {
                let res = self.broker()?.groups(&r.name("topic"));
                out.status(&res);
                for n in res.unwrap_or_default() {
                    out.bytes("name", n.as_bytes());
                }
            }
            "partition_describe" => {
                let res = self
                    .broker()?
                    .describe(&r.name("topic"), r.int("partition", 0) as i32);
                out.status(&res);
                if let Ok(t) = res {
                    out.bytes("text", t.as_bytes());
                }
            }
            "topic_get_info" => {
                let res = self.broker()?.topic_info(&r.name("topic"));
                out.status(&res);
                if let Ok(t) = res {
                    out.field("partitions", t.partitions);
                    out.field("capacity", t.capacity);
                    out.field("max_bytes", t.max_bytes);
                    out.field("ack_timeout_ms", t.ack_timeout.as_millis());
                    out.field(
                        "retention",
                        if t.retention == Retention::Bounded {
                            "bounded"
                        } else {
                            "until_acked"
                        },
                    );
                    out.field("max_age_ms", t.max_age.map_or(0, |d| d.as_millis()));
                }
            }
            "partition_get_info" => {
                let res = self
                    .broker()?
                    .partition_info(&r.name("topic"), r.int("partition", 0) as i32);
                out.status(&res);
                if let Ok(i) = res {
                    for (n, x) in [
                        ("start", i.start),
                        ("end", i.end),
                        ("backlog", i.backlog),
                        ("capacity", i.capacity),
                        ("retained_bytes", i.retained_bytes),
                        ("max_bytes", i.max_bytes),
                        ("producer_waits", i.producer_waits),
                        ("max_backlog", i.max_backlog),
                        ("dropped", i.dropped),
                        ("oldest_timestamp_ns", i.oldest_timestamp_ns.unwrap_or(-1)),
                        (
                            "oldest_age_ns",
                            i.oldest_age.map_or(-1, |d| d.as_nanos() as i64),
                        ),
                    ] {
                        out.field(n, x);
                    }
                }
            }
            "group_get_info" => {
                let res = self.broker()?.group_info(
                    &r.name("topic"),
                    &r.name("group"),
                    r.int("partition", 0) as i32,
                );
                out.status(&res);
                if let Ok(g) = res {
                    for (n, x) in [
                        ("committed", g.committed),
                        ("next", g.next),
                        ("lag", g.lag),
                        ("in_flight", g.in_flight),
                        ("lost", g.lost),
                        ("dead_lettered", g.dead_lettered),
                        (
                            "next_age_ns",
                            g.next_age.map_or(-1, |d| d.as_nanos() as i64),
                        ),
                        ("paused_until_ns", g.paused_until_ns.unwrap_or(0)),
                        ("acquired", g.acquired),
                        ("available", g.available),
                        ("delayed", g.delayed),
                        ("rejected", g.rejected),
                        (
                            "oldest_unsettled_age_ns",
                            g.oldest_unsettled_age.map_or(-1, |d| d.as_nanos() as i64),
                        ),
                    ] {
                        out.field(n, x);
                    }
                    let [a, b, c, d] = g.delivered;
                    out.field("delivered", format!("{a},{b},{c},{d}"));
                }
            }
            "key_murmur2" => {
                out.0.push_str("MQ_OK");
                out.field("hash", mq::murmur2(&r.bytes("key").unwrap_or_default()));
            }
            "key_partition" => {
                let res = mq::key_partition(
                    &r.bytes("key").unwrap_or_default(),
                    r.int("partitions", 0) as i32,
                );
                out.status(&res);
                if let Ok(p) = res {
                    out.field("partition", p);
                }
            }
            "assignment_round_robin" => {
                let res = mq::round_robin(
                    r.int("partitions", 0) as i32,
                    r.int("members", 0) as i32,
                    r.int("member", 0) as i32,
                );
                out.status(&res);
                if let Ok(p) = res {
                    out.field(
                        "owned",
                        p.iter().map(i32::to_string).collect::<Vec<_>>().join(","),
                    );
                }
            }
            "subscription_open" => return self.subscription_open(r),
            "subscription_close" => {
                let p = self
                    .pushes
                    .get_mut(&r.name("subscription"))
                    .ok_or("no such subscription")?;
                let res = p.sub.take().ok_or("the subscription is not open")?.close();
                out.status(&res);
                out.field("frees", p.frees.load(Ordering::SeqCst));
            }
            "calls" => {
                let p = self
                    .pushes
                    .get(&r.name("subscription"))
                    .ok_or("no such subscription")?;
                out.0 = format!("MQ_OK{}", p.calls.lock().unwrap());
            }
            "frees" => {
                let p = self
                    .pushes
                    .get(&r.name("subscription"))
                    .ok_or("no such subscription")?;
                out.0 = format!("MQ_OK frees={}", p.frees.load(Ordering::SeqCst));
            }
            "handler_extend_lease" => out.status(&mq::handler::extend_lease()),
            "handler_set_nack_delay" => {
                out.status(&mq::handler::set_nack_delay_ms(r.int("delay_ms", 0)))
            }
            "member_join" => return self.member_join(r),
            "member_close" => {
                // A started call of the member that has ended lets go of it here (a pending
                // one borrows it: the member is in use).
                for call in self.started.values_mut() {
                    call.step();
                }
                let rec = self
                    .members
                    .get_mut(&r.name("member"))
                    .ok_or("no such member")?;
                let m = rec.member.take().ok_or("no such member")?;
                match Arc::try_unwrap(m) {
                    Ok(m) => out.status(&m.close()),
                    Err(m) => {
                        rec.member = Some(m);
                        return Err("the member is in use by a background or started call".into());
                    }
                }
            }
            "member_get_assignment" => {
                let res = self.member(r)?.assignment();
                out.status(&res);
                if let Ok(a) = res {
                    out.field("generation", a.generation);
                    out.field(
                        "partitions",
                        a.partitions
                            .iter()
                            .map(i32::to_string)
                            .collect::<Vec<_>>()
                            .join(","),
                    );
                }
            }
            "member_ack" => out.status(
                &self
                    .member(r)?
                    .ack(r.int("partition", 0) as i32, r.int("offset", 0)),
            ),
            "member_nack" => out.status(
                &self
                    .member(r)?
                    .nack_ms(r.int("partition", 0) as i32, r.int("delay_ms", 0)),
            ),
            "member_extend_lease" => {
                out.status(&self.member(r)?.extend_lease(r.int("partition", 0) as i32))
            }
            "rebalances" => {
                let m = self
                    .members
                    .get(&r.name("member"))
                    .ok_or("no such member")?;
                out.0 = format!("MQ_OK{}", m.rebalances.lock().unwrap());
            }
            "await" if self.started.contains_key(&r.name("call")) => {
                let call = self
                    .started
                    .get_mut(&r.name("call"))
                    .ok_or("no such call")?;
                out.0 = call.step().unwrap_or("pending").to_owned();
            }
            "cancel" if self.started.contains_key(&r.name("call")) => {
                let call = self.started.get(&r.name("call")).ok_or("no such call")?;
                call.token.cancel();
                out.0 = "MQ_OK".into();
            }
            "await" => {
                let bg = self
                    .background
                    .get_mut(&r.name("call"))
                    .ok_or("no such call")?;
                let done = bg.reply.lock().unwrap().clone();
                match done {
                    Some(line) => {
                        if let Some(t) = bg.thread.take() {
                            let _ = t.join();
                        }
                        out.0 = line;
                    }
                    None => out.0 = "pending".into(),
                }
            }
            "cancel" => {
                let bg = self.background.get(&r.name("call")).ok_or("no such call")?;
                bg.token.cancel();
                out.0 = "MQ_OK".into();
            }
            "end" => return self.end(),
            _ => return Err("unknown verb".into()),
        }
        Ok(out.0)
    }

    fn subscription_open(&mut self, r: &Req) -> Result<String, String> {
        let b = self.broker()?.clone();
        let frees = Arc::new(AtomicUsize::new(0));
        let calls = Arc::new(Mutex::new(String::new()));
        let mut fails: Vec<Use> = r
            .all("fail")
            .into_iter()
            .map(|payload| Use {
                payload,
                left: true,
            })
            .collect();
        let mut extends: Vec<Use> = r
            .all("extend")
            .into_iter()
            .map(|payload| Use {
                payload,
                left: true,
            })
            .collect();
        let delay = r.has("nack_delay_ms").then(|| r.int("nack_delay_ms", 0));
        let mut o = SubscriptionOptions::new().on_error(|_| {}); // failures are the script's
        if r.has("prefetch") {
            o = o.prefetch(r.int("prefetch", 0) as i32);
        }
        if let Some(list) = r.raw("partitions") {
            let parts: Vec<i32> = list
                .split(',')
                .filter(|s| !s.is_empty())
                .map(|s| s.parse().unwrap_or(-1))
                .collect();
            o = o.partitions(&parts);
        }
        let guard = Frees(frees.clone());
        let log = calls.clone();
        let handler = move |m: &Message<'_>| -> Result<(), &'static str> {
            let _keep = &guard;
            let mut rec = log.lock().unwrap();
            let fail = take(&mut fails, m.payload());
            let extended =
                take(&mut extends, m.payload()).then(|| status_name(&mq::handler::extend_lease()));
            let delayed = match delay {
                Some(ms) if fail => Some(status_name(&mq::handler::set_nack_delay_ms(ms))),
                _ => None,
            };
            put_message(&mut rec, m);
            rec.push_str(if fail { " outcome=fail" } else { " outcome=ok" });
            if let Some(s) = extended {
                rec.push_str(&format!(" extend_lease={s}"));
            }
            if let Some(s) = delayed {
                rec.push_str(&format!(" nack_delay={s}"));
            }
            if fail {
                Err("scripted failure")
            } else {
                Ok(())
            }
        };
        let res = b.subscribe(&r.name("topic"), &r.name("group"), &o, handler);
        let mut out = Out::default();
        out.status(&res);
        out.field("frees", frees.load(Ordering::SeqCst));
        self.pushes.insert(
            r.name("subscription"),
            Push {
                sub: res.ok(),
                frees,
                calls,
            },
        );
        Ok(out.0)
    }

    fn member_join(&mut self, r: &Req) -> Result<String, String> {
        let b = self.broker()?.clone();
        let rebalances = Arc::new(Mutex::new(String::new()));
        let log = rebalances.clone();
        let mut o = MemberOptions::new().on_rebalance(move |rb| {
            log.lock().unwrap().push_str(&format!(
                " rebalance={}:{}",
                rb.generation(),
                enc(rb.member_id().as_bytes())
            ));
        });
        if r.has("id") {
            o = o.id(&r.name("id"));
        }
        if r.has("session_timeout_ms") {
            o = o.session_timeout_ms(r.int("session_timeout_ms", 0));
        }
        match r.bytes("assignor").as_deref() {
            Some(b"all_to_last") => {
                o = o.assignor(|_: i32, ids: &[&str], owners: &mut [i32]| {
                    owners.fill(ids.len() as i32 - 1)
                })
            }
            Some(b"by_id") => {
                o = o.assignor(|_: i32, ids: &[&str], owners: &mut [i32]| {
                    let mut order: Vec<usize> = (0..ids.len()).collect();
                    order.sort_by(|&a, &b| ids[a].as_bytes().cmp(ids[b].as_bytes()));
                    for (p, o) in owners.iter_mut().enumerate() {
                        *o = order[p % order.len()] as i32;
                    }
                })
            }
            Some(b"none") => {
                o = o.assignor(|_: i32, ids: &[&str], owners: &mut [i32]| {
                    owners.fill(ids.len() as i32)
                })
            }
            _ => {}
        }
        let res = b.join(&r.name("topic"), &r.name("group"), &o);
        let mut out = Out::default();
        out.status(&res);
        if let Ok(m) = &res {
            out.bytes("id", m.id().as_bytes());
        }
        self.members.insert(
            r.name("member"),
            MemberRec {
                member: res.ok().map(Arc::new),
                rebalances,
            },
        );
        Ok(out.0)
    }

    /// Closes the broker (waking background calls), joins them, closes what is open, frees.
    fn end(&mut self) -> Result<String, String> {
        if let Some(b) = &self.broker {
            let _ = b.close();
        }
        for bg in self.background.values_mut() {
            if let Some(t) = bg.thread.take() {
                let _ = t.join();
            }
        }
        // Close has completed every pending call (MQ_CLOSED): each started one has ended.
        let mut good = true;
        for call in self.started.values_mut() {
            good &= call.step().is_some();
        }
        self.started.clear();
        for p in self.pushes.values_mut() {
            if let Some(s) = p.sub.take() {
                good &= s.close().is_ok();
            }
        }
        for m in self.members.values_mut() {
            if let Some(m) = m.member.take() {
                good &= Arc::try_unwrap(m)
                    .map(|m| m.close().is_ok())
                    .unwrap_or(false);
            }
        }
        self.broker = None;
        // Handles outlive their broker (FORMAT.md): closed after it, whatever is left open.
        self.publishers.clear();
        self.cursors.clear();
        self.kafka_cleanup();
        Ok(if good {
            "MQ_OK".into()
        } else {
            "testee_error detail=closing%20what%20the%20scenario%20left%20open%20failed%2C%20or%20a%20started%20call%20had%20not%20ended".into()
        })
    }
}

impl World {
    /// Deletes the scenario's topics through a second broker on the cluster (the scenario's own
    /// is closed by now). Best effort, as in the C testee: a topic left over shows in the next
    /// scenario that creates it.
    fn kafka_cleanup(&mut self) {
        let topics = std::mem::take(&mut self.kafka_topics);
        let Some(bootstrap) = kafka_bootstrap().filter(|_| !topics.is_empty()) else {
            return;
        };
        if let Ok(b) = Broker::with_options(&BrokerOptions::new().kafka(bootstrap)) {
            for t in &topics {
                let _ = b.delete_topic(t);
            }
        }
    }
}

fn main() {
    let mut world = World::default();
    let stdin = std::io::stdin();
    let mut stdout = std::io::stdout().lock();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        let line = line.strip_suffix('\r').unwrap_or(&line);
        let reply = match Req::parse(line) {
            None => "testee_error detail=not%20a%20request%20line".to_owned(),
            Some(r) if r.has("async") => world.start_background(r),
            Some(r)
                if r.has("start")
                    && matches!(
                        r.verb.as_str(),
                        "publish"
                            | "publish_batch"
                            | "poll"
                            | "ack_poll"
                            | "member_poll"
                            | "member_ack_poll"
                    ) =>
            {
                world.start_native(&r)
            }
            Some(r) => world
                .run(&r)
                .unwrap_or_else(|e| format!("testee_error detail={}", enc(e.as_bytes()))),
        };
        if writeln!(stdout, "{reply}")
            .and_then(|()| stdout.flush())
            .is_err()
        {
            break;
        }
    }
}
