package mq

import (
	"context"
	"errors"
	"math"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/mqlib/mq/bindings/go/internal/waithook"
)

// Publishers and cursors (library 1.7): the named calls without the lookups.

func openPublisher(t *testing.T, b *Broker, topic string) *Publisher {
	t.Helper()
	p, err := b.Publisher(topic)
	must(t, err)
	t.Cleanup(func() { p.Close() })
	return p
}

func openCursor(t *testing.T, b *Broker, topic, group string, partition int) *Cursor {
	t.Helper()
	c, err := b.Cursor(topic, group, partition)
	must(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// blocking returns a context whose handle calls signal on the channel as they are about to
// make their (blocking) library call: the test then knows the call is in, without sleeping.
func blocking(ctx context.Context) (context.Context, chan struct{}) {
	in := make(chan struct{}, 1)
	return waithook.With(ctx, func() {
		select {
		case in <- struct{}{}:
		default:
		}
	}), in
}

func TestHandlesRoundTrip(t *testing.T) {
	b := newBroker(t)
	must(t, b.CreateTopic("orders", Partitions(2)))
	must(t, b.Subscribe("orders", "billing"))
	p := openPublisher(t, b, "orders")
	c0 := openCursor(t, b, "orders", "billing", 0)
	if p.Topic() != "orders" || c0.Topic() != "orders" || c0.Group() != "billing" || c0.Partition() != 0 {
		t.Fatalf("accessors: %q %q %q %d", p.Topic(), c0.Topic(), c0.Group(), c0.Partition())
	}
	ctx := within(t, 10*time.Second)
	// Keyless: round-robin, as the named publish.
	part, off, err := p.Publish(ctx, nil, []byte("a"), WithHeaders(Header{"h", []byte("v")}))
	must(t, err)
	if part != 0 || off != 0 {
		t.Fatalf("first publish went to %d:%d", part, off)
	}
	res, err := p.PublishBatch(ctx, []Record{{Value: []byte("b")}, {Value: []byte("c")}})
	must(t, err)
	if len(res) != 2 || res[0] != (PublishResult{1, 0}) || res[1] != (PublishResult{0, 1}) {
		t.Fatalf("batch results %v", res)
	}
	kp, err := KeyPartition([]byte("k"), 2)
	must(t, err)
	if part, _, err := p.Publish(ctx, []byte("k"), []byte("d")); err != nil || part != kp {
		t.Fatalf("keyed publish went to %d (%v), want %d", part, err, kp)
	}

	msgs, err := c0.Poll(ctx, 1)
	must(t, err)
	if len(msgs) != 1 || string(msgs[0].Value) != "a" || len(msgs[0].Headers) != 1 || msgs[0].Headers[0].Key != "h" ||
		string(msgs[0].Headers[0].Value) != "v" || msgs[0].DeliveryCount != 1 {
		t.Fatalf("cursor poll: %+v", msgs)
	}
	// The cursor and the named calls share the group's position.
	named, err := b.Poll(ctx, "orders", "billing", 0, 1)
	must(t, err)
	if values(named)[0] != "c" || named[0].Offset != 1 {
		t.Fatalf("named poll after the cursor's: %+v", named)
	}
	must(t, c0.Ack(0))
	gi, err := b.GroupInfo("orders", "billing", 0)
	must(t, err)
	if gi.Committed != 1 || gi.InFlight != 1 {
		t.Fatalf("after the cursor's ack: committed %d, in flight %d", gi.Committed, gi.InFlight)
	}
	var batch Batch
	err = c0.AckPollBatch(noWait(), 1, 10, &batch)
	if kp == 0 {
		must(t, err)
	} else {
		wantStatus(t, err, ErrTimeout, StatusTimeout) // the ack stands
	}
	msgs, err = c0.AckPoll(noWait(), 1, 10) // acked already: refused, nothing polled
	wantStatus(t, err, ErrNotInFlight, StatusNotInFlight)
	if msgs != nil {
		t.Fatalf("a refused ack polled %v", msgs)
	}
	gi, err = b.GroupInfo("orders", "billing", 0)
	must(t, err)
	if gi.Committed != 2 || len(batch.Messages) != 1-kp {
		t.Fatalf("after ack poll: committed %d, polled %v", gi.Committed, values(batch.Messages))
	}
	c1 := openCursor(t, b, "orders", "billing", 1)
	must(t, c1.PollBatch(ctx, 10, &batch))
	if len(batch.Messages) != 1+kp || string(batch.Messages[0].Value) != "b" {
		t.Fatalf("partition 1: %v", values(batch.Messages))
	}
}

func TestHandleErrors(t *testing.T) {
	b := newBroker(t, WithMaxMessageBytes(8))
	must(t, b.CreateTopic("t"))
	must(t, b.Subscribe("t", "g"))
	for _, c := range []struct {
		name   string
		err    error
		target error
		status Status
	}{
		{"publisher, illegal name", second(b.Publisher("bad name")), ErrInvalid, StatusInvalid},
		{"publisher, NUL byte", second(b.Publisher("t\x00")), ErrInvalid, StatusInvalid},
		{"publisher, no topic", second(b.Publisher("nothing")), ErrNoTopic, StatusNoTopic},
		{"cursor, no topic", second(b.Cursor("nothing", "g", 0)), ErrNoTopic, StatusNoTopic},
		{"cursor, illegal group", second(b.Cursor("t", "bad name", 0)), ErrInvalid, StatusInvalid},
		{"cursor, no group", second(b.Cursor("t", "nobody", 0)), ErrNoGroup, StatusNoGroup},
		{"cursor, partition", second(b.Cursor("t", "g", 1)), ErrPartition, StatusPartition},
		{"cursor, partition beyond int32", second(b.Cursor("t", "g", math.MaxInt32+1)), ErrPartition, StatusPartition},
	} {
		t.Run(c.name, func(t *testing.T) { wantStatus(t, c.err, c.target, c.status) })
	}
	p := openPublisher(t, b, "t")
	c := openCursor(t, b, "t", "g", 0)
	_, _, err := p.Publish(noWait(), nil, []byte("too large"))
	e := wantStatus(t, err, ErrTooLarge, StatusTooLarge)
	if e.Op != "publish" || e.Message == "" {
		t.Errorf("error %q: want op publish and the library's text", e)
	}
	_, _, err = p.Publish(noWait(), nil, nil, WithDelay(-time.Millisecond))
	wantStatus(t, err, ErrInvalid, StatusInvalid)
	_, err = c.Poll(noWait(), -1)
	wantStatus(t, err, ErrInvalid, StatusInvalid)
	_, err = c.Poll(noWait(), 0)
	wantStatus(t, err, ErrInvalid, StatusInvalid)
	_, err = c.Poll(noWait(), 1)
	wantStatus(t, err, ErrTimeout, StatusTimeout)
	e = wantStatus(t, c.Ack(7), ErrNotInFlight, StatusNotInFlight)
	if !strings.Contains(e.Message, "not in flight") {
		t.Errorf("ack error without the library's text: %q", e)
	}

	// The cursor holds its group: unsubscribed, it says so even once the name is back.
	must(t, b.Unsubscribe("t", "g"))
	_, err = c.Poll(noWait(), 1)
	wantStatus(t, err, ErrNoGroup, StatusNoGroup)
	must(t, b.Subscribe("t", "g"))
	wantStatus(t, c.Ack(0), ErrNoGroup, StatusNoGroup)
	c2 := openCursor(t, b, "t", "g", 0)

	// Both hold their topic: deleted, they say so even once the name is back.
	must(t, b.DeleteTopic("t"))
	_, _, err = p.Publish(noWait(), nil, []byte("x"))
	wantStatus(t, err, ErrNoTopic, StatusNoTopic)
	must(t, b.CreateTopic("t"))
	_, err = p.PublishBatch(noWait(), []Record{{Value: []byte("x")}})
	wantStatus(t, err, ErrNoTopic, StatusNoTopic)
	_, err = c2.Poll(noWait(), 1)
	wantStatus(t, err, ErrNoTopic, StatusNoTopic)
	p2 := openPublisher(t, b, "t")
	if _, _, err := p2.Publish(noWait(), nil, []byte("y")); err != nil {
		t.Fatalf("a new publisher on the new topic: %v", err)
	}

	// After the broker's Shutdown the library answers MQ_CLOSED; after its Close too.
	must(t, b.Shutdown())
	_, _, err = p2.Publish(noWait(), nil, []byte("z"))
	wantStatus(t, err, ErrClosed, StatusClosed)
	_, err = b.Publisher("t")
	wantStatus(t, err, ErrClosed, StatusClosed)
	must(t, b.Close())
	_, err = p2.PublishBatch(noWait(), []Record{{Value: []byte("z")}})
	wantStatus(t, err, ErrClosed, StatusClosed)
	wantStatus(t, c2.Ack(0), ErrClosed, StatusClosed)
	_, err = b.Cursor("t", "g", 0)
	wantStatus(t, err, ErrClosed, StatusClosed)
}

func second[T any](_ T, err error) error { return err }

// waitFreed waits, collecting garbage, until the live publishers and cursors are back to n.
func waitFreed(t *testing.T, n int64) {
	t.Helper()
	eventually(t, "the handles to be freed", func() bool {
		runtime.GC()
		return liveCHandles.Load() == n
	})
}

func TestHandleCloseOrders(t *testing.T) {
	base := liveCHandles.Load()
	setup := func() (*Broker, *Publisher, *Cursor) {
		b, err := NewBroker()
		must(t, err)
		must(t, b.CreateTopic("t"))
		must(t, b.Subscribe("t", "g"))
		p, err := b.Publisher("t")
		must(t, err)
		c, err := b.Cursor("t", "g", 0)
		must(t, err)
		return b, p, c
	}
	closed := func(p *Publisher, c *Cursor, what string) {
		t.Helper()
		_, _, err := p.Publish(noWait(), nil, []byte("x"))
		wantStatus(t, err, ErrClosed, StatusClosed)
		_, err = c.Poll(noWait(), 1)
		e := wantStatus(t, err, ErrClosed, StatusClosed)
		if what != "" && e.Message != "the "+what+" was closed" {
			t.Errorf("message %q", e.Message)
		}
	}

	t.Run("handles, then the broker; twice", func(t *testing.T) {
		b, p, c := setup()
		must(t, p.Close())
		must(t, c.Close())
		must(t, p.Close())
		must(t, c.Close())
		closed(p, c, "")
		wantStatus(t, c.Ack(0), ErrClosed, StatusClosed)
		must(t, b.Close())
		waitFreed(t, base)
	})
	t.Run("the broker, then the handles", func(t *testing.T) {
		b, p, c := setup()
		must(t, b.Close())
		must(t, b.Close())
		closed(p, c, "")
		must(t, p.Close())
		must(t, c.Close())
		closed(p, c, "cursor")
		waitFreed(t, base)
	})
	t.Run("the broker collected, then the handles", func(t *testing.T) {
		_, p, c := setup() // the broker is dropped without Close
		eventually(t, "the broker to be collected and freed", func() bool {
			runtime.GC()
			_, err := c.Poll(noWait(), 1)
			return errors.Is(err, ErrClosed)
		})
		closed(p, c, "")
		must(t, p.Close())
		must(t, c.Close())
		waitFreed(t, base)
	})
	t.Run("the handles collected, then the broker", func(t *testing.T) {
		b, _, _ := setup()
		waitFreed(t, base)
		must(t, b.Close())
	})
	t.Run("everything collected", func(t *testing.T) {
		setup()
		waitFreed(t, base)
	})
}

func TestCursorPollWakes(t *testing.T) {
	for _, c := range []struct {
		name string
		wake func(b *Broker, p *Publisher, cur *Cursor)
		want error // nil: the message
	}{
		{"a publish through the publisher", func(_ *Broker, p *Publisher, _ *Cursor) {
			if _, _, err := p.Publish(context.Background(), nil, []byte("m")); err != nil {
				t.Error(err)
			}
		}, nil},
		{"a named publish", func(b *Broker, _ *Publisher, _ *Cursor) { publish(t, b, "t", nil, "m") }, nil},
		{"the broker's Shutdown", func(b *Broker, _ *Publisher, _ *Cursor) { b.Shutdown() }, ErrClosed},
		{"the broker's Close", func(b *Broker, _ *Publisher, _ *Cursor) { b.Close() }, ErrClosed},
		{"the cursor's Close", func(_ *Broker, _ *Publisher, cur *Cursor) { cur.Close() }, ErrClosed},
	} {
		for _, cancellable := range []bool{false, true} {
			name := c.name
			if cancellable {
				name += ", cancellable context"
			}
			t.Run(name, func(t *testing.T) {
				b := newBroker(t)
				must(t, b.CreateTopic("t"))
				must(t, b.Subscribe("t", "g"))
				p := openPublisher(t, b, "t")
				cur := openCursor(t, b, "t", "g", 0)
				ctx := context.Background()
				if cancellable {
					var cancel context.CancelFunc
					ctx, cancel = context.WithCancel(ctx)
					defer cancel()
				}
				ctx, in := blocking(ctx)
				type result struct {
					msgs []Message
					err  error
				}
				done := make(chan result, 1)
				go func() {
					msgs, err := cur.Poll(ctx, 1)
					done <- result{msgs, err}
				}()
				<-in
				c.wake(b, p, cur)
				select {
				case r := <-done:
					if c.want == nil {
						if r.err != nil || len(r.msgs) != 1 || string(r.msgs[0].Value) != "m" {
							t.Fatalf("woken poll: %v %v", values(r.msgs), r.err)
						}
					} else if !errors.Is(r.err, c.want) {
						t.Fatalf("woken poll: %v, want %v", r.err, c.want)
					}
				case <-time.After(10 * time.Second):
					t.Fatal("the poll was not woken")
				}
			})
		}
	}
}

func TestHandleContexts(t *testing.T) {
	b := newBroker(t)
	must(t, b.CreateTopic("t", Capacity(1)))
	must(t, b.Subscribe("t", "g"))
	p := openPublisher(t, b, "t")
	c := openCursor(t, b, "t", "g", 0)

	ctx, cancel := context.WithCancel(context.Background())
	ctx, in := blocking(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := c.Poll(ctx, 1)
		done <- err
	}()
	<-in
	cancel()
	err := <-done
	wantStatus(t, err, ErrCancelled, StatusCancelled)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("%v does not match context.Canceled", err)
	}

	short, stop := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer stop()
	_, err = c.Poll(short, 1)
	wantStatus(t, err, ErrTimeout, StatusTimeout)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("%v does not match context.DeadlineExceeded", err)
	}

	// A publisher waiting for room: woken by an ack through the cursor, then ended by Close.
	_, _, err = p.Publish(noWait(), nil, []byte("1"))
	must(t, err)
	_, _, err = p.Publish(noWait(), nil, []byte("2"))
	wantStatus(t, err, ErrFull, StatusFull)
	wait, in := blocking(context.Background())
	go func() {
		_, _, err := p.Publish(wait, nil, []byte("2"))
		done <- err
	}()
	<-in
	msgs, err := c.Poll(noWait(), 1)
	must(t, err)
	must(t, c.Ack(msgs[0].Offset))
	must(t, <-done)
	go func() {
		_, err := p.PublishBatch(wait, []Record{{Value: []byte("3")}})
		done <- err
	}()
	<-in
	must(t, p.Close())
	wantStatus(t, <-done, ErrClosed, StatusClosed)
}

