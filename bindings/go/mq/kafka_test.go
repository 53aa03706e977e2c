package mq

import (
	"errors"
	"strings"
	"testing"
)

// What kafka_config's name=value lines cannot carry is refused by the binding, before the
// library (which, built without the backend, would answer ErrUnsupported).
func TestKafkaSettingsTheTextCannotCarry(t *testing.T) {
	cases := []struct {
		name     string
		opts     []Option
		mentions string
	}{
		{"empty name", []Option{WithKafkaConfig(map[string]string{"": "x"})}, "empty name"},
		{"'=' in a name", []Option{WithKafkaConfig(map[string]string{"a=b": "x"})}, `"a=b"`},
		{"line break in a name", []Option{WithKafkaConfig(map[string]string{"a\nb": "x"})}, `"a\nb"`},
		{"line break in a value", []Option{WithKafkaConfig(map[string]string{"client.id": "a\nacks=0"})}, "client.id"},
		{"NUL in a name", []Option{WithKafkaConfig(map[string]string{"a\x00": "x"})}, "NUL"},
		{"NUL in a value", []Option{WithKafkaConfig(map[string]string{"client.id": "a\x00b"})}, "NUL"},
		{"NUL in the bootstrap", []Option{WithKafka("127.0.0.1:1\x00,other:9092")}, "NUL"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, opts := range [][]Option{c.opts, append([]Option{WithKafka("127.0.0.1:1")}, c.opts...)} {
				b, err := NewBroker(opts...)
				if b != nil {
					b.Close()
				}
				e := wantStatus(t, err, ErrInvalid, StatusInvalid)
				if !strings.Contains(e.Message, c.mentions) || e.Op != "new broker" {
					t.Errorf("message %q does not name %s", e.Message, c.mentions)
				}
			}
		})
	}
}

// The settings are joined sorted by name, so one map always gives one text; options merge.
func TestKafkaConfigText(t *testing.T) {
	caller := map[string]string{"security.protocol": "ssl", "client.id": "billing", "sasl.password": "a=b"}
	var o brokerConfig
	for _, opt := range []Option{
		WithKafkaConfig(caller),
		WithKafkaConfig(map[string]string{"client.id": "orders", "acks": ""}),
		WithKafkaConfig(nil),
	} {
		opt(&o)
	}
	caller["linger.ms"] = "5" // after WithKafkaConfig: not seen
	for range 20 {            // a map's iteration order changes from one range to the next
		text, err := kafkaConfigText(o.kafka.settings)
		must(t, err)
		want := "acks=\nclient.id=orders\nsasl.password=a=b\nsecurity.protocol=ssl"
		if text != want {
			t.Fatalf("text %q, want %q", text, want)
		}
	}
	if text, err := kafkaConfigText(nil); text != "" || err != nil {
		t.Errorf("no settings: %q, %v", text, err)
	}
}

// Each status is matched by its own sentinel only; a status this package does not know yet is
// still an *Error with its number and no sentinel.
func TestStatusSentinelsAreExclusive(t *testing.T) {
	sentinels := map[Status]error{
		StatusTimeout: ErrTimeout, StatusFull: ErrFull, StatusClosed: ErrClosed,
		StatusCancelled: ErrCancelled, StatusRebalanced: ErrRebalanced, StatusInvalid: ErrInvalid,
		StatusNoTopic: ErrNoTopic, StatusNoGroup: ErrNoGroup, StatusExists: ErrExists,
		StatusPartition: ErrPartition, StatusTooLarge: ErrTooLarge,
		StatusNotInFlight: ErrNotInFlight, StatusOwned: ErrOwned, StatusDeadlock: ErrDeadlock,
		StatusNoMemory: ErrNoMemory, StatusInternal: ErrInternal,
		StatusOutOfRange: ErrOutOfRange, StatusFenced: ErrFenced,
		StatusUnsupported: ErrUnsupported, StatusBackend: ErrBackend,
	}
	if StatusUnsupported != 23 || StatusBackend != 24 {
		t.Fatalf("MQ_ERR_UNSUPPORTED %d, MQ_ERR_BACKEND %d (mq.h 1.2: 23, 24)", StatusUnsupported, StatusBackend)
	}
	// Up to 64: a status the library names (mq_status_name) but this package has no sentinel
	// for fails here.
	for s := StatusOK + 1; s <= 64; s++ {
		e := &Error{Op: "op", Status: s, Message: "detail"}
		if s == StatusPending {
			// Not an error status: an asynchronous call's "the callback will report".
			if s.String() != "MQ_PENDING" || s != 6 {
				t.Errorf("MQ_PENDING is %d %v (mq.h 1.4: 6)", int32(s), s)
			}
			continue
		}
		if _, known := sentinels[s]; known != (s.String() != "MQ_UNKNOWN_STATUS") {
			t.Errorf("status %d (%v): sentinel %v", s, s, known)
		}
		for other, sentinel := range sentinels {
			if errors.Is(e, sentinel) != (other == s) {
				t.Errorf("errors.Is(%v, sentinel of %v) = %v", e, other, !(other == s))
			}
		}
		if errors.Is(e, errors.ErrUnsupported) != (s == StatusUnsupported) {
			t.Errorf("errors.Is(%v, errors.ErrUnsupported) wrong", e)
		}
	}
	names := map[Status]string{StatusUnsupported: "MQ_ERR_UNSUPPORTED", StatusBackend: "MQ_ERR_BACKEND", StatusBackend + 1: "MQ_UNKNOWN_STATUS"}
	for s, name := range names {
		if s.String() != name {
			t.Errorf("status %d is %q, want %q", s, s.String(), name)
		}
	}
	if !strings.Contains((&Error{Op: "poll", Status: StatusBackend, Message: "broker down"}).Error(), "MQ_ERR_BACKEND: broker down") {
		t.Errorf("backend error text")
	}
}
