package mq

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
)

// Every error carries the library's status and detail, and matches its sentinel (only its own).
func TestErrorsCarryStatusAndLibraryMessage(t *testing.T) {
	b := newBroker(t)
	must(t, b.CreateTopic("orders", Partitions(2), Capacity(1)))
	must(t, b.Subscribe("orders", "billing"))

	e := wantStatus(t, b.Ack("orders", "billing", 1, 7), ErrNotInFlight, StatusNotInFlight)
	if e.Message != "offset 7 is not in flight for billing (nothing is)" {
		t.Errorf("message %q", e.Message)
	}
	if e.Op != "ack" || !strings.Contains(e.Error(), e.Message) || !strings.Contains(e.Error(), "MQ_ERR_NOT_IN_FLIGHT") {
		t.Errorf("Error() = %q", e.Error())
	}
	if errors.Is(e, ErrFull) || errors.Is(e, ErrTimeout) {
		t.Errorf("%v matches another status's sentinel", e)
	}

	cases := []struct {
		name     string
		err      error
		sentinel error
		status   Status
	}{
		{"existing topic", b.CreateTopic("orders"), ErrExists, StatusExists},
		{"illegal topic name", b.CreateTopic("a/b"), ErrInvalid, StatusInvalid},
		{"empty topic name", b.CreateTopic(""), ErrInvalid, StatusInvalid},
		{"zero partitions", b.CreateTopic("z", Partitions(0)), ErrInvalid, StatusInvalid},
		{"partitions beyond int32", b.CreateTopic("z", Partitions(math.MaxInt32+1)), ErrInvalid, StatusInvalid},
		{"negative capacity", b.CreateTopic("z", Capacity(-1)), ErrInvalid, StatusInvalid},
		{"unknown retention", b.CreateTopic("z", WithRetention(7)), ErrInvalid, StatusInvalid},
		{"unknown topic", b.Subscribe("nosuch", "g"), ErrNoTopic, StatusNoTopic},
		{"existing group", b.Subscribe("orders", "billing"), ErrExists, StatusExists},
		{"unknown group", b.Ack("orders", "nosuch", 0, 0), ErrNoGroup, StatusNoGroup},
		{"partition out of range", b.Ack("orders", "billing", 2, 0), ErrPartition, StatusPartition},
		{"partition beyond int32", b.Ack("orders", "billing", math.MaxInt32+1, 0), ErrPartition, StatusPartition},
		{"negative nack delay", b.NackAfter("orders", "billing", 0, -1), ErrInvalid, StatusInvalid},
		{"seek outside the log", b.Seek("orders", "billing", 0, 5), ErrOutOfRange, StatusOutOfRange},
		{"extend with nothing in flight", b.ExtendLease("orders", "billing", 0), ErrNotInFlight, StatusNotInFlight},
		{"max deliveries without dead letters", b.Subscribe("orders", "dl", MaxDeliveries(3)), ErrInvalid, StatusInvalid},
		{"negative max deliveries", b.Subscribe("orders", "dl", MaxDeliveries(-1)), ErrInvalid, StatusInvalid},
		{"unknown start", b.Subscribe("orders", "dl", StartAt(9)), ErrInvalid, StatusInvalid},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := wantStatus(t, c.err, c.sentinel, c.status)
			if e.Message == "" {
				t.Errorf("no detail message")
			}
		})
	}
}

// A NUL byte cannot travel in a C string: refused before the call, never truncated into
// another (existing) name.
func TestNULInNamesIsRefused(t *testing.T) {
	b := newBroker(t)
	must(t, b.CreateTopic("a"))
	must(t, b.Subscribe("a", "g"))
	for _, err := range []error{
		b.CreateTopic("a\x00b"),
		b.Subscribe("a\x00", "g2"),
		b.Ack("a", "g\x00x", 0, 0),
		func() error { _, _, err := b.Publish(noWait(), "a\x00b", nil, []byte("x")); return err }(),
		func() error { _, err := b.Poll(noWait(), "a", "g\x00", 0, 1); return err }(),
	} {
		e := wantStatus(t, err, ErrInvalid, StatusInvalid)
		if !strings.Contains(e.Message, "NUL") {
			t.Errorf("message %q does not say why", e.Message)
		}
	}
	info, err := b.PartitionInfo("a", 0)
	must(t, err)
	if info.End != 0 {
		t.Errorf("a publish to \"a\\x00b\" reached topic a: end %d", info.End)
	}
}

