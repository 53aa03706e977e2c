package mq

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

type callLog struct {
	mu    sync.Mutex
	calls []string
}

func (l *callLog) add(s string) {
	l.mu.Lock()
	l.calls = append(l.calls, s)
	l.mu.Unlock()
}

func (l *callLog) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.calls...)
}

func committed(t testing.TB, b *Broker, topic, group string, p int) int64 {
	t.Helper()
	gi, err := b.GroupInfo(topic, group, p)
	must(t, err)
	return gi.Committed
}

// The push step of the specification: a failing handler nacks, the message comes again, and
// the failure is reported.
func TestPushHandlerErrorNacks(t *testing.T) {
	b := newBroker(t)
	must(t, b.CreateTopic("payments", Capacity(10)))
	var log callLog
	var failed atomic.Bool
	var reported []error
	var repMu sync.Mutex
	sub, err := b.SubscribeFunc("payments", "ledger", func(m *Message) error {
		log.add(string(m.Value))
		if string(m.Value) == "pay-2" && !failed.Swap(true) {
			return errors.New("first time")
		}
		return nil
	}, OnError(func(m *Message, err error) {
		repMu.Lock()
		reported = append(reported, err)
		repMu.Unlock()
	}))
	must(t, err)
	publish(t, b, "payments", nil, "pay-1", "pay-2", "pay-3")
	eventually(t, "every message acked", func() bool { return committed(t, b, "payments", "ledger", 0) == 3 })
	must(t, sub.Close())
	must(t, sub.Close())
	if got := strings.Join(log.get(), " "); got != "pay-1 pay-2 pay-2 pay-3" {
		t.Errorf("handler calls: %s", got)
	}
	if len(reported) != 1 || reported[0].Error() != "first time" {
		t.Errorf("reported %v", reported)
	}
}

// A panicking handler never crashes the process: recovered, nacked, reported as a
// *PanicError, and the subscription goes on.
func TestPushHandlerPanicIsRecovered(t *testing.T) {
	b := newBroker(t)
	must(t, b.CreateTopic("t"))
	var n atomic.Int32
	panics := make(chan *PanicError, 4)
	sub, err := b.SubscribeFunc("t", "g", func(m *Message) error {
		if n.Add(1) == 1 {
			panic("boom")
		}
		return nil
	}, OnError(func(m *Message, err error) {
		var p *PanicError
		if errors.As(err, &p) {
			panics <- p
		}
	}))
	must(t, err)
	publish(t, b, "t", nil, "x")
	eventually(t, "the redelivered message to be acked", func() bool { return committed(t, b, "t", "g", 0) == 1 })
	must(t, sub.Close())
	select {
	case p := <-panics:
		if p.Value != "boom" || len(p.Stack) == 0 || !strings.Contains(p.Error(), "boom") {
			t.Errorf("panic report %v", p)
		}
	default:
		t.Fatal("the panic was not reported")
	}
	if n.Load() != 2 {
		t.Errorf("%d handler calls, want 2 (the panic, then the redelivery)", n.Load())
	}
}

// Handler-side lease extension and nack delay work from the handler and nowhere else.
func TestHandlerCalls(t *testing.T) {
	err := ExtendHandlerLease()
	wantStatus(t, err, ErrInvalid, StatusInvalid)
	wantStatus(t, SetHandlerNackDelay(time.Second), ErrInvalid, StatusInvalid)

	clock := NewManualClock(1_000_000_000)
	b := newBroker(t, WithClock(clock))
	must(t, b.CreateTopic("t"))
	results := make(chan [2]error, 4)
	var calls atomic.Int32
	sub, err := b.SubscribeFunc("t", "g", func(m *Message) error {
		if calls.Add(1) == 1 {
			results <- [2]error{ExtendHandlerLease(), SetHandlerNackDelay(5 * time.Second)}
			return errors.New("later")
		}
		return nil
	}, OnError(func(*Message, error) {}))
	must(t, err)
	publish(t, b, "t", nil, "x")
	r := <-results
	if r[0] != nil || r[1] != nil {
		t.Fatalf("from the handler: extend %v, nack delay %v", r[0], r[1])
	}
	eventually(t, "the delayed nack", func() bool {
		gi, _ := b.GroupInfo("t", "g", 0)
		return gi.PausedUntil == 1_000_000_000+5_000_000_000
	})
	if calls.Load() != 1 {
		t.Errorf("redelivered before the delay: %d calls", calls.Load())
	}
	clock.Advance(5 * time.Second)
	publish(t, b, "t", nil, "y") // wakes the loop, which waits in real time, not on the clock
	eventually(t, "redelivery after the delay", func() bool { return committed(t, b, "t", "g", 0) == 2 })
	must(t, sub.Close())
}

