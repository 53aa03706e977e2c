//! Delayed delivery (library 1.5): `Record::delay` holds a message's hand-out, not its append,
//! until the broker clock reaches its publish time + delay; a delayed message holds the ones
//! behind it in its partition; every publish form carries it.
mod common;
use std::time::{Duration, Instant};

use common::setup;
use mq::{Broker, Error, GroupOptions, Published, Record, TopicConfig, Wait};

fn payloads(b: &mq::Batch<'_>) -> Vec<String> {
    b.iter()
        .map(|m| String::from_utf8_lossy(m.payload()).into_owned())
        .collect()
}

fn timed_out<T: std::fmt::Debug>(r: mq::Result<T>) -> bool {
    matches!(r, Err(Error::Timeout(_)))
}

#[test]
fn a_delayed_message_is_handed_out_at_its_time_not_before() {
    let (b, clock) = setup(1, 8);
    let at = b
        .publish(
            "t",
            Record::new(b"later").delay(Duration::from_millis(100)),
            Wait::NoWait,
        )
        .unwrap();
    assert_eq!(
        at,
        Published {
            partition: 0,
            offset: 0
        }
    );
    // Appended at once: counted in the backlog.
    let pi = b.partition_info("t", 0).unwrap();
    assert_eq!((pi.end, pi.backlog), (1, 1));
    let mut c = b.consumer("t", "g", 0).unwrap();
    assert!(timed_out(c.poll(10, Wait::NoWait)));
    clock.advance(Duration::from_millis(99));
    assert!(timed_out(c.poll(10, Wait::NoWait)));
    clock.advance(Duration::from_millis(1));
    let batch = c.poll(10, Wait::NoWait).unwrap();
    assert_eq!(payloads(&batch), ["later"]);
    assert_eq!(batch.messages()[0].delivery_count(), 1);
    batch.ack().unwrap();
}

#[test]
fn a_delayed_message_holds_the_ones_behind_it_for_every_group() {
    let (b, clock) = setup(1, 8);
    b.subscribe_group("t", "h", &GroupOptions::new()).unwrap();
    b.publish("t", Record::new(b"a"), Wait::NoWait).unwrap();
    b.publish(
        "t",
        Record::new(b"b").delay(Duration::from_secs(1)),
        Wait::NoWait,
    )
    .unwrap();
    let c_at = b.publish("t", Record::new(b"c"), Wait::NoWait).unwrap();
    assert_eq!(c_at.offset, 2);
    for g in ["g", "h"] {
        let mut c = b.consumer("t", g, 0).unwrap();
        assert_eq!(payloads(&c.poll(10, Wait::NoWait).unwrap()), ["a"]);
        assert!(timed_out(c.poll(10, Wait::NoWait)), "{g}: c waits behind b");
    }
    clock.advance(Duration::from_secs(1));
    for g in ["g", "h"] {
        let mut c = b.consumer("t", g, 0).unwrap();
        // a is still in flight: the poll goes on after it, in offset order.
        assert_eq!(payloads(&c.poll(10, Wait::NoWait).unwrap()), ["b", "c"]);
    }
    // Once due it stays due: a redelivery does not wait again.
    let mut c = b.consumer("t", "h", 0).unwrap();
    c.nack(Duration::ZERO).unwrap();
    assert_eq!(
        payloads(&c.poll(10, Wait::NoWait).unwrap()),
        ["a", "b", "c"]
    );
}

#[test]
fn batch_records_carry_their_own_delays() {
    let (b, clock) = setup(1, 8);
    let recs = [
        Record::new(b"x"),
        Record::new(b"y").delay(Duration::from_millis(50)),
        Record::new(b"z").delay(Duration::from_millis(10)),
        // Rounded up to whole milliseconds.
        Record::new(b"w").delay(Duration::from_micros(10_001)),
    ];
    assert_eq!(recs[3].delay_millis(), 11);
    let mut results = [Published::default(); 4];
    b.publish_batch_with("t", &recs, Wait::NoWait, None, &mut results)
        .unwrap();
    assert_eq!(results.map(|r| r.offset), [0, 1, 2, 3]);
    let mut c = b.consumer("t", "g", 0).unwrap();
    assert_eq!(payloads(&c.poll(10, Wait::NoWait).unwrap()), ["x"]);
    // z is due at 10 ms but waits behind y (due at 50 ms).
    clock.advance(Duration::from_millis(10));
    assert!(timed_out(c.poll(10, Wait::NoWait)));
    clock.advance(Duration::from_millis(39));
    assert!(timed_out(c.poll(10, Wait::NoWait)));
    clock.advance(Duration::from_millis(1));
    assert_eq!(
        payloads(&c.poll(10, Wait::NoWait).unwrap()),
        ["y", "z", "w"]
    );
}

