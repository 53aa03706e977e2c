//! The reference trace of docs/SPEC.md through the Rust binding: prints the same text as the C
//! demo's trace and push sections (examples/demo.c), checking every result as it goes.
use std::process::ExitCode;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use mq::{
    Broker, BrokerOptions, Error, GroupOptions, ManualClock, PartitionConsumer, Record,
    SubscriptionOptions, TopicConfig, Wait,
};

const ORDERS: &str = "orders";

struct Trace {
    broker: Broker,
    failures: usize,
}

impl Trace {
    fn expect(&mut self, what: &str, got: &str, want: &str) {
        if got != want {
            self.failures += 1;
            println!("     MISMATCH {what}\n       got:      {got}\n       expected: {want}");
        }
    }

    fn row(
        &mut self,
        n: u32,
        call: &str,
        result: &str,
        want_result: &str,
        want_state: &str,
    ) -> mq::Result<()> {
        let state = self.broker.describe(ORDERS, 1)?;
        println!("  {n}  {call:<46} {result}");
        println!("       partition 1 after: {state}");
        self.expect(&format!("row {n} result"), result, want_result);
        self.expect(&format!("row {n} partition 1"), &state, want_state);
        Ok(())
    }
}

fn status_text(e: &Error) -> String {
    format!("{} ({})", e.status(), e.message())
}

fn poll_row(c: &mut PartitionConsumer, max: usize) -> (String, Option<i64>) {
    match c.poll(max, Wait::NoWait) {
        Err(e) => (format!("poll: {}", status_text(&e)), None),
        Ok(batch) => {
            let mut s = batch
                .iter()
                .map(|m| format!("{}:{}", m.offset(), String::from_utf8_lossy(m.payload())))
                .collect::<Vec<_>>()
                .join(", ");
            if let Some(first) = batch.messages().first() {
                if first.delivery_count() > 1 {
                    s += &format!(" (lease ran out, rewound to {})", first.offset());
                }
            }
            let last = batch.last_offset();
            drop(batch);
            (s, last)
        }
    }
}

fn run_trace(t: &mut Trace, clock: &ManualClock) -> mq::Result<()> {
    let b = t.broker.clone();
    b.create_topic(
        ORDERS,
        &TopicConfig::new()
            .partitions(2)
            .capacity(3)
            .ack_timeout(Duration::from_secs(30)),
    )?;
    b.subscribe_group(ORDERS, "billing", &GroupOptions::new())?;
    b.subscribe_group(ORDERS, "email", &GroupOptions::new())?;
    let pa = mq::key_partition(b"user-a", 2)?;
    let pb = mq::key_partition(b"user-b", 2)?;
    println!("Reference trace: topic orders, 2 partitions, capacity 3, ack timeout 30 s;");
    println!("groups billing and email subscribed first; user-a -> partition {pa}, user-b -> partition {pb}.");
    println!("Rows trace partition 1 (committed/next per group).\n");
    if pa != 1 || pb != 0 {
        t.failures += 1;
        println!("     MISMATCH user-a/user-b should land on partitions 1/0, got {pa}/{pb}");
    }
    println!("  #  {:<46} result", "call");
    println!("  -  {:<46} ------", "----");

    // 1
    let mut res = String::new();
    let mut at = Vec::new();
    for (k, p) in [
        ("user-a", "o-1"),
        ("user-a", "o-2"),
        ("user-a", "o-3"),
        ("user-b", "o-4"),
    ] {
        match b.publish(
            ORDERS,
            Record::new(p.as_bytes()).key(k.as_bytes()),
            Wait::NoWait,
        ) {
            Ok(x) => at.push(x),
            Err(e) => {
                res = format!("publish {p}: {}", status_text(&e));
                break;
            }
        }
    }
    if res.is_empty() && at[1].partition == at[0].partition && at[2].partition == at[0].partition {
        res = format!(
            "offsets {}, {}, {} on p{}; {} on p{}",
            at[0].offset,
            at[1].offset,
            at[2].offset,
            at[0].partition,
            at[3].offset,
            at[3].partition
        );
    } else if res.is_empty() {
        res = format!(
            "o-1..o-3 on partitions {}, {}, {}",
            at[0].partition, at[1].partition, at[2].partition
        );
    }
    t.row(
        1,
        "publish o-1, o-2, o-3 (user-a); o-4 (user-b)",
        &res,
        "offsets 0, 1, 2 on p1; 0 on p0",
        "log 0..2, backlog 3/3; billing 0/0; email 0/0",
    )?;

    // 2: at capacity, and the publish may not wait
    let res = match b.publish(ORDERS, Record::new(b"o-5").key(b"user-a"), Wait::NoWait) {
        Err(Error::Full(_)) => "full".to_owned(),
        Ok(x) => format!("offset {}", x.offset),
        Err(e) => status_text(&e),
    };
    t.row(
        2,
        "publish o-5 (user-a), wait 0",
        &res,
        "full",
        "log 0..2, backlog 3/3; billing 0/0; email 0/0",
    )?;

    let mut billing = b.consumer(ORDERS, "billing", 1)?;
    let mut email = b.consumer(ORDERS, "email", 1)?;
    let ack_into = |c: &mut PartitionConsumer, offset: i64, res: &mut String| {
        if let Err(e) = c.ack(offset) {
            *res += &format!("; ack {offset}: {}", status_text(&e));
        }
    };

    // 3
    let (mut res, _) = poll_row(&mut billing, 2);
    ack_into(&mut billing, 0, &mut res);
    t.row(
        3,
        "billing polls max 2, acks 0",
        &res,
        "0:o-1, 1:o-2",
        "log 0..2, backlog 3/3; billing 1/2; email 0/0",
    )?;

    // 4: email's ack frees offset 0, which billing has already acked
    let (mut res, _) = poll_row(&mut email, 10);
    ack_into(&mut email, 2, &mut res);
    t.row(
        4,
        "email polls max 10, acks 2",
        &res,
        "0:o-1, 1:o-2, 2:o-3",
        "log 1..2, backlog 2/3; billing 1/2; email 3/3",
    )?;

    // 5
    let res = match b.publish(ORDERS, Record::new(b"o-5").key(b"user-a"), Wait::NoWait) {
        Ok(x) if x.partition == 1 => format!("offset {}", x.offset),
        Ok(x) => format!("offset {} on p{}", x.offset, x.partition),
        Err(e) => status_text(&e),
    };
    t.row(
        5,
        "publish o-5 again",
        &res,
        "offset 3",
        "log 1..3, backlog 3/3; billing 1/2; email 3/3",
    )?;

    // 6: billing's lease (30 s) from row 3 runs out
    clock.advance(Duration::from_secs(31));
    let (res, _) = poll_row(&mut billing, 10);
    t.row(
        6,
        "clock +31 s; billing polls max 10",
        &res,
        "1:o-2, 2:o-3, 3:o-5 (lease ran out, rewound to 1)",
        "log 1..3, backlog 3/3; billing 1/4; email 3/3",
    )?;

    // 7
    let res = match billing.ack(3) {
        Ok(()) => "ok".to_owned(),
        Err(e) => status_text(&e),
    };
    t.row(
        7,
        "billing acks 3",
        &res,
        "ok",
        "log 3..3, backlog 1/3; billing 4/4; email 3/3",
    )?;

    // 8: never delivered, so rejected with a message naming the in-flight range
    let res = match billing.ack(7) {
        Err(Error::NotInFlight(m)) => format!("rejected: {m}"),
        Ok(()) => "ok".to_owned(),
        Err(e) => status_text(&e),
    };
    t.row(
        8,
        "billing acks 7",
        &res,
        "rejected: offset 7 is not in flight for billing (nothing is)",
        "log 3..3, backlog 1/3; billing 4/4; email 3/3",
    )?;
    Ok(())
}

