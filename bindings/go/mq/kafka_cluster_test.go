//go:build mq_kafka

package mq

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// kafkaBuild: the package is built with -tags mq_kafka (the programs the tests build too).
const kafkaBuild = true

// The Kafka variant (-tags mq_kafka: the core with its Kafka backend) against the cluster at
// MQ_KAFKA_BOOTSTRAP (scripts/kafka-server.sh start prints it). Without the variable the tests
// fail: a Kafka build that runs no Kafka test would pass for nothing.

func kafkaBroker(t *testing.T) *Broker {
	t.Helper()
	bootstrap := os.Getenv("MQ_KAFKA_BOOTSTRAP")
	if bootstrap == "" {
		t.Fatal("MQ_KAFKA_BOOTSTRAP is not set: start a cluster (scripts/kafka-server.sh start prints its address) and export it")
	}
	return newBroker(t, WithKafka(bootstrap), WithKafkaConfig(map[string]string{"client.id": "mq-go-test"}))
}

// uniqueTopic is a name no other run (or concurrent helper) on the same cluster uses; the test
// deletes it at the end, and once more on failure.
func uniqueTopic(t *testing.T, b *Broker, prefix string) string {
	name := fmt.Sprintf("%s-%d-%d", prefix, os.Getpid(), time.Now().UnixNano())
	t.Cleanup(func() {
		if err := b.DeleteTopic(name); err != nil && !errors.Is(err, ErrNoTopic) && !errors.Is(err, ErrClosed) {
			t.Errorf("deleting %s: %v", name, err)
		}
	})
	return name
}

func TestKafkaTopicGroupAndMember(t *testing.T) {
	b := kafkaBroker(t)
	topic := uniqueTopic(t, b, "go-kafka")
	must(t, b.CreateTopic(topic, Partitions(2)))
	topics, err := b.Topics()
	must(t, err)
	if !slices.Contains(topics, topic) {
		t.Fatalf("Topics() = %v, without %s", topics, topic)
	}
	must(t, b.Subscribe(topic, "billing", StartAt(StartEarliest)))

	// A key picks the partition by Kafka's rule; headers travel in order, duplicates kept.
	key := []byte("user-a")
	hdrs := []Header{{"trace", []byte("t-1")}, {"trace", []byte("t-2")}, {"empty", nil}}
	p, off, err := b.Publish(within(t, 30*time.Second), topic, key, []byte("o-1"), WithHeaders(hdrs...))
	must(t, err)
	if want, _ := KeyPartition(key, 2); p != want || off != 0 {
		t.Fatalf("published to %d@%d, want %d@0", p, off, want)
	}
	msgs, err := b.Poll(within(t, 10*time.Second), topic, "billing", p, 10)
	must(t, err)
	if len(msgs) != 1 {
		t.Fatalf("polled %d messages, want 1", len(msgs))
	}
	m := msgs[0]
	if m.Partition != p || m.Offset != off || !bytes.Equal(m.Key, key) || string(m.Value) != "o-1" || m.DeliveryCount != 1 {
		t.Errorf("polled %+v", m)
	}
	if len(m.Headers) != len(hdrs) {
		t.Fatalf("headers %v, want %v", m.Headers, hdrs)
	}
	for i, h := range m.Headers {
		if h.Key != hdrs[i].Key || !bytes.Equal(h.Value, hdrs[i].Value) {
			t.Errorf("header %d is %s=%q, want %s=%q", i, h.Key, h.Value, hdrs[i].Key, hdrs[i].Value)
		}
	}
	must(t, b.Ack(topic, "billing", p, off))
	gi, err := b.GroupInfo(topic, "billing", p)
	must(t, err)
	if gi.Committed != off+1 || gi.InFlight != 0 {
		t.Errorf("after the ack: %+v, want committed %d, nothing in flight", gi, off+1)
	}
	if _, err := b.Poll(noWait(), topic, "billing", p, 10); !errors.Is(err, ErrTimeout) {
		t.Errorf("poll after the ack: %v, want ErrTimeout", err)
	}

	// A member of a new group owns both partitions and starts at the end of the log: it gets
	// what is published after it joined, on each partition, and not o-1.
	member, err := b.Join(topic, "workers", MemberID("one"), SessionTimeout(5*time.Second))
	must(t, err)
	t.Cleanup(func() { member.Close() })
	if member.ID() != "one" {
		t.Errorf("member id %q", member.ID())
	}
	gen, parts, err := member.Assignment()
	must(t, err)
	if gen < 1 || !slices.Equal(parts, []int{0, 1}) {
		t.Fatalf("assignment: generation %d, partitions %v; want both partitions", gen, parts)
	}
	want := map[string]string{"w-1": "user-b", "w-2": "user-a"} // payload: key
	wantPart := map[string]int{}
	for _, payload := range []string{"w-1", "w-2"} {
		wp, _, err := b.Publish(within(t, 30*time.Second), topic, []byte(want[payload]), []byte(payload))
		must(t, err)
		wantPart[payload] = wp
	}
	if wantPart["w-1"] == wantPart["w-2"] {
		t.Fatalf("both keys went to partition %d: pick keys of different partitions", wantPart["w-1"])
	}
	seen := map[string]Message{}
	ctx := within(t, 20*time.Second)
	for len(seen) < len(want) {
		got, err := member.Poll(ctx, 10)
		if err != nil {
			t.Fatalf("member poll (seen %v, want %v): %v", slices.Collect(maps.Keys(seen)), wantPart, err)
		}
		for _, m := range got {
			if _, dup := seen[string(m.Value)]; dup {
				t.Fatalf("%s handed out twice", m.Value)
			}
			seen[string(m.Value)] = m
			must(t, member.Ack(m.Partition, m.Offset))
		}
	}
	for payload, key := range want {
		m, ok := seen[payload]
		if !ok || string(m.Key) != key || m.Partition != wantPart[payload] || m.Headers != nil || m.DeliveryCount != 1 {
			t.Errorf("member got %s as %+v (seen: %v)", payload, m, slices.Collect(maps.Keys(seen)))
		}
	}
	if extra, err := member.Poll(noWait(), 10); !errors.Is(err, ErrTimeout) {
		t.Errorf("member poll after w-1 and w-2: %v %v, want ErrTimeout", extra, err)
	}
	must(t, member.Close())

	must(t, b.DeleteTopic(topic))
	topics, err = b.Topics()
	must(t, err)
	if slices.Contains(topics, topic) {
		t.Errorf("Topics() = %v still lists %s", topics, topic)
	}
	if _, err := b.Poll(noWait(), topic, "billing", p, 1); !errors.Is(err, ErrNoGroup) && !errors.Is(err, ErrNoTopic) {
		t.Errorf("poll of the deleted topic: %v, want ErrNoGroup", err)
	}
}