// Close from the subscription's own handler is refused (not a deadlock); from another
// goroutine it waits for the running handler.
func TestSubscriptionCloseFromHandler(t *testing.T) {
	b := newBroker(t)
	must(t, b.CreateTopic("t"))
	var sub *Subscription
	ready := make(chan struct{})
	got := make(chan error, 1)
	release := make(chan struct{})
	var running atomic.Bool
	var err error
	sub, err = b.SubscribeFunc("t", "g", func(m *Message) error {
		<-ready
		got <- sub.Close()
		running.Store(true)
		<-release
		running.Store(false)
		return nil
	})
	must(t, err)
	close(ready)
	publish(t, b, "t", nil, "x")
	wantStatus(t, <-got, ErrDeadlock, StatusDeadlock)
	closed := make(chan error)
	go func() { closed <- sub.Close() }()
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) while the handler was running", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	must(t, <-closed)
	if running.Load() {
		t.Error("Close returned before the handler did")
	}
}

// Closing the broker from inside a handler neither deadlocks nor crashes, and the handler's
// own subscription is released once it returns.
func TestBrokerCloseFromHandler(t *testing.T) {
	b, err := NewBroker()
	must(t, err)
	must(t, b.CreateTopic("t"))
	done := make(chan error, 1)
	sub, err := b.SubscribeFunc("t", "g", func(m *Message) error {
		done <- b.Close()
		return nil
	})
	must(t, err)
	other, err := b.SubscribeFunc("t", "h", func(m *Message) error { return nil })
	must(t, err)
	publish(t, b, "t", nil, "x")
	select {
	case err := <-done:
		must(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("Close from a handler did not return")
	}
	eventually(t, "the handler's subscription to be released", func() bool {
		sub.mu.Lock()
		defer sub.mu.Unlock()
		return sub.state == subClosed
	})
	must(t, sub.Close())
	must(t, other.Close())
}

// Any order of closing: subscriptions and members after the broker, the broker twice,
// concurrently with its subscriptions.
func TestCloseOrders(t *testing.T) {
	for _, order := range []string{"subs first", "broker first", "concurrent"} {
		t.Run(order, func(t *testing.T) {
			b, err := NewBroker()
			must(t, err)
			must(t, b.CreateTopic("t", Partitions(4)))
			var subs []*Subscription
			for _, g := range []string{"a", "b", "c"} {
				s, err := b.SubscribeFunc("t", g, func(*Message) error { return nil })
				must(t, err)
				subs = append(subs, s)
			}
			m, err := b.Join("t", "members")
			must(t, err)
			for i := 0; i < 100; i++ {
				publish(t, b, "t", nil, "x")
			}
			switch order {
			case "subs first":
				for _, s := range subs {
					must(t, s.Close())
				}
				must(t, m.Close())
				must(t, b.Close())
			case "broker first":
				must(t, b.Close())
				for _, s := range subs {
					must(t, s.Close())
				}
				must(t, m.Close())
			case "concurrent":
				var wg sync.WaitGroup
				for _, c := range append([]func() error{b.Close, m.Close, b.Close}, subs[0].Close, subs[1].Close, subs[2].Close) {
					wg.Add(1)
					go func() { defer wg.Done(); must(t, c()) }()
				}
				wg.Wait()
			}
			if _, err := b.Topics(); !errors.Is(err, ErrClosed) {
				t.Errorf("after closing: %v", err)
			}
		})
	}
}

// Brokers dropped without Close are freed by the garbage collector without blocking or
// crashing; a subscription keeps its broker alive (and running) until closed.
func TestDroppedBrokersAreCollected(t *testing.T) {
	var handled atomic.Int32
	var sub *Subscription
	func() {
		b, err := NewBroker()
		must(t, err)
		must(t, b.CreateTopic("t"))
		sub, err = b.SubscribeFunc("t", "g", func(*Message) error { handled.Add(1); return nil })
		must(t, err)
		for i := 0; i < 50; i++ {
			d, err := NewBroker()
			must(t, err)
			must(t, d.CreateTopic("x"))
			must(t, d.Subscribe("x", "g"))
			publish(t, d, "x", nil, "kept")
		}
	}()
	for i := 0; i < 3; i++ {
		runtime.GC()
	}
	publish(t, sub.b, "t", nil, "still here")
	eventually(t, "the kept broker's handler", func() bool { return handled.Load() == 1 })
	must(t, sub.Close())
	must(t, sub.b.Close())
}

// Every handle handed to the library is deleted exactly once: handlers when their
// subscription is released (also when opening fails), rebalance callbacks when their member
// closes, assignors when the broker goes. OnRelease runs once per subscription.
func TestHandlesReleasedOnce(t *testing.T) {
	base := liveHandles.Load()
	b, err := NewBroker()
	must(t, err)
	must(t, b.CreateTopic("t", Partitions(2)))
	var releases atomic.Int32
	release := OnRelease(func() { releases.Add(1) })
	ok := func(*Message) error { return nil }
	s1, err := b.SubscribeFunc("t", "a", ok, release)
	must(t, err)
	_, err = b.SubscribeFunc("t", "b", ok, release, Prefetch(0)) // refused by the library
	wantStatus(t, err, ErrInvalid, StatusInvalid)
	if releases.Load() != 1 {
		t.Fatalf("a failed SubscribeFunc released its handler %d times, want once before returning", releases.Load())
	}
	s2, err := b.SubscribeFunc("t", "c", ok, release)
	must(t, err)
	m, err := b.Join("t", "m", OnRebalance(func(*Member, int64) {}), WithAssignor(func(_ []string, o []int) {
		for p := range o {
			o[p] = 0
		}
	}))
	must(t, err)
	if n := liveHandles.Load() - base; n != 4 {
		t.Errorf("%d live handles with two subscriptions, a callback and an assignor", n)
	}
	must(t, s1.Close())
	if releases.Load() != 2 {
		t.Errorf("after one Close: %d releases", releases.Load())
	}
	must(t, m.Close())
	must(t, b.Close()) // closes s2
	must(t, s2.Close())
	if releases.Load() != 3 {
		t.Errorf("releases %d, want 3", releases.Load())
	}
	if n := liveHandles.Load() - base; n != 0 {
		t.Errorf("%d handles left after closing everything", n)
	}
}

// SubscriptionSessionTimeout reaches the library (mq 1.3), which checks it in-process, with a
// partition list or without: 1 ms to 2^40 ms, the duration rounded up to whole milliseconds.
func TestSubscriptionSessionTimeout(t *testing.T) {
	b := newBroker(t)
	must(t, b.CreateTopic("t", Partitions(2)))
	ok := func(*Message) error { return nil }
	for _, d := range []time.Duration{0, -time.Millisecond, (1<<40 + 1) * time.Millisecond} {
		for _, extra := range [][]SubscribeOption{nil, {OnPartitions(0)}} {
			s, err := b.SubscribeFunc("t", "refused", ok, append(extra, SubscriptionSessionTimeout(d))...)
			if s != nil {
				s.Close()
				t.Fatalf("session timeout %v (options %d): subscribed", d, len(extra))
			}
			e := wantStatus(t, err, ErrInvalid, StatusInvalid)
			if !strings.Contains(e.Message, "session_timeout_ms") {
				t.Errorf("session timeout %v: %q does not name the option", d, e.Message)
			}
		}
	}
	// The smallest (1 ns rounds up to 1 ms), the largest and a usual one: each subscription,
	// a member of a group of its own, gets the message published after it opened.
	for i, d := range []time.Duration{time.Nanosecond, (1 << 40) * time.Millisecond, 6 * time.Second} {
		got := make(chan string, 1)
		group := fmt.Sprintf("g%d", i)
		s, err := b.SubscribeFunc("t", group, func(m *Message) error {
			got <- string(m.Value)
			return nil
		}, SubscriptionSessionTimeout(d))
		if err != nil {
			t.Fatalf("session timeout %v: %v", d, err)
		}
		_, _, err = b.Publish(within(t, 10*time.Second), "t", nil, []byte(group))
		must(t, err)
		select {
		case v := <-got:
			if v != group {
				t.Errorf("session timeout %v: handled %q, want %q", d, v, group)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("session timeout %v: the message was not handled", d)
		}
		must(t, s.Close())
	}
}
