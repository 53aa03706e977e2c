package mq

import (
	"context"
	"errors"
	"testing"
	"time"
)

// newBroker returns a broker closed when the test ends.
func newBroker(t testing.TB, opts ...Option) *Broker {
	t.Helper()
	b, err := NewBroker(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return b
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// noWait is a context whose deadline has passed: calls do not block.
func noWait() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 0)
	cancel()
	return ctx
}

// within is a context that ends the test's waits after d.
func within(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// wantStatus checks that err is an *Error of status s that errors.Is matches with sentinel.
func wantStatus(t testing.TB, err error, sentinel error, s Status) *Error {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("got %v, want an *mq.Error with %v", err, s)
	}
	if e.Status != s {
		t.Fatalf("got status %v (%v), want %v", e.Status, err, s)
	}
	if !errors.Is(err, sentinel) {
		t.Fatalf("errors.Is(%v, %v) is false", err, sentinel)
	}
	return e
}

// eventually waits for cond, polling, for at most 10 s.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// publishN publishes payloads on topic without a key and without waiting.
func publish(t testing.TB, b *Broker, topic string, key []byte, values ...string) {
	t.Helper()
	for _, v := range values {
		if _, _, err := b.Publish(noWait(), topic, key, []byte(v)); err != nil {
			t.Fatalf("publish %s: %v", v, err)
		}
	}
}

func values(msgs []Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = string(m.Value)
	}
	return out
}
