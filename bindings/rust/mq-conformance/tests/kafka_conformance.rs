//! The scenarios of tests/conformance/kafka_scenarios.txt on a real Kafka cluster (FORMAT.md,
//! "On the Kafka backend"): the testee, built with the `kafka` feature, opens its broker at
//! `MQ_KAFKA_BOOTSTRAP`. One at a time: scenarios share topic names, and each one's `end`
//! deletes the topics it created. Without `MQ_KAFKA_BOOTSTRAP` every scenario fails.
use libtest_mimic::{Arguments, Failed, Trial};

mod common;

fn main() {
    let mut args = Arguments::from_args();
    args.test_threads = Some(1);
    let dir = common::scripts_dir();
    let list = dir.join("kafka_scenarios.txt");
    let text = std::fs::read_to_string(&list)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", list.display()));
    let names: Vec<String> = text
        .lines()
        .map(|l| l.split('#').next().unwrap_or("").trim())
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect();
    assert!(!names.is_empty(), "no scenarios in {}", list.display());
    let bootstrap = std::env::var("MQ_KAFKA_BOOTSTRAP").unwrap_or_default();
    let trials = names
        .into_iter()
        .map(|name| {
            let script = dir.join(format!("{name}.mqs"));
            let bootstrap = bootstrap.clone();
            Trial::test(name, move || {
                if bootstrap.is_empty() {
                    return Err(Failed::from(
                        "MQ_KAFKA_BOOTSTRAP is not set: start a cluster \
                         (scripts/kafka-server.sh start) and export its address",
                    ));
                }
                if !script.is_file() {
                    return Err(format!(
                        "kafka_scenarios.txt names {}, which does not exist",
                        script.display()
                    )
                    .into());
                }
                common::run(
                    &script,
                    "kafka_expected_failures.txt",
                    &[
                        ("MQ_CONFORMANCE_BACKEND", "kafka"),
                        ("MQ_KAFKA_BOOTSTRAP", &bootstrap),
                    ],
                )
            })
        })
        .collect();
    libtest_mimic::run(&args, trials).exit();
}