// A share group through cursors: two polls of one partition acquire different messages, and
// Ack accepts one message.
func TestCursorShareGroup(t *testing.T) {
	b := newBroker(t)
	must(t, b.CreateTopic("jobs"))
	must(t, b.Subscribe("jobs", "workers", Share(ShareAll)))
	publish(t, b, "jobs", nil, "a", "b")
	c1 := openCursor(t, b, "jobs", "workers", 0)
	c2 := openCursor(t, b, "jobs", "workers", 0)
	m1, err := c1.Poll(noWait(), 1)
	must(t, err)
	m2, err := c2.Poll(noWait(), 1)
	must(t, err)
	if len(m1) != 1 || len(m2) != 1 || m1[0].Offset == m2[0].Offset {
		t.Fatalf("share polls: %v %v", values(m1), values(m2))
	}
	must(t, c2.Ack(m2[0].Offset))
	gi, err := b.GroupInfo("jobs", "workers", 0)
	must(t, err)
	if gi.Acquired != 1 {
		t.Fatalf("acquired %d after one accept", gi.Acquired)
	}
	must(t, b.Settle("jobs", "workers", 0, m1[0].Offset, m1[0].DeliveryCount, SettleAccept))
	gi, err = b.GroupInfo("jobs", "workers", 0)
	must(t, err)
	if gi.Committed != 2 || gi.Acquired != 0 {
		t.Fatalf("after both settled: committed %d, acquired %d", gi.Committed, gi.Acquired)
	}
}

// A delayed message through a publisher is a batch of one, as through the broker.
func TestPublisherDelay(t *testing.T) {
	clock := NewManualClock(1_000_000_000)
	b := newBroker(t, WithClock(clock))
	must(t, b.CreateTopic("t"))
	must(t, b.Subscribe("t", "g"))
	p := openPublisher(t, b, "t")
	c := openCursor(t, b, "t", "g", 0)
	_, off, err := p.Publish(noWait(), nil, []byte("later"), WithDelay(time.Second))
	must(t, err)
	_, err = c.Poll(noWait(), 1)
	wantStatus(t, err, ErrTimeout, StatusTimeout)
	clock.Advance(time.Second)
	msgs, err := c.Poll(noWait(), 1)
	must(t, err)
	if len(msgs) != 1 || msgs[0].Offset != off {
		t.Fatalf("due message: %v", msgs)
	}
}
