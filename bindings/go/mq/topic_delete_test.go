package mq

import (
	"context"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// After DeleteTopic nothing by name reaches the topic, and a topic created under the name is
// new and empty.
func TestDeleteTopic(t *testing.T) {
	b := newBroker(t)
	must(t, b.CreateTopic("other"))
	must(t, b.CreateTopic("t", Partitions(2)))
	must(t, b.Subscribe("t", "g"))
	publish(t, b, "t", []byte("k"), "a")
	must(t, b.DeleteTopic("t"))
	if topics, err := b.Topics(); err != nil || !slices.Equal(topics, []string{"other"}) {
		t.Errorf("topics after the deletion: %v %v", topics, err)
	}
	_, _, err := b.Publish(noWait(), "t", nil, []byte("b"))
	wantStatus(t, err, ErrNoTopic, StatusNoTopic)
	_, err = b.PublishBatch(noWait(), "t", []Record{{Value: []byte("b")}})
	wantStatus(t, err, ErrNoTopic, StatusNoTopic)
	_, err = b.Poll(noWait(), "t", "g", 0, 1)
	wantStatus(t, err, ErrNoTopic, StatusNoTopic)
	_, err = b.AckPoll(noWait(), "t", "g", 0, 0, 1)
	wantStatus(t, err, ErrNoTopic, StatusNoTopic)
	wantStatus(t, b.Ack("t", "g", 0, 0), ErrNoTopic, StatusNoTopic)
	wantStatus(t, b.Subscribe("t", "x"), ErrNoTopic, StatusNoTopic)
	_, err = b.TopicInfo("t")
	wantStatus(t, err, ErrNoTopic, StatusNoTopic)
	_, err = b.Groups("t")
	wantStatus(t, err, ErrNoTopic, StatusNoTopic)
	_, err = b.Join("t", "m")
	wantStatus(t, err, ErrNoTopic, StatusNoTopic)

	e := wantStatus(t, b.DeleteTopic("t"), ErrNoTopic, StatusNoTopic)
	if e.Op != "delete topic" || e.Message == "" {
		t.Errorf("deleting a deleted topic: %v", e)
	}
	wantStatus(t, b.DeleteTopic("bad/name"), ErrInvalid, StatusInvalid)
	wantStatus(t, b.DeleteTopic("other\x00"), ErrInvalid, StatusInvalid)
	wantStatus(t, b.DeleteTopic(""), ErrInvalid, StatusInvalid)

	must(t, b.CreateTopic("t"))
	info, err := b.TopicInfo("t")
	must(t, err)
	if info.Partitions != 1 {
		t.Errorf("the new topic has %d partitions", info.Partitions)
	}
	if groups, err := b.Groups("t"); err != nil || len(groups) != 0 {
		t.Errorf("groups of the new topic: %v %v", groups, err)
	}
	if pi, err := b.PartitionInfo("t", 0); err != nil || pi.End != 0 {
		t.Errorf("the new topic's partition: %+v %v", pi, err)
	}
	_, err = b.Poll(noWait(), "t", "g", 0, 1)
	wantStatus(t, err, ErrNoGroup, StatusNoGroup)

	must(t, b.Shutdown())
	wantStatus(t, b.DeleteTopic("other"), ErrClosed, StatusClosed)
	if topics, _ := b.Topics(); !slices.Equal(topics, []string{"other", "t"}) {
		t.Errorf("a refused deletion after Shutdown changed the topics: %v", topics)
	}
	must(t, b.Close())
	wantStatus(t, b.DeleteTopic("other"), ErrClosed, StatusClosed)
}

// Every call blocked on a topic returns ErrNoTopic when it is deleted: publishes (single and
// batch), polls and ack+polls of groups and members, all waiting without a deadline.
func TestDeleteTopicWakesWaiters(t *testing.T) {
	b := newBroker(t)
	must(t, b.CreateTopic("t", Capacity(1)))
	must(t, b.Subscribe("t", "g"))
	must(t, b.Subscribe("t", "h"))
	m, err := b.Join("t", "members")
	must(t, err)
	publish(t, b, "t", nil, "a") // h never acks it: the partition stays full
	if _, err := b.Poll(noWait(), "t", "g", 0, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Poll(noWait(), 1); err != nil {
		t.Fatal(err)
	}
	must(t, b.Subscribe("t", "late")) // nothing to poll
	m2, err := b.Join("t", "late-members")
	must(t, err)

	bg := context.Background()
	calls := map[string]func() error{
		"publish": func() error { _, _, err := b.Publish(bg, "t", nil, []byte("b")); return err },
		"publish batch": func() error {
			_, err := b.PublishBatch(bg, "t", []Record{{Value: []byte("c")}})
			return err
		},
		"poll":            func() error { _, err := b.Poll(bg, "t", "late", 0, 10); return err },
		"ack poll":        func() error { _, err := b.AckPoll(bg, "t", "g", 0, 0, 10); return err },
		"member poll":     func() error { _, err := m2.Poll(bg, 10); return err },
		"member ack poll": func() error { _, err := m.AckPoll(bg, 0, 0, 10); return err },
	}
	done := make(chan string, len(calls))
	errs := make(map[string]error)
	var mu sync.Mutex
	for name, call := range calls {
		go func() {
			err := call()
			mu.Lock()
			errs[name] = err
			mu.Unlock()
			done <- name
		}()
	}
	// The two publishers wait for room; the ack+polls have acked (so they are in the library,
	// where nothing is left to hand out). The plain polls may still be on their way in: they
	// must return ErrNoTopic either way.
	eventually(t, "the callers to wait", func() bool {
		pi, _ := b.PartitionInfo("t", 0)
		g, _ := b.GroupInfo("t", "g", 0)
		mg, _ := b.GroupInfo("t", "members", 0)
		return pi.ProducerWaits == 2 && g.Committed == 1 && mg.Committed == 1
	})
	start := time.Now()
	must(t, b.DeleteTopic("t"))
	for range calls {
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			mu.Lock()
			defer mu.Unlock()
			t.Fatalf("blocked calls not woken by the deletion (returned: %v)", errs)
		}
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("the deletion woke the waiters after %v", took)
	}
	for name, err := range errs {
		e := wantStatus(t, err, ErrNoTopic, StatusNoTopic)
		if e.Message == "" {
			t.Errorf("%s: no message", name)
		}
	}
}

// A topic's push subscriptions and members outlive it as handles: the subscription stops
// calling its handler (a running handler finishes with its message intact), every member call
// but Close and ID returns ErrNoTopic, no OnRebalance runs any more, and everything closes
// as usual, releasing every handle.
func TestDeletedTopicsSubscriptionsAndMembers(t *testing.T) {
	base := liveHandles.Load()
	b := newBroker(t)
	must(t, b.CreateTopic("t"))
	running := make(chan struct{})
	release := make(chan struct{})
	var calls atomic.Int32
	var valueAfter atomic.Value
	var released atomic.Int32
	sub, err := b.SubscribeFunc("t", "push", func(m *Message) error {
		if calls.Add(1) == 1 {
			close(running)
			<-release
			valueAfter.Store(string(m.Value))
		}
		return nil
	}, Prefetch(10), OnRelease(func() { released.Add(1) }))
	must(t, err)
	var rebalances atomic.Int32
	a, err := b.Join("t", "members", MemberID("a"), OnRebalance(func(*Member, int64) { rebalances.Add(1) }))
	must(t, err)
	c, err := b.Join("t", "members", MemberID("c"))
	must(t, err)
	if _, parts, err := a.Assignment(); err != nil || !slices.Equal(parts, []int{0}) {
		t.Fatalf("a's assignment: %v %v", parts, err)
	}
	publish(t, b, "t", nil, "first", "second", "third")
	msgs, err := a.Poll(within(t, 10*time.Second), 1)
	must(t, err)
	<-running

	must(t, b.DeleteTopic("t"))
	close(release)
	must(t, b.CreateTopic("t")) // a new topic: nothing of it reaches the old handles
	must(t, b.Subscribe("t", "push", StartAt(StartEarliest)))
	publish(t, b, "t", nil, "new")

	before := rebalances.Load()
	_, err = a.Poll(noWait(), 1)
	wantStatus(t, err, ErrNoTopic, StatusNoTopic)
	_, err = a.AckPoll(noWait(), 0, msgs[0].Offset, 1)
	wantStatus(t, err, ErrNoTopic, StatusNoTopic)
	wantStatus(t, a.Ack(0, msgs[0].Offset), ErrNoTopic, StatusNoTopic)
	wantStatus(t, a.Nack(0), ErrNoTopic, StatusNoTopic)
	_, _, err = a.Assignment()
	wantStatus(t, err, ErrNoTopic, StatusNoTopic)
	if a.ID() != "a" || string(msgs[0].Value) != "first" {
		t.Errorf("member id %q, message %q", a.ID(), msgs[0].Value)
	}
	must(t, c.Close()) // would rebalance a's group, which went with the topic
	if n := rebalances.Load(); n != before {
		t.Errorf("OnRebalance ran %d times after the deletion", n-before)
	}
	must(t, a.Close())
	must(t, a.Close())

	must(t, sub.Close())
	if n := calls.Load(); n != 1 {
		t.Errorf("the deleted topic's handler was called %d times, want once (the running call)", n)
	}
	if v := valueAfter.Load(); v != "first" {
		t.Errorf("the running handler's message after the deletion: %v", v)
	}
	if released.Load() != 1 {
		t.Errorf("OnRelease ran %d times", released.Load())
	}
	if g, err := b.GroupInfo("t", "push", 0); err != nil || g.Committed != 0 {
		t.Errorf("the new topic's group: %+v %v", g, err)
	}
	if n := liveHandles.Load() - base; n != 0 {
		t.Errorf("%d handles left", n)
	}
}

// Any order of releasing a deleted topic's objects: the broker before its subscriptions and
// members, after them, concurrently, or dropped for the collector.
func TestDeletedTopicCloseOrders(t *testing.T) {
	setup := func(t *testing.T, onRebalance bool) (*Broker, *Subscription, *Member) {
		b, err := NewBroker()
		must(t, err)
		must(t, b.CreateTopic("t", Partitions(3)))
		sub, err := b.SubscribeFunc("t", "push", func(*Message) error { return nil })
		must(t, err)
		opt := WithAssignor(func(_ []string, o []int) {
			for p := range o {
				o[p] = 0
			}
		})
		if onRebalance {
			opt = OnRebalance(func(*Member, int64) {})
		}
		m, err := b.Join("t", "members", opt)
		must(t, err)
		publish(t, b, "t", nil, "x", "y", "z")
		must(t, b.DeleteTopic("t"))
		return b, sub, m
	}
	for _, order := range []string{"objects first", "broker first", "concurrent", "dropped"} {
		t.Run(order, func(t *testing.T) {
			base := liveHandles.Load()
			switch order {
			case "objects first":
				b, sub, m := setup(t, true)
				must(t, sub.Close())
				must(t, m.Close())
				must(t, b.Close())
			case "broker first":
				b, sub, m := setup(t, true)
				must(t, b.Close())
				must(t, sub.Close())
				must(t, m.Close())
			case "concurrent":
				b, sub, m := setup(t, true)
				var wg sync.WaitGroup
				for _, c := range []func() error{b.Close, m.Close, sub.Close, b.Close} {
					wg.Add(1)
					go func() { defer wg.Done(); must(t, c()) }()
				}
				wg.Wait()
			case "dropped":
				// The broker and the member are left to the collector (an open subscription
				// would keep its broker reachable, so it is closed).
				func() {
					_, sub, _ := setup(t, false)
					must(t, sub.Close())
				}()
			}
			eventually(t, "every handle to be released", func() bool {
				runtime.GC()
				return liveHandles.Load() == base
			})
		})
	}
}

// Deleting a topic is safe from a handler (its own topic) and from a rebalance callback.
func TestDeleteTopicFromCallbacks(t *testing.T) {
	b := newBroker(t)
	must(t, b.CreateTopic("t"))
	must(t, b.CreateTopic("u"))
	must(t, b.CreateTopic("v"))
	deleted := make(chan error, 1)
	sub, err := b.SubscribeFunc("t", "g", func(*Message) error {
		deleted <- b.DeleteTopic("t")
		return nil
	})
	must(t, err)
	publish(t, b, "t", nil, "x")
	select {
	case err := <-deleted:
		must(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("the handler's DeleteTopic did not return")
	}
	must(t, sub.Close())

	var fromCallback error
	m, err := b.Join("u", "g", OnRebalance(func(*Member, int64) { fromCallback = b.DeleteTopic("v") }))
	must(t, err)
	must(t, fromCallback) // the callback of its own join ran before Join returned
	if topics, _ := b.Topics(); !slices.Equal(topics, []string{"u"}) {
		t.Errorf("topics: %v", topics)
	}
	must(t, m.Close())
}

// Messages handed out before the deletion are Go copies: a Batch keeps its bytes when the
// topic goes, a new one takes the name, and the collector runs.
func TestMessagesOutliveTheirTopic(t *testing.T) {
	b := newBroker(t)
	must(t, b.CreateTopic("t"))
	must(t, b.Subscribe("t", "g"))
	publish(t, b, "t", []byte("key"), "value-0", "value-1")
	var batch Batch
	must(t, b.PollBatch(noWait(), "t", "g", 0, 10, &batch))
	must(t, b.DeleteTopic("t"))
	must(t, b.CreateTopic("t"))
	must(t, b.Subscribe("t", "g"))
	publish(t, b, "t", []byte("KEY"), "VALUE-0", "VALUE-1")
	runtime.GC()
	if len(batch.Messages) != 2 || string(batch.Messages[1].Key) != "key" || string(batch.Messages[1].Value) != "value-1" {
		t.Errorf("the deleted topic's messages: %q", values(batch.Messages))
	}
}
