package main

import (
	"os"

	"github.com/mqlib/mq/bindings/go/mq"
)

// The Kafka backend (FORMAT.md, "On the Kafka backend"): with MQ_CONFORMANCE_BACKEND=kafka the
// broker is opened on the cluster at MQ_KAFKA_BOOTSTRAP without the manual clock (Kafka's time
// is the cluster's), and end deletes the topics the scenario created, so the next scenario
// starts on a clean cluster. A testee built without the backend (no mq_kafka tag) then answers
// broker_new with MQ_ERR_UNSUPPORTED, which fails the scenario readably.

// kafkaBootstrap is the cluster's address, and whether the scenario runs on Kafka. An unset
// MQ_KAFKA_BOOTSTRAP gives an address that says so in the library's connection error.
func kafkaBootstrap() (string, bool) {
	if os.Getenv("MQ_CONFORMANCE_BACKEND") != "kafka" {
		return "", false
	}
	if b := os.Getenv("MQ_KAFKA_BOOTSTRAP"); b != "" {
		return b, true
	}
	return "MQ_KAFKA_BOOTSTRAP-is-not-set", true
}

// brokerOptions are broker_new's options but max_message_bytes: the manual clock in process,
// the cluster on Kafka.
func (w *world) brokerOptions() []mq.Option {
	if bootstrap, ok := kafkaBootstrap(); ok {
		return []mq.Option{mq.WithKafka(bootstrap)}
	}
	return []mq.Option{mq.WithClock(w.clock)}
}

// createdTopic records a topic the scenario created on the cluster, for deleteKafkaTopics.
func (w *world) createdTopic(name string) {
	if _, ok := kafkaBootstrap(); ok {
		w.kafkaTopics = append(w.kafkaTopics, name)
	}
}

// deleteKafkaTopics deletes the scenario's topics through a second broker on the cluster (the
// scenario's own is closed by then). As the C testee, a failure here does not fail end: a
// topic left behind fails the next scenario that creates it, which names it.
func (w *world) deleteKafkaTopics() {
	topics := w.kafkaTopics
	w.kafkaTopics = nil
	bootstrap, ok := kafkaBootstrap()
	if !ok || len(topics) == 0 {
		return
	}
	b, err := mq.NewBroker(mq.WithKafka(bootstrap))
	if err != nil {
		return
	}
	defer b.Close()
	for _, t := range topics {
		_ = b.DeleteTopic(t)
	}
}
