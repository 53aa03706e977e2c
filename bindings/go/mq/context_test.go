package mq

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// A poll's deadline is its wait: ErrTimeout once it passes, matching DeadlineExceeded too.
func TestPollDeadlineIsTheWait(t *testing.T) {
	b := newBroker(t)
	must(t, b.CreateTopic("t"))
	must(t, b.Subscribe("t", "g"))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Millisecond)
	defer cancel()
	start := time.Now()
	msgs, err := b.Poll(ctx, "t", "g", 0, 10)
	took := time.Since(start)
	wantStatus(t, err, ErrTimeout, StatusTimeout)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("%v does not match context.DeadlineExceeded", err)
	}
	if msgs != nil {
		t.Errorf("messages with a timeout: %v", msgs)
	}
	if took < 60*time.Millisecond || took > 2*time.Second {
		t.Errorf("poll with a 60 ms deadline returned after %v", took)
	}
}

// A publish to a full partition waits until the deadline, then ErrFull with nothing appended.
func TestPublishDeadlineIsTheWait(t *testing.T) {
	b := newBroker(t)
	must(t, b.CreateTopic("t", Capacity(1)))
	must(t, b.Subscribe("t", "g"))
	publish(t, b, "t", nil, "a")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, _, err := b.Publish(ctx, "t", nil, []byte("b"))
	took := time.Since(start)
	wantStatus(t, err, ErrFull, StatusFull)
	if took < 60*time.Millisecond || took > 2*time.Second {
		t.Errorf("publish with a 60 ms deadline returned after %v", took)
	}
	if info, _ := b.PartitionInfo("t", 0); info.End != 1 || info.ProducerWaits != 1 {
		t.Errorf("after a full publish: end %d, producer waits %d", info.End, info.ProducerWaits)
	}
}

// An expired context does not block, but the call still does what needs no wait.
func TestExpiredContextMeansNoWait(t *testing.T) {
	b := newBroker(t)
	must(t, b.CreateTopic("t", Capacity(1)))
	must(t, b.Subscribe("t", "g"))
	if _, _, err := b.Publish(noWait(), "t", nil, []byte("a")); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, _, err := b.Publish(noWait(), "t", nil, []byte("b"))
	wantStatus(t, err, ErrFull, StatusFull)
	msgs, err := b.Poll(noWait(), "t", "g", 0, 10)
	must(t, err)
	_, err = b.Poll(noWait(), "t", "g", 0, 10)
	wantStatus(t, err, ErrTimeout, StatusTimeout)
	if took := time.Since(start); took > time.Second {
		t.Errorf("calls with an expired context took %v", took)
	}
	if len(msgs) != 1 || string(msgs[0].Value) != "a" {
		t.Errorf("poll: %v", values(msgs))
	}
	// A cancelled context too: what can be done at once is done.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	must(t, b.Ack("t", "g", 0, 0))
	if _, _, err := b.Publish(ctx, "t", nil, []byte("c")); err != nil {
		t.Errorf("publish with room under a cancelled context: %v", err)
	}
}

