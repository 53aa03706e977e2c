package mq

import (
	"bytes"
	"fmt"
	"testing"
)

// big is a value of n bytes, distinct per i, so that a message read from the wrong place or
// overwritten by a later poll shows.
func big(i, n int) []byte {
	return bytes.Repeat([]byte{byte('a' + i%26)}, n)
}

// A message larger than the poll buffer: the first poll comes back MQ_ERR_TOO_LARGE, the
// buffer grows to what the library asks, and the poll is made again. Through Poll,
// PollBatch and a member's Poll, each message arrives whole, once, in order.
func TestPollGrowsForAMessageLargerThanTheBuffer(t *testing.T) {
	const size = 3 * copyStart
	b := newBroker(t)
	must(t, b.CreateTopic("t"))
	must(t, b.Subscribe("t", "g"))
	m, err := b.Join("t", "members")
	must(t, err)
	for i := 0; i < 3; i++ {
		if _, _, err := b.Publish(noWait(), "t", []byte("k"), big(i, size), WithHeaders(Header{"h", big(i, 7)})); err != nil {
			t.Fatal(err)
		}
	}
	check := func(how string, got []Message, next *int) {
		t.Helper()
		for _, msg := range got {
			i := *next
			if msg.Offset != int64(i) || !bytes.Equal(msg.Value, big(i, size)) || string(msg.Key) != "k" ||
				len(msg.Headers) != 1 || !bytes.Equal(msg.Headers[0].Value, big(i, 7)) || msg.DeliveryCount != 1 {
				t.Fatalf("%s: message %d is offset %d, %d bytes, delivery %d", how, i, msg.Offset, len(msg.Value), msg.DeliveryCount)
			}
			*next++
		}
	}
	var batch Batch
	polls := map[string]func() ([]Message, error){
		"Poll": func() ([]Message, error) { return b.Poll(noWait(), "t", "g", 0, 3) },
		"PollBatch": func() ([]Message, error) {
			err := b.PollBatch(noWait(), "t", "g", 0, 3, &batch)
			return batch.Messages, err
		},
		"Member.Poll": func() ([]Message, error) { return m.Poll(noWait(), 3) },
	}
	for how, poll := range polls {
		must(t, b.Seek("t", "g", 0, OffsetEarliest))
		next := 0
		for n := 0; next < 3; n++ {
			if n == 3 {
				t.Fatalf("%s: %d messages in 3 polls", how, next)
			}
			got, err := poll()
			must(t, err)
			if len(got) == 0 {
				t.Fatalf("%s: an empty poll", how)
			}
			check(how, got, &next)
		}
	}
}

// AckPoll whose poll finds a message larger than the buffer: the ack stands and the poll made
// again does not repeat it (a second ack of offset 0 would be refused as not in flight).
func TestAckPollOfALargeMessageAcksOnce(t *testing.T) {
	b := newBroker(t)
	must(t, b.CreateTopic("t"))
	must(t, b.Subscribe("t", "g"))
	m, err := b.Join("t", "members")
	must(t, err)
	publish(t, b, "t", nil, "small")
	if _, _, err := b.Publish(noWait(), "t", nil, big(1, 2*copyStart)); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Poll(noWait(), "t", "g", 0, 1); err != nil {
		t.Fatal(err)
	}
	var batch Batch
	must(t, b.AckPollBatch(noWait(), "t", "g", 0, 0, 5, &batch))
	if len(batch.Messages) != 1 || batch.Messages[0].Offset != 1 || !bytes.Equal(batch.Messages[0].Value, big(1, 2*copyStart)) {
		t.Fatalf("AckPollBatch: %d messages", len(batch.Messages))
	}
	if c := committed(t, b, "t", "g", 0); c != 1 {
		t.Fatalf("committed %d after the AckPoll, want 1", c)
	}

	if _, err := m.Poll(noWait(), 1); err != nil {
		t.Fatal(err)
	}
	got, err := m.AckPoll(noWait(), 0, 0, 5)
	must(t, err)
	if len(got) != 1 || got[0].Offset != 1 || len(got[0].Value) != 2*copyStart {
		t.Fatalf("member AckPoll: %d messages", len(got))
	}
	if c := committed(t, b, "t", "members", 0); c != 1 {
		t.Fatalf("member committed %d after the AckPoll, want 1", c)
	}
}

// Messages that fill the buffer before max: polls come back short while the buffer grows,
// and once it has, a poll hands out max of them.
func TestPollBufferGrowsToMax(t *testing.T) {
	const size, max = 40 << 10, 10
	b := newBroker(t)
	must(t, b.CreateTopic("t", Capacity(1000)))
	must(t, b.Subscribe("t", "g"))
	for i := 0; i < 100; i++ {
		if _, _, err := b.Publish(noWait(), "t", nil, big(i, size)); err != nil {
			t.Fatal(err)
		}
	}
	var batch Batch
	var counts []int
	next := 0
	for len(counts) < 10 && next < 100 {
		must(t, b.PollBatch(noWait(), "t", "g", 0, max, &batch))
		for _, m := range batch.Messages {
			if m.Offset != int64(next) || !bytes.Equal(m.Value, big(next, size)) {
				t.Fatalf("message %d: offset %d", next, m.Offset)
			}
			next++
		}
		counts = append(counts, len(batch.Messages))
		if len(batch.Messages) == max {
			return
		}
	}
	t.Fatalf("no poll handed out %d messages: %v", max, counts)
}

// Poll's messages are a copy of the pooled buffer the library wrote: later polls, which reuse
// that buffer, leave them as they were.
func TestPollMessagesOutliveLaterPolls(t *testing.T) {
	b := newBroker(t)
	must(t, b.CreateTopic("t"))
	must(t, b.Subscribe("t", "g"))
	for i := 0; i < 20; i++ {
		publish(t, b, "t", []byte(fmt.Sprint("key-", i)), string(big(i, 100)))
	}
	first, err := b.Poll(noWait(), "t", "g", 0, 10)
	must(t, err)
	for i := 0; i < 10; i++ {
		must(t, b.Seek("t", "g", 0, 10))
		if _, err := b.Poll(noWait(), "t", "g", 0, 10); err != nil {
			t.Fatal(err)
		}
	}
	for i, m := range first {
		if m.Offset != int64(i) || string(m.Key) != fmt.Sprint("key-", i) || !bytes.Equal(m.Value, big(i, 100)) {
			t.Fatalf("message %d changed: offset %d key %q", i, m.Offset, m.Key)
		}
	}
}
