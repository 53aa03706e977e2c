//! The Kafka backend's options and statuses (library 1.2) as this binding exposes them. Nothing
//! here needs a cluster. The tests of a refused bootstrap hold for the binding's default build
//! of the core, which has no Kafka backend; with the `kafka` feature, kafka_cluster.rs tests
//! the backend on a real cluster instead.
use mq::{Broker, BrokerOptions, Error, Status};

fn open(opts: &BrokerOptions) -> Result<Broker, Error> {
    Broker::with_options(opts)
}

#[cfg(not(feature = "kafka"))]
#[test]
fn kafka_bootstrap_without_the_backend_is_unsupported_and_says_how_to_rebuild() {
    let settings = [
        BrokerOptions::new().kafka("localhost:9092"),
        // Well-formed settings pass the binding's check and reach the library.
        BrokerOptions::new()
            .kafka("kafka-1:9092,kafka-2:9092")
            .kafka_setting("client.id", "billing")
            .kafka_setting("sasl.jaas.config", "a=b c=d"),
    ];
    for opts in &settings {
        match open(opts) {
            Err(e @ Error::Unsupported(_)) => {
                // The message names the switch this user can turn on: the crate's feature
                // when cargo compiled the core, CMake's option for a prebuilt libmq.
                if mq_sys::VENDORED {
                    assert!(e.message().contains("`kafka` feature"), "{e}");
                    assert!(!e.message().contains("CMake"), "{e}");
                    assert!(!e.message().contains("MQ_KAFKA"), "{e}");
                } else {
                    assert!(e.message().contains("MQ_KAFKA"), "{e}");
                }
                assert_eq!(e.status(), Status(23));
                assert_eq!(e.status().name(), "MQ_ERR_UNSUPPORTED");
            }
            other => panic!("expected Unsupported, got {other:?}"),
        }
    }
    // Without a bootstrap the library ignores the settings: the in-process broker opens.
    Broker::with_options(&BrokerOptions::new().kafka_setting("client.id", "x")).unwrap();
}

#[cfg(not(feature = "kafka"))]
#[test]
fn a_manual_clock_with_kafka_is_unsupported() {
    let clock = mq::ManualClock::new();
    let opts = BrokerOptions::new().kafka("localhost:9092").clock(&clock);
    assert!(matches!(open(&opts), Err(Error::Unsupported(_))));
}

#[test]
fn settings_the_c_text_cannot_carry_are_refused_by_the_binding() {
    // The library without the backend would answer Unsupported: Invalid is the binding's own.
    let bad = [
        ("", "x", "its name is empty"),
        ("bad=name", "x", "contains '='"),
        ("two\nlines", "x", "its name contains a newline"),
        ("client.id", "two\nlines", "its value contains a newline"),
        ("nul\0", "x", "NUL"),
        ("client.id", "nul\0", "NUL"),
    ];
    for (name, value, why) in bad {
        for base in [
            BrokerOptions::new().kafka("localhost:9092"),
            BrokerOptions::new(),
        ] {
            let opts = base
                .kafka_setting("client.id", "ok")
                .kafka_setting(name, value);
            match open(&opts) {
                Err(Error::Invalid(m)) => {
                    assert!(m.contains(why), "{name:?}={value:?}: {m}");
                    assert!(m.contains(&format!("{name:?}")), "names the setting: {m}");
                    // Values are often credentials: the message never shows one.
                    if value != "x" && value != "ok" {
                        assert!(!m.contains(value), "shows the value: {m}");
                    }
                }
                other => panic!("{name:?}={value:?}: expected Invalid, got {other:?}"),
            }
        }
    }
    match open(&BrokerOptions::new().kafka("local\0host:9092")) {
        Err(Error::Invalid(m)) => assert!(m.contains("NUL"), "{m}"),
        other => panic!("expected Invalid, got {other:?}"),
    }
}

#[test]
fn settings_come_from_maps_and_pairs_and_debug_hides_their_values() {
    let map = std::collections::BTreeMap::from([("sasl.password", "hunter2")]);
    let opts = BrokerOptions::new()
        .kafka("localhost:9092")
        .kafka_settings(map)
        .kafka_settings(vec![("client.id".to_string(), "billing".to_string())]);
    let shown = format!("{opts:?}");
    assert!(
        shown.contains("sasl.password") && shown.contains("client.id"),
        "{shown}"
    );
    assert!(
        !shown.contains("hunter2") && !shown.contains("billing"),
        "{shown}"
    );
    assert!(shown.contains("localhost:9092"), "{shown}");
    let bad = BrokerOptions::new().kafka_settings([("a=b", "c")]);
    assert!(matches!(open(&bad), Err(Error::Invalid(_))));
}

#[test]
fn the_new_statuses_have_their_own_variants_and_library_names() {
    let cases = [
        (
            mq_sys::mq_status::MQ_ERR_UNSUPPORTED,
            "MQ_ERR_UNSUPPORTED",
            Error::Unsupported("m".into()),
        ),
        (
            mq_sys::mq_status::MQ_ERR_BACKEND,
            "MQ_ERR_BACKEND",
            Error::Backend("m".into()),
        ),
    ];
    for (raw, name, want) in cases {
        let status = Status(raw.0 as i32);
        let e = Error::new(status, "m");
        assert_eq!(e, want);
        assert_eq!(e.status(), status);
        assert_eq!(status.name(), name);
        assert_eq!(e.message(), "m");
        assert_eq!(e.to_string(), format!("{name}: m"));
    }
    assert_eq!(
        (Status(23).name(), Status(24).name()),
        ("MQ_ERR_UNSUPPORTED", "MQ_ERR_BACKEND")
    );
    // A status past the library's last is still representable.
    let later = Error::new(Status(25), "later");
    assert!(matches!(&later, Error::Unknown { status, .. } if *status == Status(25)));
    assert_eq!(later.status().name(), "MQ_UNKNOWN_STATUS");
}

#[test]
fn the_crate_is_the_library_version_it_wraps() {
    let crate_minor: Vec<&str> = env!("CARGO_PKG_VERSION").split('.').take(2).collect();
    let lib_minor: Vec<&str> = mq::version().split('.').take(2).collect();
    assert_eq!(crate_minor, lib_minor);
    // ... and the header's the FFI was generated from (a regenerated header bumps the crates).
    let header = [mq_sys::MQ_VERSION_MAJOR, mq_sys::MQ_VERSION_MINOR].map(|n| n.to_string());
    assert_eq!(crate_minor, header);
}