func TestBadSizesAndCounts(t *testing.T) {
	b := newBroker(t, WithMaxMessageBytes(8))
	must(t, b.CreateTopic("t"))
	must(t, b.Subscribe("t", "g"))
	_, err := b.Poll(noWait(), "t", "g", 0, -1)
	wantStatus(t, err, ErrInvalid, StatusInvalid)
	_, err = b.Poll(noWait(), "t", "g", 0, 0)
	wantStatus(t, err, ErrInvalid, StatusInvalid)
	_, _, err = b.Publish(noWait(), "t", []byte("k"), []byte("12345678"))
	wantStatus(t, err, ErrTooLarge, StatusTooLarge)
	_, _, err = b.Publish(noWait(), "t", nil, []byte("1234"), WithHeaders(Header{Key: "h", Value: []byte("1234")}))
	wantStatus(t, err, ErrTooLarge, StatusTooLarge)
	_, err = b.PublishBatch(noWait(), "t", []Record{{Value: []byte("ok")}, {Value: []byte("123456789")}})
	wantStatus(t, err, ErrTooLarge, StatusTooLarge)
	if info, _ := b.PartitionInfo("t", 0); info.End != 0 {
		t.Errorf("a refused batch appended %d records", info.End)
	}
	_, err = NewBroker(WithMaxMessageBytes(-1))
	wantStatus(t, err, ErrInvalid, StatusInvalid)
	_, err = NewBroker(WithMaxMessageBytes(0))
	wantStatus(t, err, ErrInvalid, StatusInvalid)
	_, err = b.SubscribeFunc("t", "g", nil)
	wantStatus(t, err, ErrInvalid, StatusInvalid)
	_, err = b.SubscribeFunc("t", "g", func(*Message) error { return nil }, Prefetch(0))
	wantStatus(t, err, ErrInvalid, StatusInvalid)
	_, err = b.SubscribeFunc("t", "g", func(*Message) error { return nil }, OnPartitions(0, 0))
	wantStatus(t, err, ErrInvalid, StatusInvalid)
	_, err = KeyPartition([]byte("k"), 0)
	wantStatus(t, err, ErrInvalid, StatusInvalid)
	_, err = RoundRobin(4, 2, 2)
	wantStatus(t, err, ErrInvalid, StatusInvalid)
}

// Every call on a closed broker is ErrClosed, never a crash; Close is idempotent.
func TestClosedBroker(t *testing.T) {
	b, err := NewBroker()
	must(t, err)
	must(t, b.CreateTopic("t"))
	must(t, b.Subscribe("t", "g"))
	must(t, b.Close())
	must(t, b.Close())
	ctx := context.Background()
	calls := map[string]error{
		"create topic": b.CreateTopic("u"),
		"subscribe":    b.Subscribe("t", "h"),
		"unsubscribe":  b.Unsubscribe("t", "g"),
		"publish":      func() error { _, _, err := b.Publish(ctx, "t", nil, nil); return err }(),
		"batch":        func() error { _, err := b.PublishBatch(ctx, "t", []Record{{}}); return err }(),
		"poll":         func() error { _, err := b.Poll(ctx, "t", "g", 0, 1); return err }(),
		"ack":          b.Ack("t", "g", 0, 0),
		"nack":         b.Nack("t", "g", 0),
		"seek":         b.Seek("t", "g", 0, 0),
		"extend":       b.ExtendLease("t", "g", 0),
		"describe":     func() error { _, err := b.Describe("t", 0); return err }(),
		"topics":       func() error { _, err := b.Topics(); return err }(),
		"join":         func() error { _, err := b.Join("t", "g"); return err }(),
		"push":         func() error { _, err := b.SubscribeFunc("t", "g", func(*Message) error { return nil }); return err }(),
		"shutdown":     b.Shutdown(),
	}
	for name, err := range calls {
		if name == "shutdown" {
			if err != nil {
				t.Errorf("Shutdown after Close: %v", err)
			}
			continue
		}
		if !errors.Is(err, ErrClosed) {
			t.Errorf("%s after Close: %v, want ErrClosed", name, err)
		}
	}
}

