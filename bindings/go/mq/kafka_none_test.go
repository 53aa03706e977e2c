//go:build !mq_kafka

package mq

import (
	"errors"
	"strings"
	"testing"
)

// kafkaBuild: the package is built with -tags mq_kafka (the programs the tests build too).
const kafkaBuild = false

// The core this package compiles has no Kafka backend: a bootstrap reaches the library, which
// refuses it saying how to rebuild, with the build tag that turns the backend on.
func TestKafkaWithoutTheBackendIsUnsupported(t *testing.T) {
	// Nothing listens on port 1: a system libmq with the backend answers ErrBackend instead.
	opts := [][]Option{
		{WithKafka("127.0.0.1:1")},
		{WithKafka("127.0.0.1:1"), WithKafkaConfig(map[string]string{"client.id": "billing", "acks": "all"})},
	}
	for _, o := range opts {
		b, err := NewBroker(o...)
		if b != nil {
			b.Close()
			t.Fatalf("NewBroker with a Kafka bootstrap returned a broker")
		}
		var e *Error
		if systemBuild && errors.As(err, &e) && e.Status == StatusBackend {
			if e.Message == "" || !errors.Is(err, ErrBackend) {
				t.Errorf("backend error without a message or its sentinel: %v", err)
			}
			continue
		}
		e = wantStatus(t, err, ErrUnsupported, StatusUnsupported)
		// The message names the switch this user has: the build tag for the package's own
		// core (internal/core/kafka_hint.h), CMake's option for an installed libmq.
		hint, notHint := "the Go build tag mq_kafka (needs librdkafka)", "CMake"
		if systemBuild {
			hint, notHint = "-DMQ_KAFKA=ON (needs librdkafka)", "build tag"
		}
		if !strings.Contains(e.Message, hint) || strings.Contains(e.Message, notHint) || e.Op != "new broker" {
			t.Errorf("error %q does not say how to get the backend: want %q in it", e.Error(), hint)
		}
		if !strings.Contains(e.Error(), "MQ_ERR_UNSUPPORTED") {
			t.Errorf("Error() = %q", e.Error())
		}
		if !errors.Is(err, errors.ErrUnsupported) {
			t.Errorf("%v is not errors.ErrUnsupported", err)
		}
		if errors.Is(err, ErrBackend) || errors.Is(err, ErrInvalid) {
			t.Errorf("%v matches another status's sentinel", err)
		}
	}
	// Settings alone leave the broker in-process (the library ignores them).
	b := newBroker(t, WithKafkaConfig(map[string]string{"client.id": "billing"}))
	must(t, b.CreateTopic("t"))
}