// Cancelling the context ends a blocked call within 100 ms, with ErrCancelled that also
// matches context.Canceled, and only that call.
func TestCancelEndsBlockedCalls(t *testing.T) {
	b := newBroker(t)
	must(t, b.CreateTopic("t", Capacity(1)))
	must(t, b.Subscribe("t", "g"))
	must(t, b.Subscribe("t", "h"))
	publish(t, b, "t", nil, "a")
	_, err := b.Poll(noWait(), "t", "h", 0, 1) // h holds nothing back now; g holds "a"
	must(t, err)
	must(t, b.Ack("t", "h", 0, 0))

	type result struct {
		err  error
		took time.Duration
	}
	pubCtx, cancelPub := context.WithCancel(context.Background())
	pollCtx, cancelPoll := context.WithCancel(context.Background())
	other := make(chan error, 1)
	pub, poll := make(chan result, 1), make(chan result, 1)
	var cancelled time.Time
	var mu sync.Mutex
	go func() {
		_, _, err := b.Publish(pubCtx, "t", nil, []byte("b"))
		mu.Lock()
		defer mu.Unlock()
		pub <- result{err, time.Since(cancelled)}
	}()
	go func() {
		_, err := b.Poll(pollCtx, "t", "h", 0, 1)
		mu.Lock()
		defer mu.Unlock()
		poll <- result{err, time.Since(cancelled)}
	}()
	go func() { // a waiter on the same partition that nobody cancels
		_, err := b.Poll(within(t, 10*time.Second), "t", "h", 0, 1)
		other <- err
	}()
	eventually(t, "the publisher to block", func() bool {
		info, _ := b.PartitionInfo("t", 0)
		return info.ProducerWaits == 1
	})
	time.Sleep(20 * time.Millisecond) // let the polls reach their wait; a late one still ends
	for _, c := range []struct {
		cancel context.CancelFunc
		ch     chan result
		name   string
	}{{cancelPub, pub, "publish"}, {cancelPoll, poll, "poll"}} {
		mu.Lock()
		cancelled = time.Now()
		c.cancel()
		mu.Unlock()
		select {
		case r := <-c.ch:
			wantStatus(t, r.err, ErrCancelled, StatusCancelled)
			if !errors.Is(r.err, context.Canceled) {
				t.Errorf("%s: %v does not match context.Canceled", c.name, r.err)
			}
			if r.took > 100*time.Millisecond {
				t.Errorf("%s returned %v after the cancel", c.name, r.took)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("cancelled %s did not return", c.name)
		}
	}
	select {
	case err := <-other:
		t.Fatalf("the uncancelled poll returned: %v", err)
	default:
	}
	_, err = b.Poll(noWait(), "t", "g", 0, 1)
	must(t, err)
	must(t, b.Ack("t", "g", 0, 0)) // room again: the next publish reaches the waiting poll
	publish(t, b, "t", nil, "c")
	if err := <-other; err != nil {
		t.Errorf("the uncancelled poll: %v", err)
	}
}

// Tokens are recycled: a context cancelled after its call returned must not cancel a later
// call that gets the same token.
func TestRecycledTokensAreNotStale(t *testing.T) {
	b := newBroker(t)
	must(t, b.CreateTopic("t"))
	must(t, b.Subscribe("t", "g"))
	for i := 0; i < 200; i++ {
		ctx, cancel := context.WithCancel(context.Background())
		if _, _, err := b.Publish(ctx, "t", nil, []byte("x")); err != nil {
			t.Fatal(err)
		}
		cancel()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := b.Poll(ctx, "t", "nosuch", 0, 1)
	wantStatus(t, err, ErrNoGroup, StatusNoGroup)
	msgs, err := b.Poll(ctx, "t", "g", 0, 1000)
	must(t, err)
	must(t, b.Ack("t", "g", 0, msgs[len(msgs)-1].Offset))
	ctx2, cancel2 := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel2()
	_, err = b.Poll(ctx2, "t", "g", 0, 1)
	wantStatus(t, err, ErrTimeout, StatusTimeout) // not ErrCancelled
}

// Close wakes goroutines blocked in Publish and Poll with ErrClosed, and later calls get it.
func TestCloseWhileBlocked(t *testing.T) {
	b, err := NewBroker()
	must(t, err)
	must(t, b.CreateTopic("t", Capacity(1)))
	must(t, b.Subscribe("t", "g"))
	must(t, b.Subscribe("t", "h"))
	publish(t, b, "t", nil, "a")
	_, err = b.Poll(noWait(), "t", "h", 0, 1)
	must(t, err)
	must(t, b.Ack("t", "h", 0, 0))
	m, err := b.Join("t", "h")
	must(t, err)
	const n = 4
	errs := make(chan error, 3*n)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for i := 0; i < n; i++ {
		go func() { _, _, err := b.Publish(ctx, "t", nil, []byte("b")); errs <- err }()
		go func() { _, err := b.Poll(context.Background(), "t", "h", 0, 1); errs <- err }()
		go func() { _, err := m.Poll(context.Background(), 1); errs <- err }()
	}
	eventually(t, "the publishers to block", func() bool {
		info, _ := b.PartitionInfo("t", 0)
		return info.ProducerWaits == n
	})
	time.Sleep(20 * time.Millisecond) // pollers reach their wait; a late one gets ErrClosed too
	start := time.Now()
	must(t, b.Close())
	for i := 0; i < 3*n; i++ {
		select {
		case err := <-errs:
			if !errors.Is(err, ErrClosed) {
				t.Errorf("blocked call ended with %v, want ErrClosed", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%d blocked calls still blocked after Close", 3*n-i)
		}
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("Close and the wake-ups took %v", took)
	}
	_, err = m.Poll(context.Background(), 1)
	if !errors.Is(err, ErrClosed) {
		t.Errorf("member poll after Close: %v", err)
	}
	must(t, m.Close())
}