// Shutdown closes without releasing: calls get the library's MQ_CLOSED, introspection works.
func TestShutdownKeepsIntrospection(t *testing.T) {
	b := newBroker(t)
	must(t, b.CreateTopic("t", Capacity(1)))
	must(t, b.Subscribe("t", "g"))
	publish(t, b, "t", nil, "a")
	must(t, b.Shutdown())
	must(t, b.Shutdown())
	_, _, err := b.Publish(noWait(), "t", nil, []byte("b"))
	e := wantStatus(t, err, ErrClosed, StatusClosed)
	if e.Message == "" {
		t.Errorf("no library message")
	}
	d, err := b.Describe("t", 0)
	must(t, err)
	if d != "log 0..0, backlog 1/1; g 0/0" {
		t.Errorf("describe after shutdown: %q", d)
	}
	topics, err := b.Topics()
	must(t, err)
	groups, err := b.Groups("t")
	must(t, err)
	if len(topics) != 1 || topics[0] != "t" || len(groups) != 1 || groups[0] != "g" {
		t.Errorf("topics %v groups %v", topics, groups)
	}
}

func TestVersionSkew(t *testing.T) {
	if err := CheckVersion(); err != nil {
		t.Fatalf("the linked library is incompatible with its own header: %v", err)
	}
	if Version() == "" || VersionNumber() < 1000000 {
		t.Errorf("version %q %d", Version(), VersionNumber())
	}
	// Publishers and cursors (mq_publisher, mq_cursor) since 1.7: shim.h refuses an older mq.h.
	if HeaderVersion < 1007000 || VersionNumber() < 1007000 {
		t.Errorf("header %d, library %d: the package needs mq 1.7", HeaderVersion, VersionNumber())
	}
	cases := []struct {
		compiled, runtime int
		ok                bool
	}{
		{1000000, 1000000, true},
		{1000000, 1002003, true},  // newer minor at run time
		{1002000, 1002000, true},  // same
		{1002005, 1002001, true},  // patch does not matter
		{1002000, 1001009, false}, // older minor at run time
		{1000000, 2000000, false}, // another major
		{2000000, 1009000, false},
		{1005000, 1004009, false}, // a 1.4 library under a 1.5 header
		{1006000, 1005009, false}, // a 1.5 library under a 1.6 header
		{1006000, 1006000, true},
		{1007000, 1006009, false}, // a 1.6 library under a 1.7 header
		{1007000, 1007000, true},
	}
	for _, c := range cases {
		err := compatible(c.compiled, c.runtime)
		if (err == nil) != c.ok {
			t.Errorf("compatible(%d, %d) = %v, want ok=%v", c.compiled, c.runtime, err, c.ok)
		}
		if err != nil && !errors.Is(err, ErrInvalid) {
			t.Errorf("skew error %v is not ErrInvalid", err)
		}
	}
}

func TestStatusNames(t *testing.T) {
	if StatusFull.String() != "MQ_FULL" || StatusFenced.String() != "MQ_ERR_FENCED" || Status(99).String() != "MQ_UNKNOWN_STATUS" {
		t.Errorf("names %v %v %v", StatusFull, StatusFenced, Status(99))
	}
}