#[test]
fn a_bad_delay_is_refused_with_the_library_text_and_nothing_appended() {
    let (b, _) = setup(1, 8);
    let text = |n: i64| {
        format!("record {{}}: delay_ms is {n}; it must be 0 to 1099511627776 ms (2^40 ms)")
    };
    let e = b
        .publish("t", Record::new(b"bad").delay_ms(-1), Wait::NoWait)
        .unwrap_err();
    assert!(matches!(e, Error::Invalid(_)), "{e:?}");
    assert_eq!(e.message(), text(-1).replace("{}", "0"));
    let recs = [
        Record::new(b"ok"),
        Record::new(b"bad").delay_ms((1 << 40) + 1),
    ];
    let e = b.publish_batch("t", &recs, Wait::NoWait).unwrap_err();
    assert_eq!(e.published, 0);
    assert!(matches!(e.error, Error::Invalid(_)), "{e:?}");
    assert_eq!(e.error.message(), text((1 << 40) + 1).replace("{}", "1"));
    // A Duration beyond the library's range saturates and is refused too; 2^40 ms is legal.
    let e = b
        .publish("t", Record::new(b"far").delay(Duration::MAX), Wait::NoWait)
        .unwrap_err();
    assert!(matches!(e, Error::Invalid(_)), "{e:?}");
    assert_eq!(b.partition_info("t", 0).unwrap().end, 0);
    b.publish("t", Record::new(b"edge").delay_ms(1 << 40), Wait::NoWait)
        .unwrap();
    assert_eq!(b.partition_info("t", 0).unwrap().end, 1);
}

#[test]
fn a_delayed_single_publish_keeps_its_key_and_headers() {
    let (b, clock) = setup(3, 8);
    let hdrs = [mq::Header::new(b"trace", b"7")];
    let at = b
        .publish(
            "t",
            Record::new(b"p")
                .key(b"k")
                .headers(&hdrs)
                .delay(Duration::from_millis(5)),
            Wait::NoWait,
        )
        .unwrap();
    assert_eq!(at.partition, mq::key_partition(b"k", 3).unwrap());
    assert_eq!(at.offset, 0);
    clock.advance(Duration::from_millis(5));
    let mut c = b.consumer("t", "g", at.partition).unwrap();
    let batch = c.poll(10, Wait::NoWait).unwrap();
    let m = &batch.messages()[0];
    assert_eq!((m.key(), m.payload()), (Some(&b"k"[..]), &b"p"[..]));
    let h: Vec<_> = m.headers().collect();
    assert_eq!(h, [(&b"trace"[..], &b"7"[..])]);
}

#[test]
fn the_futures_carry_the_delay() {
    let (b, clock) = setup(1, 8);
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let at = rt
        .block_on(b.publish_async(
            "t",
            Record::new(b"one").delay(Duration::from_millis(20)),
            Wait::NoWait,
        ))
        .unwrap();
    assert_eq!(at.offset, 0);
    let recs = [
        Record::new(b"two"),
        Record::new(b"three").delay(Duration::from_millis(30)),
    ];
    let results = rt
        .block_on(b.publish_batch_async("t", &recs, Wait::NoWait))
        .unwrap();
    assert_eq!(results.iter().map(|r| r.offset).collect::<Vec<_>>(), [1, 2]);
    let e = rt
        .block_on(b.publish_async("t", Record::new(b"bad").delay_ms(-5), Wait::NoWait))
        .unwrap_err();
    assert_eq!(
        e.message(),
        "record 0: delay_ms is -5; it must be 0 to 1099511627776 ms (2^40 ms)"
    );
    let mut c = b.consumer("t", "g", 0).unwrap();
    assert!(timed_out(c.poll(10, Wait::NoWait)));
    clock.advance(Duration::from_millis(20));
    assert_eq!(payloads(&c.poll(10, Wait::NoWait).unwrap()), ["one", "two"]);
    clock.advance(Duration::from_millis(10));
    assert_eq!(payloads(&c.poll(10, Wait::NoWait).unwrap()), ["three"]);
}

/// A broker on the real clock with topic `t` (one partition) and group `g`.
fn real_clock() -> Broker {
    let b = Broker::new().unwrap();
    b.create_topic("t", &TopicConfig::new().partitions(1).capacity(8))
        .unwrap();
    b.subscribe_group("t", "g", &GroupOptions::new()).unwrap();
    b
}

#[test]
fn a_blocking_poll_wakes_when_a_delayed_message_is_due() {
    let b = real_clock();
    let mut c = b.consumer("t", "g", 0).unwrap();
    let start = Instant::now();
    b.publish(
        "t",
        Record::new(b"soon").delay(Duration::from_millis(50)),
        Wait::NoWait,
    )
    .unwrap();
    let batch = c.poll(10, Duration::from_secs(10)).unwrap();
    let took = start.elapsed();
    assert_eq!(payloads(&batch), ["soon"]);
    assert!(took >= Duration::from_millis(50), "{took:?}");
    assert!(took < Duration::from_secs(5), "{took:?}");
}

#[test]
fn a_pending_async_poll_wakes_when_a_delayed_message_is_due() {
    let b = real_clock();
    let mut c = b.consumer("t", "g", 0).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let start = Instant::now();
    b.publish(
        "t",
        Record::new(b"soon").delay(Duration::from_millis(50)),
        Wait::NoWait,
    )
    .unwrap();
    let got = rt.block_on(async {
        let batch = c.poll_async(10, Duration::from_secs(10)).await.unwrap();
        payloads(&batch)
    });
    let took = start.elapsed();
    assert_eq!(got, ["soon"]);
    assert!(took >= Duration::from_millis(50), "{took:?}");
    assert!(took < Duration::from_secs(5), "{took:?}");
}

// mq_record.delay_ms is 1.5's: the header the bindings were generated from has it, and the
// library linked reads it (an older one would take a smaller record, delay 0).
const _: () = assert!(mq_sys::MQ_VERSION_NUMBER >= 1_005_000);

#[test]
fn the_library_has_delayed_delivery() {
    assert!(mq::version_number() >= 1_005_000, "{}", mq::version());
}
