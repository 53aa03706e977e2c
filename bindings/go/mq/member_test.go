package mq

import (
	"context"
	"errors"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestMembersRebalanceAndFence(t *testing.T) {
	b := newBroker(t)
	must(t, b.CreateTopic("t", Partitions(4)))
	type call struct {
		m   *Member
		gen int64
	}
	var mu sync.Mutex
	var calls []call
	record := OnRebalance(func(m *Member, gen int64) {
		mu.Lock()
		calls = append(calls, call{m, gen})
		mu.Unlock()
	})
	a, err := b.Join("t", "g", MemberID("a"), record)
	must(t, err)
	if a.ID() != "a" {
		t.Errorf("id %q", a.ID())
	}
	gen, parts, err := a.Assignment()
	must(t, err)
	if gen != 1 || len(parts) != 4 {
		t.Fatalf("a alone: generation %d partitions %v", gen, parts)
	}
	publish(t, b, "t", []byte("k"), "m-0")
	kp, _ := KeyPartition([]byte("k"), 4)
	msgs, err := a.Poll(within(t, 5*time.Second), 10)
	must(t, err)
	if len(msgs) != 1 || msgs[0].Partition != kp {
		t.Fatalf("a polled %v", msgs)
	}

	c, err := b.Join("t", "g", MemberID("c"), record)
	must(t, err)
	// a learns of the change on its next call.
	wantStatus(t, a.Ack(kp, msgs[0].Offset), ErrRebalanced, StatusRebalanced)
	gen, parts, err = a.Assignment()
	must(t, err)
	if gen != 2 || len(parts) != 2 {
		t.Fatalf("a after c joined: generation %d partitions %v", gen, parts)
	}
	_, cparts, err := c.Assignment()
	must(t, err)
	other := cparts[0]
	wantStatus(t, a.Ack(other, 0), ErrFenced, StatusFenced)

	mu.Lock()
	want := []call{{a, 1}, {a, 2}, {c, 2}}
	got := append([]call(nil), calls...)
	mu.Unlock()
	sort.SliceStable(got, func(i, j int) bool { return got[i].gen < got[j].gen })
	if len(got) != len(want) {
		t.Fatalf("rebalance calls %v", got)
	}
	for i := range want {
		if got[i].gen != want[i].gen || (got[i].m != a && got[i].m != c) {
			t.Errorf("call %d: %v", i, got[i])
		}
	}
	for _, cl := range got {
		if cl.gen == 1 && cl.m != a {
			t.Errorf("a's join called back with another *Member")
		}
	}
	must(t, c.Close())
	must(t, c.Close())
	_, err = c.Poll(noWait(), 1)
	wantStatus(t, err, ErrClosed, StatusClosed)
	if _, _, err := a.Assignment(); err != nil {
		t.Fatal(err)
	}
}

func TestMemberCloseFromOwnCallback(t *testing.T) {
	b := newBroker(t)
	must(t, b.CreateTopic("t", Partitions(2)))
	errs := make(chan error, 8)
	a, err := b.Join("t", "g", OnRebalance(func(m *Member, gen int64) {
		if gen == 2 {
			errs <- m.Close()
		}
		_, _, err := m.Assignment()
		errs <- err
	}))
	must(t, err)
	if err := <-errs; err != nil {
		t.Fatalf("Assignment from the join's own callback: %v", err)
	}
	c, err := b.Join("t", "g")
	must(t, err)
	wantStatus(t, <-errs, ErrDeadlock, StatusDeadlock)
	must(t, <-errs)
	must(t, a.Close())
	must(t, c.Close())
}

func TestCustomAssignor(t *testing.T) {
	b := newBroker(t)
	must(t, b.CreateTopic("t", Partitions(3)))
	allToLast := func(ids []string, owners []int) {
		for p := range owners {
			owners[p] = len(ids) - 1
		}
	}
	a, err := b.Join("t", "g", MemberID("a"), WithAssignor(allToLast))
	must(t, err)
	c, err := b.Join("t", "g", MemberID("c"))
	must(t, err)
	// The first member's strategy stays the group's after it leaves.
	must(t, a.Close())
	d, err := b.Join("t", "g", MemberID("d"))
	must(t, err)
	_, pc, err := c.Assignment()
	must(t, err)
	_, pd, err := d.Assignment()
	must(t, err)
	if len(pc) != 0 || len(pd) != 3 {
		t.Errorf("all to the last member: c %v, d %v", pc, pd)
	}
	must(t, c.Close())
	must(t, d.Close())
}

func TestPanickingAssignorLeavesPartitionsUnowned(t *testing.T) {
	b := newBroker(t)
	must(t, b.CreateTopic("t", Partitions(2)))
	a, err := b.Join("t", "g", WithAssignor(func([]string, []int) { panic("bad strategy") }))
	must(t, err)
	_, parts, err := a.Assignment()
	must(t, err)
	if len(parts) != 0 {
		t.Errorf("after a panicking assignor: %v", parts)
	}
	must(t, a.Close())
}

func TestMemberPollCancelAndClose(t *testing.T) {
	b := newBroker(t)
	must(t, b.CreateTopic("t"))
	m, err := b.Join("t", "g")
	must(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { _, err := m.Poll(ctx, 1); done <- err }()
	time.Sleep(20 * time.Millisecond)
	start := time.Now()
	cancel()
	err = <-done
	if !errors.Is(err, ErrCancelled) || !errors.Is(err, context.Canceled) || time.Since(start) > 100*time.Millisecond {
		t.Errorf("cancelled member poll: %v after %v", err, time.Since(start))
	}
	go func() { _, err := m.Poll(context.Background(), 1); done <- err }()
	time.Sleep(20 * time.Millisecond)
	must(t, m.Close())
	wantStatus(t, <-done, ErrClosed, StatusClosed)
}

// A push subscription without a partition list is a member: two of them split the partitions.
func TestPushMembersSplit(t *testing.T) {
	b := newBroker(t)
	must(t, b.CreateTopic("t", Partitions(4)))
	var mu sync.Mutex
	seen := map[*Subscription]map[int]bool{}
	var subs [2]*Subscription
	for i := range subs {
		var s *Subscription
		ready := make(chan struct{})
		var err error
		s, err = b.SubscribeFunc("t", "g", func(m *Message) error {
			<-ready
			mu.Lock()
			if seen[s] == nil {
				seen[s] = map[int]bool{}
			}
			seen[s][m.Partition] = true
			mu.Unlock()
			return nil
		})
		must(t, err)
		subs[i] = s
		close(ready)
	}
	for p := 0; p < 4; p++ {
		for _, key := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
			if kp, _ := KeyPartition([]byte(key), 4); kp == p {
				publish(t, b, "t", []byte(key), key)
				break
			}
		}
	}
	eventually(t, "every partition handled", func() bool {
		for p := 0; p < 4; p++ {
			if committed(t, b, "t", "g", p) != 1 {
				return false
			}
		}
		return true
	})
	mu.Lock()
	defer mu.Unlock()
	if len(seen[subs[0]]) != 2 || len(seen[subs[1]]) != 2 {
		t.Errorf("partitions per subscription: %v %v", seen[subs[0]], seen[subs[1]])
	}
	for p := range seen[subs[0]] {
		if seen[subs[1]][p] {
			t.Errorf("partition %d handled by both", p)
		}
	}
}

// Closing the broker from a member's own rebalance callback neither deadlocks nor leaks the
// member: it is closed once the callback returns.
func TestBrokerCloseFromRebalanceCallback(t *testing.T) {
	base := liveHandles.Load()
	b, err := NewBroker()
	must(t, err)
	must(t, b.CreateTopic("t", Partitions(2)))
	closed := make(chan error, 1)
	a, err := b.Join("t", "g", OnRebalance(func(m *Member, gen int64) {
		if gen == 2 {
			closed <- b.Close()
		}
	}))
	must(t, err)
	_, err = b.Join("t", "g") // rebalances: a's callback closes the broker during the join
	wantStatus(t, err, ErrClosed, StatusClosed)
	select {
	case err := <-closed:
		must(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("Close from a rebalance callback did not return")
	}
	eventually(t, "the member's callback handle to be released", func() bool { return liveHandles.Load() == base })
	must(t, a.Close())
}

// Members and brokers dropped without Close are closed by the garbage collector, in whatever
// order it finds them, while the group's assignor is still needed by the members that remain.
func TestDroppedMembersAreCollected(t *testing.T) {
	base := liveHandles.Load()
	var assigned atomic.Int32
	func() {
		b, err := NewBroker()
		must(t, err)
		must(t, b.CreateTopic("t", Partitions(3)))
		for i := 0; i < 4; i++ {
			_, err := b.Join("t", "g", WithAssignor(func(ids []string, owners []int) {
				assigned.Add(1)
				for p := range owners {
					owners[p] = p % len(ids)
				}
			}))
			must(t, err)
		}
	}()
	before := assigned.Load()
	eventually(t, "the dropped members to leave (each leave rebalances through the assignor)", func() bool {
		runtime.GC()
		return assigned.Load() >= before+3
	})
	// The assignors' handles go once the broker and every member are gone.
	eventually(t, "the assignors' handles to be deleted", func() bool {
		runtime.GC()
		return liveHandles.Load() == base
	})
}
