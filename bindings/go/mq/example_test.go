package mq_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/mqlib/mq/bindings/go/mq"
)

// Publish, poll and ack: the pull API.
func Example() {
	b, err := mq.NewBroker()
	if err != nil {
		panic(err)
	}
	defer b.Close()
	b.CreateTopic("orders", mq.Partitions(2))
	b.Subscribe("orders", "billing")

	ctx := context.Background()
	p, off, _ := b.Publish(ctx, "orders", []byte("user-a"), []byte("o-1"))
	b.Publish(ctx, "orders", []byte("user-a"), []byte("o-2"))
	fmt.Println("o-1 went to partition", p, "offset", off)

	msgs, _ := b.Poll(ctx, "orders", "billing", p, 10)
	for _, m := range msgs {
		fmt.Printf("%d:%s\n", m.Offset, m.Value)
	}
	b.Ack("orders", "billing", p, msgs[len(msgs)-1].Offset)
	state, _ := b.Describe("orders", p)
	fmt.Println(state)
	// Output:
	// o-1 went to partition 1 offset 0
	// 0:o-1
	// 1:o-2
	// log empty, next offset 2, backlog 0/1024; billing 2/2
}

// A push subscription: the handler's error nacks, and the message comes again.
func ExampleBroker_SubscribeFunc() {
	b, _ := mq.NewBroker()
	defer b.Close()
	b.CreateTopic("payments")

	var mu sync.Mutex
	var failed bool
	done := make(chan struct{})
	sub, err := b.SubscribeFunc("payments", "ledger", func(m *mq.Message) error {
		mu.Lock()
		defer mu.Unlock()
		if string(m.Value) == "pay-2" && !failed {
			failed = true
			fmt.Println(string(m.Value), "fails")
			return errors.New("try again")
		}
		fmt.Println(string(m.Value), "ok")
		if string(m.Value) == "pay-3" {
			close(done)
		}
		return nil
	}, mq.OnError(func(*mq.Message, error) {}))
	if err != nil {
		panic(err)
	}
	for _, p := range []string{"pay-1", "pay-2", "pay-3"} {
		b.Publish(context.Background(), "payments", nil, []byte(p))
	}
	<-done
	sub.Close()
	// Output:
	// pay-1 ok
	// pay-2 fails
	// pay-2 ok
	// pay-3 ok
}

// The context's deadline is the wait; errors match their sentinels with errors.Is.
func ExampleBroker_Poll_deadline() {
	b, _ := mq.NewBroker()
	defer b.Close()
	b.CreateTopic("t")
	b.Subscribe("t", "g")

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	_, err := b.Poll(ctx, "t", "g", 0, 10)
	fmt.Println(errors.Is(err, mq.ErrTimeout), errors.Is(err, context.DeadlineExceeded))

	err = b.Ack("t", "g", 0, 7)
	var e *mq.Error
	if errors.As(err, &e) && errors.Is(err, mq.ErrNotInFlight) {
		fmt.Println(e.Message)
	}
	// Output:
	// true true
	// offset 7 is not in flight for g (nothing is)
}

// Members of a live group share its partitions; a change shows up as ErrRebalanced.
func ExampleBroker_Join() {
	b, _ := mq.NewBroker()
	defer b.Close()
	b.CreateTopic("t", mq.Partitions(4))

	a, _ := b.Join("t", "g", mq.MemberID("a"))
	gen, parts, _ := a.Assignment()
	fmt.Println("a alone:", gen, parts)

	c, _ := b.Join("t", "g", mq.MemberID("c"))
	_, err := a.Poll(context.Background(), 10)
	fmt.Println(errors.Is(err, mq.ErrRebalanced))
	gen, parts, _ = a.Assignment()
	fmt.Println("a with c:", gen, parts)
	c.Close()
	a.Close()
	// Output:
	// a alone: 1 [0 1 2 3]
	// true
	// a with c: 2 [0 2]
}

// A manual clock moves leases and delays by hand, for tests.
func ExampleManualClock() {
	clock := mq.NewManualClock(0)
	b, _ := mq.NewBroker(mq.WithClock(clock))
	defer b.Close()
	b.CreateTopic("t", mq.AckTimeout(30*time.Second))
	b.Subscribe("t", "g")
	b.Publish(context.Background(), "t", nil, []byte("job"))

	msgs, _ := b.Poll(context.Background(), "t", "g", 0, 1)
	fmt.Println(string(msgs[0].Value), msgs[0].DeliveryCount)
	clock.Advance(31 * time.Second) // the lease runs out: delivered again
	msgs, _ = b.Poll(context.Background(), "t", "g", 0, 1)
	fmt.Println(string(msgs[0].Value), msgs[0].DeliveryCount)
	// Output:
	// job 1
	// job 2
}

func ExampleKeyPartition() {
	p, _ := mq.KeyPartition([]byte("user-a"), 2)
	fmt.Println(p, mq.Murmur2([]byte("21")))
	// Output: 1 -973932308
}

// A consumer loop whose ack travels with its next poll: one call per batch (library 1.1).
// AckPollBatch polls into one reusable Batch, so the loop allocates nothing.
func ExampleBroker_AckPollBatch() {
	b, _ := mq.NewBroker()
	defer b.Close()
	b.CreateTopic("events")
	b.Subscribe("events", "audit")
	for i := 0; i < 5; i++ {
		b.Publish(context.Background(), "events", nil, []byte(fmt.Sprintf("e-%d", i)))
	}

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	var batch mq.Batch
	err := b.PollBatch(ctx, "events", "audit", 0, 2, &batch)
	for err == nil {
		for i, m := range batch.Messages {
			if i > 0 {
				fmt.Print(" ")
			}
			fmt.Printf("%d:%s", m.Offset, m.Value)
		}
		fmt.Println()
		last := batch.Messages[len(batch.Messages)-1].Offset
		err = b.AckPollBatch(ctx, "events", "audit", 0, last, 2, &batch)
	}
	// The loop ends when nothing comes within the deadline; the last ack stood.
	info, _ := b.GroupInfo("events", "audit", 0)
	fmt.Println(errors.Is(err, mq.ErrTimeout), "committed", info.Committed)
	// Output:
	// 0:e-0 1:e-1
	// 2:e-2 3:e-3
	// 4:e-4
	// true committed 5
}

// Deleting a topic frees its name; what was waiting on it returns ErrNoTopic.
func ExampleBroker_DeleteTopic() {
	b, _ := mq.NewBroker()
	defer b.Close()
	b.CreateTopic("tmp")
	b.Subscribe("tmp", "g")

	polled := make(chan error)
	go func() {
		_, err := b.Poll(context.Background(), "tmp", "g", 0, 10) // waits: nothing published
		polled <- err
	}()
	b.DeleteTopic("tmp")
	fmt.Println(errors.Is(<-polled, mq.ErrNoTopic))
	fmt.Println(b.CreateTopic("tmp")) // a new, empty topic
	// Output:
	// true
	// <nil>
}
