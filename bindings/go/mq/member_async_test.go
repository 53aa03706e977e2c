package mq

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A Member's Poll, PollBatch, AckPoll and AckPollBatch wait as a Broker's do (async.go): the
// library's asynchronous member polls, the goroutine parked on a channel. These tests wait for
// the goroutines to be parked (the parked counter, async_test.go) instead of sleeping.

// goMemberPoll runs m.Poll on a goroutine and returns where its result goes.
func goMemberPoll(m *Member, ctx context.Context, max int) chan callResult {
	ch := make(chan callResult, 1)
	go func() {
		msgs, err := m.Poll(ctx, max)
		ch <- callResult{msgs, err}
	}()
	return ch
}

// joinSeen joins a member and marks its first assignment seen.
func joinSeen(t testing.TB, b *Broker, topic, group string, opts ...MemberOption) (*Member, []int) {
	t.Helper()
	m, err := b.Join(topic, group, opts...)
	must(t, err)
	_, parts, err := m.Assignment()
	must(t, err)
	return m, parts
}

// A member owning three partitions waits on all of them: a publish to any one completes its
// pending poll, with that partition's message. Each of the four calls waits so.
func TestAsyncMemberPollCompletedByPublish(t *testing.T) {
	const parts = 3
	b := newBroker(t)
	must(t, b.CreateTopic("t", Partitions(parts)))
	m, owned := joinSeen(t, b, "t", "g")
	if len(owned) != parts {
		t.Fatalf("assignment %v", owned)
	}
	var batch Batch
	calls := []struct {
		name string
		call func(ctx context.Context, acked int64) ([]Message, error)
	}{
		{"Poll", func(ctx context.Context, _ int64) ([]Message, error) { return m.Poll(ctx, 10) }},
		{"PollBatch", func(ctx context.Context, _ int64) ([]Message, error) {
			err := m.PollBatch(ctx, 10, &batch)
			return batch.Messages, err
		}},
		{"AckPoll", func(ctx context.Context, acked int64) ([]Message, error) { return m.AckPoll(ctx, 1, acked, 10) }},
		{"AckPollBatch", func(ctx context.Context, acked int64) ([]Message, error) {
			err := m.AckPollBatch(ctx, 1, acked, 10, &batch)
			return batch.Messages, err
		}},
	}
	acked := int64(-1) // the last offset handed out on partition 1, acked by the next call
	for i, c := range calls {
		p := (i + 2) % parts // partitions 2, 0, 1, 2: the one it waits on is not the first it looks at
		ack := c.name == "AckPoll" || c.name == "AckPollBatch"
		if ack {
			// Something in flight on partition 1 for the ack to ack.
			publish(t, b, "t", keyFor(t, 1, parts), "in flight")
			msgs, err := m.Poll(noWait(), 10)
			must(t, err)
			if len(msgs) != 1 || msgs[0].Partition != 1 {
				t.Fatalf("%s: setup poll %+v", c.name, msgs)
			}
			acked = msgs[0].Offset
		}
		base := parked.Load()
		ch := make(chan callResult, 1)
		go func() {
			msgs, err := c.call(context.Background(), acked)
			ch <- callResult{msgs, err}
		}()
		waitParked(t, base, 1)
		if ack {
			// The ack was made before the wait, and stands while the poll waits.
			if gi, err := b.GroupInfo("t", "g", 1); err != nil || gi.Committed != acked+1 || gi.InFlight != 0 {
				t.Fatalf("%s: while it waits: %+v %v", c.name, gi, err)
			}
		}
		value := fmt.Sprintf("%s on %d", c.name, p)
		key := keyFor(t, p, parts)
		if _, _, err := b.Publish(context.Background(), "t", key, []byte(value), WithHeaders(Header{"h", []byte("v")})); err != nil {
			t.Fatal(err)
		}
		r := receive(t, c.name, ch)
		must(t, r.err)
		if len(r.msgs) != 1 || string(r.msgs[0].Value) != value || r.msgs[0].Partition != p ||
			!bytes.Equal(r.msgs[0].Key, key) || len(r.msgs[0].Headers) != 1 {
			t.Fatalf("%s got %+v", c.name, r.msgs)
		}
		must(t, m.Ack(p, r.msgs[0].Offset))
	}
	must(t, m.Close())
}