// SubscriptionSessionTimeout reaches the Kafka client: a session timeout too long for it is
// refused, and with a usual one the push subscription's consumer joins the group and handles
// what is published after it opened.
func TestKafkaPushSessionTimeout(t *testing.T) {
	b := kafkaBroker(t)
	topic := uniqueTopic(t, b, "go-kafka-push")
	must(t, b.CreateTopic(topic, Partitions(2)))

	// Above librdkafka's limit (1 h): the client refuses it, naming the session timeout.
	// In-process two hours is a valid value.
	s, err := b.SubscribeFunc(topic, "too-long", func(*Message) error { return nil },
		SubscriptionSessionTimeout(2*time.Hour))
	if s != nil {
		s.Close()
		t.Fatal("a session timeout of two hours was accepted on the cluster")
	}
	var e *Error
	if !errors.As(err, &e) || !errors.Is(err, ErrInvalid) || !strings.Contains(strings.ToLower(e.Message), "session") {
		t.Errorf("a session timeout of two hours: %v; want the client's refusal (ErrInvalid)", err)
	}

	got := make(chan string, 1)
	s, err = b.SubscribeFunc(topic, "push", func(m *Message) error {
		got <- string(m.Value)
		return nil
	}, SubscriptionSessionTimeout(6*time.Second))
	must(t, err)
	_, _, err = b.Publish(within(t, 30*time.Second), topic, []byte("user-a"), []byte("p-1"))
	must(t, err)
	select {
	case v := <-got:
		if v != "p-1" {
			t.Errorf("handled %q, want p-1", v)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the message was not handled")
	}
	must(t, s.Close())
}
