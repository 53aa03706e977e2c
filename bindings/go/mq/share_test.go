package mq

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// Share groups (library 1.6): Share(ShareAll / ShareKey) lets any number of polls share a
// partition; each acquires messages no other poll holds, under a lock of its own, settled one
// by one with Settle / SettleAfter, the delivery count being the acquisition's token.

// shareBroker is a broker on a manual clock with topic t (1 partition, 1 s ack timeout),
// topic dlt, and share group w of t subscribed with opts.
func shareBroker(t *testing.T, opts ...GroupOption) (*Broker, *ManualClock) {
	t.Helper()
	clock := NewManualClock(1_000_000_000)
	b := newBroker(t, WithClock(clock))
	must(t, b.CreateTopic("t", AckTimeout(time.Second), Capacity(100)))
	must(t, b.CreateTopic("dlt"))
	must(t, b.Subscribe("t", "w", append([]GroupOption{Share(ShareAll)}, opts...)...))
	return b, clock
}

// sharePoll polls w without waiting; nil after ErrTimeout.
func sharePoll(t *testing.T, b *Broker, max int) []Message {
	t.Helper()
	msgs, err := b.Poll(noWait(), "t", "w", 0, max)
	if errors.Is(err, ErrTimeout) {
		return nil
	}
	must(t, err)
	return msgs
}

// acquisitions are the messages' offsets, each with its delivery count: "0/1 2/2".
func acquisitions(msgs []Message) string {
	var s []string
	for _, m := range msgs {
		s = append(s, fmt.Sprintf("%d/%d", m.Offset, m.DeliveryCount))
	}
	return strings.Join(s, " ")
}

func wantOffsets(t *testing.T, what string, msgs []Message, want string) {
	t.Helper()
	if got := acquisitions(msgs); got != want {
		t.Fatalf("%s: got %q, want %q", what, got, want)
	}
}

func groupInfo(t *testing.T, b *Broker, group string) GroupInfo {
	t.Helper()
	gi, err := b.GroupInfo("t", group, 0)
	must(t, err)
	return gi
}

func settle(t *testing.T, b *Broker, m Message, a SettleAction) {
	t.Helper()
	must(t, b.Settle("t", "w", m.Partition, m.Offset, m.DeliveryCount, a))
}

func TestShareGroupPollsShareOnePartition(t *testing.T) {
	b, _ := shareBroker(t)
	must(t, b.Subscribe("t", "ordered"))
	publish(t, b, "t", nil, "a", "b", "c", "d", "e")
	// Two consumers of the one partition: each poll acquires what no other poll holds.
	first := sharePoll(t, b, 2)
	second := sharePoll(t, b, 2)
	wantOffsets(t, "first consumer", first, "0/1 1/1")
	wantOffsets(t, "second consumer", second, "2/1 3/1")
	if v := values(second); v[0] != "c" || v[1] != "d" {
		t.Fatalf("second consumer got %q", v)
	}
	gi := groupInfo(t, b, "w")
	if gi.Committed != 0 || gi.Next != 4 || gi.Acquired != 4 || gi.Available != 1 ||
		gi.Delivered != [4]int64{4, 0, 0, 0} || gi.Rejected != 0 || gi.Delayed != 0 {
		t.Fatalf("group info %+v", gi)
	}
	// Settled in any order; Committed is the oldest unsettled message.
	settle(t, b, second[1], SettleAccept)
	settle(t, b, first[1], SettleAccept)
	if gi := groupInfo(t, b, "w"); gi.Committed != 0 || gi.Acquired != 2 {
		t.Fatalf("after accepting 3 and 1: %+v", gi)
	}
	settle(t, b, first[0], SettleAccept)
	if gi := groupInfo(t, b, "w"); gi.Committed != 2 || gi.Acquired != 1 {
		t.Fatalf("after accepting 0: %+v", gi)
	}
	wantOffsets(t, "what is left", sharePoll(t, b, 10), "4/1")
	// An ordered group of the same topic is untouched by all of this.
	msgs, err := b.Poll(noWait(), "t", "ordered", 0, 10)
	must(t, err)
	wantValues(t, "ordered group", values(msgs), "a", "b", "c", "d", "e")
	if gi := groupInfo(t, b, "ordered"); gi.Acquired != 0 || gi.Delivered != [4]int64{} ||
		gi.OldestUnsettledAge != -1 {
		t.Fatalf("ordered group's share fields %+v", gi)
	}
}

