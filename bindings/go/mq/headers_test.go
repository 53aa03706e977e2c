package mq

import (
	"bytes"
	"testing"
)

// Headers travel in order, duplicates and empty names or values included, through Publish,
// PublishBatch, Poll, PollBatch and push handlers.
func TestHeadersRoundTrip(t *testing.T) {
	b := newBroker(t)
	must(t, b.CreateTopic("t"))
	must(t, b.Subscribe("t", "g"))
	hs := []Header{{"trace", []byte("t-1")}, {"dup", []byte("1")}, {"dup", []byte("2")}, {"", []byte("no-name")}, {"no-value", nil}}
	_, _, err := b.Publish(noWait(), "t", []byte("k"), []byte("one"), WithHeaders(hs...))
	must(t, err)
	_, err = b.PublishBatch(noWait(), "t", []Record{{Value: []byte("two"), Headers: hs[:2]}, {Value: []byte("three")}})
	must(t, err)
	var into Batch
	must(t, b.PollBatch(noWait(), "t", "g", 0, 10, &into))
	want := [][]Header{hs, hs[:2], nil}
	if len(into.Messages) != 3 {
		t.Fatalf("polled %v", values(into.Messages))
	}
	for i, m := range into.Messages {
		if len(m.Headers) != len(want[i]) {
			t.Fatalf("message %d: headers %v, want %v", i, m.Headers, want[i])
		}
		for j, h := range m.Headers {
			if h.Key != want[i][j].Key || !bytes.Equal(h.Value, want[i][j].Value) {
				t.Errorf("message %d header %d: %q=%q, want %q=%q", i, j, h.Key, h.Value, want[i][j].Key, want[i][j].Value)
			}
		}
	}
	got := make(chan []Header, 1)
	sub, err := b.SubscribeFunc("t", "push", func(m *Message) error { got <- m.Headers; return nil }, Prefetch(1))
	must(t, err)
	_, _, err = b.Publish(noWait(), "t", nil, []byte("four"), WithHeaders(hs[0]))
	must(t, err)
	if h := <-got; len(h) != 1 || h[0].Key != "trace" || string(h[0].Value) != "t-1" {
		t.Errorf("push handler saw headers %v", h)
	}
	must(t, sub.Close())
}