// A message larger than the waiting poll's C buffer (64 KiB at most) still arrives whole (it
// is polled again, at once, into Go memory).
func TestAsyncMemberPollOfALargeMessage(t *testing.T) {
	b := newBroker(t, WithMaxMessageBytes(1<<20))
	must(t, b.CreateTopic("t", Partitions(2)))
	m, _ := joinSeen(t, b, "t", "g")
	big := bytes.Repeat([]byte("x"), 200<<10)
	for _, reuse := range []bool{false, true} {
		base := parked.Load()
		ch := make(chan callResult, 1)
		var into Batch
		go func() {
			if reuse {
				err := m.PollBatch(context.Background(), 1, &into)
				ch <- callResult{into.Messages, err}
				return
			}
			msgs, err := m.Poll(context.Background(), 1)
			ch <- callResult{msgs, err}
		}()
		waitParked(t, base, 1)
		if _, _, err := b.Publish(context.Background(), "t", nil, big); err != nil {
			t.Fatal(err)
		}
		r := receive(t, "the pending member poll", ch)
		must(t, r.err)
		if len(r.msgs) != 1 || !bytes.Equal(r.msgs[0].Value, big) {
			t.Fatalf("reuse %v: got %d messages", reuse, len(r.msgs))
		}
		must(t, m.Ack(r.msgs[0].Partition, r.msgs[0].Offset))
	}
}

// A join changes the generation: the pending poll ends with ErrRebalanced, nothing handed out.
// After Assignment it waits again, on its own partitions only: a publish to the other member's
// partition is the other member's.
func TestAsyncMemberPollRebalanced(t *testing.T) {
	b := newBroker(t)
	must(t, b.CreateTopic("t", Partitions(2)))
	a, _ := joinSeen(t, b, "t", "g", MemberID("a"))
	base := parked.Load()
	ch := goMemberPoll(a, context.Background(), 1)
	waitParked(t, base, 1)
	other, otherParts := joinSeen(t, b, "t", "g", MemberID("b"))
	wantStatus(t, receive(t, "the pending poll", ch).err, ErrRebalanced, StatusRebalanced)
	gen, mine, err := a.Assignment()
	must(t, err)
	if gen != 2 || len(mine) != 1 || len(otherParts) != 1 || mine[0] == otherParts[0] {
		t.Fatalf("generation %d: a %v, b %v", gen, mine, otherParts)
	}

	base = parked.Load()
	ch = goMemberPoll(a, context.Background(), 1)
	waitParked(t, base, 1)
	publish(t, b, "t", keyFor(t, otherParts[0], 2), "theirs")
	msgs, err := other.Poll(within(t, 10*time.Second), 1)
	must(t, err)
	if len(msgs) != 1 || string(msgs[0].Value) != "theirs" {
		t.Fatalf("the other member got %+v", msgs)
	}
	select {
	case r := <-ch:
		t.Fatalf("a publish to the other member's partition completed the poll: %+v %v", r.msgs, r.err)
	default:
	}
	publish(t, b, "t", keyFor(t, mine[0], 2), "ours")
	r := receive(t, "the pending poll", ch)
	must(t, r.err)
	if len(r.msgs) != 1 || string(r.msgs[0].Value) != "ours" || r.msgs[0].Partition != mine[0] {
		t.Fatalf("a got %+v", r.msgs)
	}

	// The other member leaving rebalances too; an AckPoll's ack stands.
	base = parked.Load()
	ackCh := make(chan callResult, 1)
	go func() {
		msgs, err := a.AckPoll(context.Background(), mine[0], r.msgs[0].Offset, 1)
		ackCh <- callResult{msgs, err}
	}()
	waitParked(t, base, 1)
	must(t, other.Close())
	wantStatus(t, receive(t, "the pending ack poll", ackCh).err, ErrRebalanced, StatusRebalanced)
	if gi, err := b.GroupInfo("t", "g", mine[0]); err != nil || gi.Committed != r.msgs[0].Offset+1 {
		t.Fatalf("the ack of the rebalanced AckPoll: %+v %v", gi, err)
	}
	must(t, a.Close())
}