// Many goroutines work one partition as a task queue: every message is accepted exactly once.
func TestShareGroupWorkersTakeEachMessageOnce(t *testing.T) {
	b := newBroker(t)
	must(t, b.CreateTopic("t", Capacity(1000)))
	must(t, b.Subscribe("t", "w", Share(ShareAll), MaxAcquired(8)))
	const n, workers = 500, 4
	for i := 0; i < n; i++ {
		publish(t, b, "t", nil, fmt.Sprint(i))
	}
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
				msgs, err := b.Poll(ctx, "t", "w", 0, 3)
				cancel()
				if errors.Is(err, ErrTimeout) {
					return // nothing left that another worker does not hold
				}
				if err != nil {
					errs <- err
					return
				}
				for _, m := range msgs {
					mu.Lock()
					seen[string(m.Value)]++
					mu.Unlock()
					if err := b.Settle("t", "w", 0, m.Offset, m.DeliveryCount, SettleAccept); err != nil {
						errs <- err
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if len(seen) != n {
		t.Fatalf("%d distinct messages handed out, want %d", len(seen), n)
	}
	for v, c := range seen {
		if c != 1 {
			t.Fatalf("message %s handed out %d times", v, c)
		}
	}
	if gi := groupInfo(t, b, "w"); gi.Committed != n || gi.Acquired != 0 || gi.Available != 0 {
		t.Fatalf("group info %+v", gi)
	}
}

func TestShareReleaseHandsOutAgainAndFencesTheOldToken(t *testing.T) {
	b, _ := shareBroker(t)
	publish(t, b, "t", nil, "a", "b")
	msgs := sharePoll(t, b, 10)
	settle(t, b, msgs[0], SettleRelease)
	again := sharePoll(t, b, 10)
	wantOffsets(t, "released", again, "0/2")
	if gi := groupInfo(t, b, "w"); gi.Delivered != [4]int64{1, 1, 0, 0} {
		t.Fatalf("histogram %v", gi.Delivered)
	}
	// The first acquisition's token is stale now.
	err := b.Settle("t", "w", 0, 0, 1, SettleAccept)
	e := wantStatus(t, err, ErrNotInFlight, StatusNotInFlight)
	if e.Op != "settle" || e.Message != "cannot accept offset 0 of partition 0 for share group w with delivery "+
		"count 1: another poll acquired it since (its delivery count is higher)" {
		t.Fatalf("got %v", err)
	}
	settle(t, b, again[0], SettleAccept)
	// Settled: settling it again is refused, and so is an offset not published.
	err = b.Settle("t", "w", 0, 0, 2, SettleAccept)
	if e := wantStatus(t, err, ErrNotInFlight, StatusNotInFlight); !strings.HasSuffix(e.Message, ": it is settled") {
		t.Fatalf("got %v", err)
	}
	err = b.Settle("t", "w", 0, 7, 1, SettleRelease)
	if e := wantStatus(t, err, ErrNotInFlight, StatusNotInFlight); !strings.HasSuffix(e.Message, ": it is not published") {
		t.Fatalf("got %v", err)
	}
}

func TestShareReleaseWithDelay(t *testing.T) {
	b, clock := shareBroker(t)
	publish(t, b, "t", nil, "a", "b")
	msgs := sharePoll(t, b, 1)
	must(t, b.SettleAfter("t", "w", 0, msgs[0].Offset, msgs[0].DeliveryCount, SettleRelease, 500*time.Millisecond))
	if gi := groupInfo(t, b, "w"); gi.Delayed != 1 || gi.Acquired != 0 || gi.Available != 1 {
		t.Fatalf("group info %+v", gi)
	}
	// The message behind it is not held back (unlike NackAfter on an ordered group).
	wantOffsets(t, "while 0 waits", sharePoll(t, b, 10), "1/1")
	clock.Advance(499 * time.Millisecond)
	wantOffsets(t, "1 ms early", sharePoll(t, b, 10), "")
	clock.Advance(time.Millisecond)
	wantOffsets(t, "due", sharePoll(t, b, 10), "0/2")
	// A delay rounds up to whole milliseconds.
	must(t, b.SettleAfter("t", "w", 0, 0, 2, SettleRelease, time.Microsecond))
	wantOffsets(t, "a microsecond is a millisecond", sharePoll(t, b, 10), "")
	clock.Advance(time.Millisecond)
	wantOffsets(t, "after 1 ms", sharePoll(t, b, 10), "0/3")
}

func TestShareLocksRunOutAndRenew(t *testing.T) {
	b, clock := shareBroker(t)
	publish(t, b, "t", nil, "a", "b")
	msgs := sharePoll(t, b, 10)
	clock.Advance(600 * time.Millisecond)
	settle(t, b, msgs[0], SettleRenew) // 0's lock starts over; 1's does not
	if gi := groupInfo(t, b, "w"); gi.OldestUnsettledAge != 600*time.Millisecond {
		t.Fatalf("oldest unsettled age %v", gi.OldestUnsettledAge)
	}
	clock.Advance(600 * time.Millisecond)
	gi := groupInfo(t, b, "w")
	if gi.Acquired != 1 || gi.Available != 1 {
		t.Fatalf("after 1.2 s: %+v", gi)
	}
	err := b.Settle("t", "w", 0, 1, 1, SettleAccept)
	if e := wantStatus(t, err, ErrNotInFlight, StatusNotInFlight); !strings.HasSuffix(e.Message,
		": it is not acquired (its lock ran out, or it was released)") {
		t.Fatalf("got %v", err)
	}
	wantOffsets(t, "expired one again", sharePoll(t, b, 10), "1/2")
	settle(t, b, msgs[0], SettleAccept) // renewed: still this acquisition's
	clock.Advance(time.Second + time.Millisecond)
	err = b.Settle("t", "w", 0, 1, 2, SettleRenew)
	wantStatus(t, err, ErrNotInFlight, StatusNotInFlight)
}

func TestShareRejectDeadLettersOrDrops(t *testing.T) {
	b, _ := shareBroker(t, MaxDeliveries(5), DeadLetterTopic("dlt"))
	must(t, b.Subscribe("t", "plain", Share(ShareAll)))
	must(t, b.Subscribe("dlt", "reader", StartAt(StartEarliest)))
	publish(t, b, "t", []byte("k"), "poison", "fine")
	msgs := sharePoll(t, b, 10)
	settle(t, b, msgs[0], SettleReject)
	settle(t, b, msgs[1], SettleAccept)
	dl, err := b.Poll(noWait(), "dlt", "reader", 0, 10)
	must(t, err)
	if len(dl) != 1 || string(dl[0].Value) != "poison" || string(dl[0].Key) != "k" || dl[0].DeadLetter == nil ||
		*dl[0].DeadLetter != (DeadLetter{Topic: "t", Group: "w", Partition: 0, Offset: 0, DeliveryCount: 1}) {
		t.Fatalf("dead letters %+v", dl)
	}
	if gi := groupInfo(t, b, "w"); gi.Rejected != 1 || gi.DeadLettered != 1 || gi.Committed != 2 {
		t.Fatalf("group info %+v", gi)
	}
	// Without a dead-letter topic a reject drops the message (and counts it).
	p, err := b.Poll(noWait(), "t", "plain", 0, 1)
	must(t, err)
	must(t, b.Settle("t", "plain", 0, p[0].Offset, p[0].DeliveryCount, SettleReject))
	if gi := groupInfo(t, b, "plain"); gi.Rejected != 1 || gi.DeadLettered != 0 || gi.Committed != 1 {
		t.Fatalf("plain group info %+v", gi)
	}
}

func TestShareMaxDeliveriesDeadLetters(t *testing.T) {
	b, _ := shareBroker(t, MaxDeliveries(2), DeadLetterTopic("dlt"))
	must(t, b.Subscribe("dlt", "reader", StartAt(StartEarliest)))
	publish(t, b, "t", nil, "x")
	for count := 1; count <= 2; count++ {
		msgs := sharePoll(t, b, 10)
		wantOffsets(t, "delivery", msgs, fmt.Sprintf("0/%d", count))
		settle(t, b, msgs[0], SettleRelease)
	}
	wantOffsets(t, "third hand-out", sharePoll(t, b, 10), "")
	dl, err := b.Poll(noWait(), "dlt", "reader", 0, 10)
	must(t, err)
	if len(dl) != 1 || dl[0].DeadLetter == nil || dl[0].DeadLetter.DeliveryCount != 2 {
		t.Fatalf("dead letters %+v", dl)
	}
}

func TestKeySharedKeepsPerKeyOrder(t *testing.T) {
	b, _ := shareBroker(t)
	must(t, b.Subscribe("t", "k", Share(ShareKey)))
	publish(t, b, "t", []byte("a"), "a1", "a2")
	publish(t, b, "t", []byte("b"), "b1", "b2")
	publish(t, b, "t", nil, "n1")
	poll := func() []Message {
		msgs, err := b.Poll(noWait(), "t", "k", 0, 10)
		if errors.Is(err, ErrTimeout) {
			return nil
		}
		must(t, err)
		return msgs
	}
	first := poll()
	wantValues(t, "first of each key, and the keyless one", values(first), "a1", "b1", "n1")
	wantValues(t, "the keys' later messages wait", values(poll()))
	must(t, b.Settle("t", "k", 0, first[0].Offset, first[0].DeliveryCount, SettleRelease))
	again := poll()
	wantOffsets(t, "a1 again, before a2", again, "0/2")
	must(t, b.Settle("t", "k", 0, again[0].Offset, again[0].DeliveryCount, SettleAccept))
	wantValues(t, "a2 once a1 is settled", values(poll()), "a2")
	must(t, b.Settle("t", "k", 0, first[1].Offset, first[1].DeliveryCount, SettleAccept))
	wantValues(t, "b2 once b1 is settled", values(poll()), "b2")
	// The same in a plain share group: no key waits.
	all := sharePoll(t, b, 10)
	wantValues(t, "ShareAll", values(all), "a1", "a2", "b1", "b2", "n1")
}

func TestShareMaxAcquired(t *testing.T) {
	b, _ := shareBroker(t, MaxAcquired(2))
	publish(t, b, "t", nil, "a", "b", "c")
	msgs := sharePoll(t, b, 10)
	wantOffsets(t, "at most 2", msgs, "0/1 1/1")
	if gi := groupInfo(t, b, "w"); gi.Acquired != 2 || gi.Available != 1 {
		t.Fatalf("group info %+v", gi)
	}
	wantOffsets(t, "at the limit", sharePoll(t, b, 10), "")
	settle(t, b, msgs[1], SettleAccept)
	wantOffsets(t, "one slot free", sharePoll(t, b, 10), "2/1")
}

// A poll that finds max_acquired reached parks (holding no thread) and is woken by the
// settlement that frees a slot (release, accept, or Ack), long before its deadline (on the
// real clock).
func TestShareWaitingPollWokenBySettlement(t *testing.T) {
	for _, c := range []struct {
		name string
		free func(b *Broker, m Message) error
		want string
	}{
		{"release", func(b *Broker, m Message) error {
			return b.Settle("t", "w", 0, m.Offset, m.DeliveryCount, SettleRelease)
		}, "0/2"},
		{"accept", func(b *Broker, m Message) error {
			return b.Settle("t", "w", 0, m.Offset, m.DeliveryCount, SettleAccept)
		}, "1/1"},
		{"ack", func(b *Broker, m Message) error {
			return b.Ack("t", "w", 0, m.Offset)
		}, "1/1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := newBroker(t)
			must(t, b.CreateTopic("t", AckTimeout(time.Minute)))
			must(t, b.Subscribe("t", "w", Share(ShareAll), MaxAcquired(1)))
			publish(t, b, "t", nil, "a", "b")
			msgs := sharePoll(t, b, 10)
			wantOffsets(t, "first", msgs, "0/1")
			base := parked.Load()
			start := time.Now()
			ch := goPoll(b, within(t, 10*time.Second), "t", "w", 0, 10)
			waitParked(t, base, 1)
			must(t, c.free(b, msgs[0]))
			r := receive(t, "the waiting poll", ch)
			must(t, r.err)
			wantOffsets(t, "woken", r.msgs, c.want)
			if took := time.Since(start); took > 5*time.Second {
				t.Fatalf("the waiting poll returned after %v, at its deadline: the settlement did not wake it", took)
			}
		})
	}
}

// In a share group Ack accepts one message, Nack releases all acquired ones, ExtendLease
// renews all their locks.
func TestShareAckNackExtendLease(t *testing.T) {
	b, clock := shareBroker(t)
	publish(t, b, "t", nil, "a", "b", "c")
	sharePoll(t, b, 10)
	must(t, b.Ack("t", "w", 0, 1)) // offset 1 only: not cumulative
	if gi := groupInfo(t, b, "w"); gi.Acquired != 2 || gi.Committed != 0 {
		t.Fatalf("after ack of 1: %+v", gi)
	}
	clock.Advance(900 * time.Millisecond)
	must(t, b.ExtendLease("t", "w", 0))
	clock.Advance(900 * time.Millisecond)
	if gi := groupInfo(t, b, "w"); gi.Acquired != 2 {
		t.Fatalf("locks ran out despite ExtendLease: %+v", gi)
	}
	must(t, b.Nack("t", "w", 0))
	wantOffsets(t, "released by nack", sharePoll(t, b, 10), "0/2 2/2")
}

func TestShareErrors(t *testing.T) {
	b, _ := shareBroker(t)
	must(t, b.Subscribe("t", "ordered"))
	publish(t, b, "t", nil, "a")
	msgs := sharePoll(t, b, 10)
	m := msgs[0]

	err := b.SettleAfter("t", "w", 0, m.Offset, m.DeliveryCount, SettleRenew, 5*time.Millisecond)
	if e := wantStatus(t, err, ErrInvalid, StatusInvalid); e.Message != "delay_ms is 5; only MQ_SETTLE_RELEASE takes a delay" {
		t.Fatalf("got %v", err)
	}
	err = b.SettleAfter("t", "w", 0, m.Offset, m.DeliveryCount, SettleRelease, -time.Millisecond)
	wantStatus(t, err, ErrInvalid, StatusInvalid)
	err = b.Settle("t", "w", 0, m.Offset, m.DeliveryCount, SettleAction(9))
	if e := wantStatus(t, err, ErrInvalid, StatusInvalid); !strings.HasPrefix(e.Message, "action is 9;") {
		t.Fatalf("got %v", err)
	}
	for _, n := range []int{-1, 1 << 32} {
		err = b.Settle("t", "w", 0, m.Offset, n, SettleAccept)
		if e := wantStatus(t, err, ErrInvalid, StatusInvalid); !strings.Contains(e.Message, "out of range") {
			t.Fatalf("delivery count %d: got %v", n, err)
		}
	}
	// A delivery count that never was: the library's NOT_IN_FLIGHT.
	err = b.Settle("t", "w", 0, m.Offset, 0, SettleAccept)
	wantStatus(t, err, ErrNotInFlight, StatusNotInFlight)
	// None of that settled the message.
	settle(t, b, m, SettleAccept)

	err = b.Settle("t", "ordered", 0, 0, 1, SettleAccept)
	if e := wantStatus(t, err, ErrInvalid, StatusInvalid); e.Message !=
		"group ordered is not a share group (mq_group_options.share): ack it with mq_group_ack" {
		t.Fatalf("got %v", err)
	}
	wantStatus(t, b.Settle("t", "nope", 0, 0, 1, SettleAccept), ErrNoGroup, StatusNoGroup)
	wantStatus(t, b.Settle("nope", "w", 0, 0, 1, SettleAccept), ErrNoTopic, StatusNoTopic)
	wantStatus(t, b.Settle("t", "w", 3, 0, 1, SettleAccept), ErrPartition, StatusPartition)
	wantStatus(t, b.Settle("t", "w\x00x", 0, 0, 1, SettleAccept), ErrInvalid, StatusInvalid)

	// Subscribe: MaxAcquired belongs to share groups; the library range-checks it.
	err = b.Subscribe("t", "bad", MaxAcquired(5))
	if e := wantStatus(t, err, ErrInvalid, StatusInvalid); e.Message != "max_acquired is 5 but the group is "+
		"not a share group (set share to MQ_SHARE_ALL or MQ_SHARE_KEY, or leave max_acquired 0)" {
		t.Fatalf("got %v", err)
	}
	wantStatus(t, b.Subscribe("t", "bad", Share(ShareAll), MaxAcquired(1_000_001)), ErrInvalid, StatusInvalid)
	wantStatus(t, b.Subscribe("t", "bad", Share(ShareAll), MaxAcquired(-1)), ErrInvalid, StatusInvalid)
	wantStatus(t, b.Subscribe("t", "bad", Share(ShareMode(7))), ErrInvalid, StatusInvalid)
	must(t, b.Subscribe("t", "big", Share(ShareKey), MaxAcquired(1_000_000)))
	// Share(ShareNone) is an ordered group: Settle refuses it.
	must(t, b.Subscribe("t", "none", Share(ShareNone), StartAt(StartEarliest)))
	wantStatus(t, b.Settle("t", "none", 0, 0, 1, SettleAccept), ErrInvalid, StatusInvalid)
}

// Push subscriptions and members take partitions exclusively: both refuse a share group.
func TestShareGroupRefusesPushAndMembers(t *testing.T) {
	b, _ := shareBroker(t)
	_, err := b.SubscribeFunc("t", "w", func(*Message) error { return nil })
	wantStatus(t, err, ErrInvalid, StatusInvalid)
	_, err = b.Join("t", "w")
	wantStatus(t, err, ErrInvalid, StatusInvalid)
	// Refused without changing the group: polls still share it.
	publish(t, b, "t", nil, "a")
	wantOffsets(t, "after the refusals", sharePoll(t, b, 10), "0/1")
}

func TestSettleActionNames(t *testing.T) {
	var names []string
	for _, a := range []SettleAction{SettleAccept, SettleRelease, SettleReject, SettleRenew, 9} {
		names = append(names, a.String())
	}
	sort.Strings(names)
	if got := strings.Join(names, " "); got != "MQ_SETTLE_ACCEPT MQ_SETTLE_REJECT MQ_SETTLE_RELEASE MQ_SETTLE_RENEW SettleAction(9)" {
		t.Fatalf("names %s", got)
	}
}