struct Call {
    payload: String,
    offset: i64,
    ok: bool,
}

fn run_push(t: &mut Trace) -> mq::Result<()> {
    println!("\nPush: topic payments, 1 partition, capacity 10; group ledger's handler fails the first time it sees pay-2.\n");
    let b = t.broker.clone();
    b.create_topic("payments", &TopicConfig::new().partitions(1).capacity(10))?;
    let log = Arc::new((Mutex::new(Vec::<Call>::new()), Condvar::new()));
    let seen = log.clone();
    let mut failed_pay2 = false;
    // The failure of pay-2 is the scenario, recorded in the log: no need to report it.
    let opts = SubscriptionOptions::new().on_error(|_| {});
    let sub = b.subscribe("payments", "ledger", &opts, move |m: &mq::Message<'_>| {
        let payload = String::from_utf8_lossy(m.payload()).into_owned();
        let ok = payload != "pay-2" || failed_pay2;
        if payload == "pay-2" {
            failed_pay2 = true;
        }
        let (calls, cv) = &*seen;
        calls.lock().unwrap().push(Call {
            payload,
            offset: m.offset(),
            ok,
        });
        cv.notify_all();
        if ok {
            Ok(())
        } else {
            Err("pay-2 fails the first time")
        }
    })?;
    for p in ["pay-1", "pay-2", "pay-3"] {
        b.publish("payments", Record::new(p.as_bytes()), Wait::Forever)?;
    }
    // Four handler calls are expected (pay-2 twice); then the last ack must land.
    let until = Instant::now() + Duration::from_secs(5);
    {
        let (calls, cv) = &*log;
        let mut g = calls.lock().unwrap();
        while g.len() < 4 && Instant::now() < until {
            g = cv.wait_timeout(g, until - Instant::now()).unwrap().0;
        }
    }
    while b.group_info("payments", "ledger", 0)?.committed != 3 && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(1)); // the interval between looks at state
    }
    sub.close()?;
    let want = [
        ("pay-1", 0, true),
        ("pay-2", 1, false),
        ("pay-2", 1, true),
        ("pay-3", 2, true),
    ];
    let calls = log.0.lock().unwrap();
    for (i, c) in calls.iter().enumerate() {
        println!(
            "  handler call {}: {} (offset {}) -> {}",
            i + 1,
            c.payload,
            c.offset,
            if c.ok { "ok, acked" } else { "failed, nacked" }
        );
        if want
            .get(i)
            .is_none_or(|w| (w.0, w.1, w.2) != (c.payload.as_str(), c.offset, c.ok))
        {
            t.failures += 1;
        }
    }
    if calls.len() != 4 {
        t.failures += 1;
        println!(
            "     MISMATCH expected 4 handler calls (pay-1, pay-2 failing, pay-2, pay-3), got {}",
            calls.len()
        );
    }
    let state = b.describe("payments", 0)?;
    println!("  after: {state}");
    t.expect(
        "push step final state",
        &state,
        "log empty, next offset 3, backlog 0/10; ledger 3/3",
    );
    Ok(())
}

fn main() -> ExitCode {
    let clock = ManualClock::new();
    let broker = match Broker::with_options(&BrokerOptions::new().clock(&clock)) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("mq trace: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut t = Trace {
        broker,
        failures: 0,
    };
    if let Err(e) = run_trace(&mut t, &clock).and_then(|()| run_push(&mut t)) {
        eprintln!("mq trace: {e}");
        return ExitCode::FAILURE;
    }
    if t.failures > 0 {
        eprintln!(
            "mq trace: {} check(s) differ from the specification",
            t.failures
        );
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