// A pending poll keeps its member calling: its session does not run out while it waits.
func TestAsyncMemberPollKeepsTheSession(t *testing.T) {
	clock := NewManualClock(1_000_000_000)
	b := newBroker(t, WithClock(clock))
	must(t, b.CreateTopic("t", Partitions(2)))
	a, _ := joinSeen(t, b, "t", "g", SessionTimeout(time.Second))
	base := parked.Load()
	ch := goMemberPoll(a, context.Background(), 1)
	waitParked(t, base, 1)
	clock.Advance(5 * time.Second)
	// The join reaps the group's expired members: not a, which is waiting.
	joinSeen(t, b, "t", "g")
	wantStatus(t, receive(t, "the pending poll", ch).err, ErrRebalanced, StatusRebalanced)
	_, parts, err := a.Assignment()
	must(t, err)
	if len(parts) != 1 {
		t.Fatalf("a after the join: %v", parts)
	}
}

// Cancelling the context ends each kind of pending member poll with ErrCancelled (also
// context.Canceled); a deadline with ErrTimeout (also context.DeadlineExceeded). The recycled
// tokens are not stale.
func TestAsyncMemberPollCancelAndDeadline(t *testing.T) {
	b := newBroker(t)
	must(t, b.CreateTopic("t", Partitions(2)))
	m, _ := joinSeen(t, b, "t", "g")
	publish(t, b, "t", keyFor(t, 0, 2), "in flight")
	msgs, err := m.Poll(noWait(), 1)
	must(t, err)
	acked := msgs[0].Offset
	calls := map[string]func(ctx context.Context) error{
		"Poll": func(ctx context.Context) error { _, err := m.Poll(ctx, 1); return err },
		"PollBatch": func(ctx context.Context) error {
			var into Batch
			return m.PollBatch(ctx, 1, &into)
		},
		"AckPoll": func(ctx context.Context) error {
			// The first round acks what is in flight; later ones ack it again: ErrNotInFlight,
			// at once. So only the first AckPoll waits.
			_, err := m.AckPoll(ctx, 0, acked, 1)
			return err
		},
	}
	for round := 0; round < 3; round++ {
		for name, call := range calls {
			if name == "AckPoll" && round > 0 {
				wantStatus(t, call(context.Background()), ErrNotInFlight, StatusNotInFlight)
				continue
			}
			base := parked.Load()
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- call(ctx) }()
			waitParked(t, base, 1)
			cancel()
			select {
			case err := <-done:
				wantStatus(t, err, ErrCancelled, StatusCancelled)
				if !errors.Is(err, context.Canceled) {
					t.Errorf("%s: %v does not match context.Canceled", name, err)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("cancelled %s did not return", name)
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	_, err = m.Poll(ctx, 1)
	wantStatus(t, err, ErrTimeout, StatusTimeout)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("%v does not match DeadlineExceeded", err)
	}
	must(t, m.Close())
}

// Closing the member ends its pending polls with ErrClosed ("the member was closed"), whatever
// the context, and Close returns (the library waits for their done callbacks); later calls
// get ErrClosed at once. The broker's other calls go on.
func TestAsyncMemberCloseWhilePending(t *testing.T) {
	b := newBroker(t)
	must(t, b.CreateTopic("t", Partitions(2)))
	m, _ := joinSeen(t, b, "t", "g")
	publish(t, b, "t", keyFor(t, 0, 2), "in flight")
	publish(t, b, "t", keyFor(t, 1, 2), "acked")
	var acked int64 = -1
	for i := 0; i < 2; i++ { // one partition per poll
		msgs, err := m.Poll(noWait(), 1)
		must(t, err)
		if msgs[0].Partition == 1 {
			acked = msgs[0].Offset
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	deadline := within(t, time.Minute)
	const n = 8
	errs := make(chan error, 4*n)
	base := parked.Load()
	for i := 0; i < n; i++ {
		go func() { _, err := m.Poll(context.Background(), 1); errs <- err }()
		go func() { _, err := m.Poll(ctx, 1); errs <- err }()
		go func() {
			var into Batch
			errs <- m.PollBatch(deadline, 1, &into)
		}()
	}
	go func() { _, err := m.AckPoll(ctx, 1, acked, 1); errs <- err }()
	waitParked(t, base, 3*n+1)
	closed := make(chan error, 1)
	go func() { closed <- m.Close() }()
	select {
	case err := <-closed:
		must(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Close with pending polls did not return")
	}
	for i := 0; i < 3*n+1; i++ {
		select {
		case err := <-errs:
			e := wantStatus(t, err, ErrClosed, StatusClosed)
			if e.Message != "the member was closed" {
				t.Errorf("closed pending poll: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%d pending polls not completed by Close", 3*n+1-i)
		}
	}
	_, err := m.Poll(context.Background(), 1)
	wantStatus(t, err, ErrClosed, StatusClosed)
	must(t, m.Close())
	// The member left: what it had in flight is the group's again.
	m2, _ := joinSeen(t, b, "t", "g")
	again, err := m2.Poll(within(t, 10*time.Second), 1)
	must(t, err)
	if len(again) != 1 || string(again[0].Value) != "in flight" {
		t.Fatalf("after the close: %+v", again)
	}
}

// Close races polls at every point of their course (before the call, during its first look,
// while it starts to wait, while it waits): each poll returns ErrClosed (or, when it came
// first, a message or ErrTimeout), nothing hangs or crashes.
func TestAsyncMemberCloseRacesPolls(t *testing.T) {
	b := newBroker(t)
	must(t, b.CreateTopic("t", Partitions(2)))
	rounds := 200
	if testing.Short() || raceEnabled {
		rounds = 50
	}
	rng := rand.New(rand.NewSource(1))
	for round := 0; round < rounds; round++ {
		m, _ := joinSeen(t, b, "t", "g")
		const polls = 6
		errs := make(chan error, polls)
		for i := 0; i < polls; i++ {
			ctx := context.Background()
			if i%3 == 2 {
				ctx = within(t, time.Duration(rng.Intn(3))*time.Millisecond)
			}
			go func() {
				var into Batch
				if i%2 == 0 {
					errs <- m.PollBatch(ctx, 1, &into)
					return
				}
				_, err := m.Poll(ctx, 1)
				errs <- err
			}()
		}
		if round%4 == 1 {
			publish(t, b, "t", nil, "m")
		}
		if d := rng.Intn(4); d > 0 {
			time.Sleep(time.Duration(d) * 100 * time.Microsecond)
		}
		closed := make(chan error, 1)
		go func() { closed <- m.Close() }()
		select {
		case err := <-closed:
			must(t, err)
		case <-time.After(10 * time.Second):
			t.Fatalf("round %d: Close did not return", round)
		}
		for i := 0; i < polls; i++ {
			select {
			case err := <-errs:
				if err != nil && !errors.Is(err, ErrClosed) && !errors.Is(err, ErrTimeout) {
					t.Fatalf("round %d: a poll raced by Close: %v", round, err)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("round %d: %d polls did not return after Close", round, polls-i)
			}
		}
	}
}

// Deleting the topic ends a member's pending poll with ErrNoTopic, and unsubscribing its group
// with ErrNoGroup, each with the library's message (read on the completer thread).
func TestAsyncMemberPollTopicDeletedOrUnsubscribed(t *testing.T) {
	b := newBroker(t)
	must(t, b.CreateTopic("t"))
	must(t, b.CreateTopic("u"))
	mt, _ := joinSeen(t, b, "t", "g")
	mu, _ := joinSeen(t, b, "u", "g")
	base := parked.Load()
	tCh := goMemberPoll(mt, context.Background(), 1)
	uCh := goMemberPoll(mu, context.Background(), 1)
	waitParked(t, base, 2)
	must(t, b.DeleteTopic("t"))
	if e := wantStatus(t, receive(t, "the pending poll", tCh).err, ErrNoTopic, StatusNoTopic); e.Message == "" {
		t.Errorf("no detail message: %v", e)
	}
	must(t, b.Unsubscribe("u", "g"))
	if e := wantStatus(t, receive(t, "the pending poll", uCh).err, ErrNoGroup, StatusNoGroup); e.Message == "" {
		t.Errorf("no detail message: %v", e)
	}
	must(t, mt.Close())
	must(t, mu.Close())
}

// Closing the broker ends a member's pending poll with ErrClosed, and closes the member.
func TestAsyncMemberBrokerCloseWhilePending(t *testing.T) {
	b, err := NewBroker()
	must(t, err)
	must(t, b.CreateTopic("t"))
	m, _ := joinSeen(t, b, "t", "g")
	base := parked.Load()
	ch := goMemberPoll(m, context.Background(), 1)
	waitParked(t, base, 1)
	must(t, b.Close())
	wantStatus(t, receive(t, "the pending poll", ch).err, ErrClosed, StatusClosed)
	_, err = m.Poll(context.Background(), 1)
	wantStatus(t, err, ErrClosed, StatusClosed)
	must(t, m.Close())
}

// A member's OnRebalance may run on the broker's completer thread: a pending poll's run reaps
// the group's expired members (here x, whose session ran out on the manual clock) and the
// rebalance calls the callbacks there. A callback that closes another member with a pending
// poll must not wait for that poll's done (which that very thread runs, after the callback):
// Close returns, and the poll ends with ErrClosed after it.
func TestAsyncMemberCloseFromCallbackOnTheCompleter(t *testing.T) {
	clock := NewManualClock(1_000_000_000)
	b := newBroker(t, WithClock(clock))
	must(t, b.CreateTopic("t", Partitions(4)))
	var victim atomic.Pointer[Member]
	closed := make(chan error, 1)
	x, _ := joinSeen(t, b, "t", "g", MemberID("x"), SessionTimeout(time.Second))
	c, _ := joinSeen(t, b, "t", "g", MemberID("c"), SessionTimeout(time.Hour), OnRebalance(func(_ *Member, gen int64) {
		if d := victim.Swap(nil); d != nil {
			closed <- d.Close()
		}
	}))
	a, aParts := joinSeen(t, b, "t", "g", MemberID("a"))
	d, _ := joinSeen(t, b, "t", "g", MemberID("d"))
	if _, aParts, _ = a.Assignment(); len(aParts) != 1 {
		t.Fatalf("a owns %v", aParts)
	}
	base := parked.Load()
	aCh := goMemberPoll(a, context.Background(), 1)
	dCh := goMemberPoll(d, context.Background(), 1)
	waitParked(t, base, 2)
	clock.Advance(5 * time.Second) // x's session has run out: the next member call reaps it
	victim.Store(d)
	// Wakes a's pending poll on the completer, whose run reaps x.
	publish(t, b, "t", keyFor(t, aParts[0], 4), "wake")
	select {
	case err := <-closed:
		must(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Close from a rebalance callback did not return")
	}
	wantStatus(t, receive(t, "d's pending poll", dCh).err, ErrClosed, StatusClosed)
	wantStatus(t, receive(t, "a's pending poll", aCh).err, ErrRebalanced, StatusRebalanced)
	if _, _, err := x.Assignment(); !errors.Is(err, ErrFenced) {
		t.Errorf("x after its session ran out: %v", err)
	}
	must(t, a.Close())
	must(t, c.Close())
	must(t, x.Close())
}

// 1,000 members, each waiting in Poll on the partition it owns, hold no OS thread each: the
// process's threads stay a handful (a blocking cgo call would pin 1,000).
func TestAsyncManyPendingMemberPollsHoldNoThreads(t *testing.T) {
	n := 1000
	if testing.Short() {
		n = 200
	}
	b := newBroker(t)
	must(t, b.CreateTopic("t", Partitions(n), Capacity(4)))
	members := make([]*Member, n)
	for i := range members {
		m, err := b.Join("t", "g")
		must(t, err)
		members[i] = m
	}
	for _, m := range members {
		_, parts, err := m.Assignment()
		must(t, err)
		if len(parts) != 1 {
			t.Fatalf("member %s owns %v", m.ID(), parts)
		}
	}
	// One pending call first: it starts the broker's completer thread and the M its callback
	// runs Go on.
	base := parked.Load()
	first := goMemberPoll(members[0], context.Background(), 1)
	waitParked(t, base, 1)
	before, rssBefore := osThreads(t), rssKiB()
	results := make(chan callResult, n)
	var wg sync.WaitGroup
	for _, m := range members[1:] {
		wg.Add(1)
		go func() {
			defer wg.Done()
			msgs, err := m.Poll(context.Background(), 1)
			results <- callResult{msgs, err}
		}()
	}
	waitParked(t, base, int64(n))
	after, rssAfter := osThreads(t), rssKiB()
	t.Logf("%d pending member polls: %d OS threads with 1 pending, %d with %d (GOMAXPROCS %d); RSS +%d KiB",
		n, before, after, n, runtime.GOMAXPROCS(0), rssAfter-rssBefore)
	if after-before > 8 {
		t.Errorf("%d pending member polls added %d OS threads (%d -> %d)", n-1, after-before, before, after)
	}
	// Keyless publishes go round-robin: n of them reach every partition, so every member, once.
	for p := 0; p < n; p++ {
		if _, _, err := b.Publish(context.Background(), "t", nil, []byte("m")); err != nil {
			t.Fatal(err)
		}
	}
	seen := make([]bool, n)
	r := receive(t, "the first poll", first)
	must(t, r.err)
	seen[r.msgs[0].Partition] = true
	for i := 1; i < n; i++ {
		r := receive(t, "a pending member poll", results)
		must(t, r.err)
		if len(r.msgs) != 1 || seen[r.msgs[0].Partition] {
			t.Fatalf("pending member poll got %+v", r.msgs)
		}
		seen[r.msgs[0].Partition] = true
	}
	wg.Wait()
	// Pending again, all of them, and ended by Broker.Close (newBroker's cleanup) at the end.
	for _, m := range members {
		go func() { _, _ = m.Poll(context.Background(), 1) }()
	}
	waitParked(t, base, int64(n))
}

// On an engine whose waits block their thread (Kafka's), Member.Poll uses the blocking call
// under a token of its own: the context cancels it and Close ends it with ErrClosed.
func TestMemberBlockingPollCancelAndClose(t *testing.T) {
	b := newBroker(t)
	b.core.blocking = true // as on the Kafka engine
	must(t, b.CreateTopic("t"))
	m, _ := joinSeen(t, b, "t", "g")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { _, err := m.Poll(ctx, 1); done <- err }()
	time.Sleep(20 * time.Millisecond)
	cancel()
	err := <-done
	wantStatus(t, err, ErrCancelled, StatusCancelled)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("%v does not match context.Canceled", err)
	}
	go func() { _, err := m.Poll(context.Background(), 1); done <- err }()
	time.Sleep(20 * time.Millisecond)
	must(t, m.Close())
	wantStatus(t, <-done, ErrClosed, StatusClosed)
}
