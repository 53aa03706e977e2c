package mq_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"sync"
	"time"

	"github.com/mqlib/mq/bindings/go/mq"
)

// Publish, poll and ack: the pull API.
func Example() {
	b, err := mq.NewBroker()
	if err != nil {
		log.Fatal(err)
	}
	if err := b.CreateTopic("orders", mq.Partitions(2)); err != nil {
		log.Fatal(err)
	}
	if err := b.Subscribe("orders", "billing"); err != nil {
		log.Fatal(err)
	}

	ctx := context.Background()
	p, off, err := b.Publish(ctx, "orders", []byte("user-a"), []byte("o-1"))
	if err != nil {
		log.Fatal(err)
	}
	if _, _, err := b.Publish(ctx, "orders", []byte("user-a"), []byte("o-2")); err != nil {
		log.Fatal(err)
	}
	fmt.Println("o-1 went to partition", p, "offset", off)

	msgs, err := b.Poll(ctx, "orders", "billing", p, 10)
	if err != nil {
		log.Fatal(err)
	}
	for _, m := range msgs {
		fmt.Printf("%d:%s\n", m.Offset, m.Value)
	}
	if err := b.Ack("orders", "billing", p, msgs[len(msgs)-1].Offset); err != nil {
		log.Fatal(err)
	}
	state, err := b.Describe("orders", p)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(state)
	if err := b.Close(); err != nil {
		log.Fatal(err)
	}
	// Output:
	// o-1 went to partition 1 offset 0
	// 0:o-1
	// 1:o-2
	// log empty, next offset 2, backlog 0/1024; billing 2/2
}

// A push subscription: the handler's error nacks, and the message comes again.
func ExampleBroker_SubscribeFunc() {
	b, err := mq.NewBroker()
	if err != nil {
		log.Fatal(err)
	}
	if err := b.CreateTopic("payments"); err != nil {
		log.Fatal(err)
	}

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
	}, mq.OnError(func(*mq.Message, error) {})) // the failure is expected: not logged
	if err != nil {
		log.Fatal(err)
	}
	for _, p := range []string{"pay-1", "pay-2", "pay-3"} {
		if _, _, err := b.Publish(context.Background(), "payments", nil, []byte(p)); err != nil {
			log.Fatal(err)
		}
	}
	<-done
	if err := errors.Join(sub.Close(), b.Close()); err != nil {
		log.Fatal(err)
	}
	// Output:
	// pay-1 ok
	// pay-2 fails
	// pay-2 ok
	// pay-3 ok
}

// The context's deadline is the wait; errors match their sentinels with errors.Is.
func ExampleBroker_Poll_deadline() {
	b, err := mq.NewBroker()
	if err != nil {
		log.Fatal(err)
	}
	if err := b.CreateTopic("t"); err != nil {
		log.Fatal(err)
	}
	if err := b.Subscribe("t", "g"); err != nil {
		log.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	_, err = b.Poll(ctx, "t", "g", 0, 10)
	fmt.Println(errors.Is(err, mq.ErrTimeout), errors.Is(err, context.DeadlineExceeded))

	err = b.Ack("t", "g", 0, 7)
	var e *mq.Error
	if errors.As(err, &e) && errors.Is(err, mq.ErrNotInFlight) {
		fmt.Println(e.Message)
	}
	if err := b.Close(); err != nil {
		log.Fatal(err)
	}
	// Output:
	// true true
	// offset 7 is not in flight for g (nothing is)
}

// Members of a live group share its partitions; a change shows up as ErrRebalanced.
func ExampleBroker_Join() {
	b, err := mq.NewBroker()
	if err != nil {
		log.Fatal(err)
	}
	if err := b.CreateTopic("t", mq.Partitions(4)); err != nil {
		log.Fatal(err)
	}

	a, err := b.Join("t", "g", mq.MemberID("a"))
	if err != nil {
		log.Fatal(err)
	}
	gen, parts, err := a.Assignment()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("a alone:", gen, parts)

	c, err := b.Join("t", "g", mq.MemberID("c"))
	if err != nil {
		log.Fatal(err)
	}
	_, err = a.Poll(context.Background(), 10)
	fmt.Println(errors.Is(err, mq.ErrRebalanced))
	if gen, parts, err = a.Assignment(); err != nil {
		log.Fatal(err)
	}
	fmt.Println("a with c:", gen, parts)
	if err := errors.Join(c.Close(), a.Close(), b.Close()); err != nil {
		log.Fatal(err)
	}
	// Output:
	// a alone: 1 [0 1 2 3]
	// true
	// a with c: 2 [0 2]
}

// A manual clock moves leases and delays by hand, for tests.
func ExampleManualClock() {
	clock := mq.NewManualClock(0)
	b, err := mq.NewBroker(mq.WithClock(clock))
	if err != nil {
		log.Fatal(err)
	}
	if err := b.CreateTopic("t", mq.AckTimeout(30*time.Second)); err != nil {
		log.Fatal(err)
	}
	if err := b.Subscribe("t", "g"); err != nil {
		log.Fatal(err)
	}
	if _, _, err := b.Publish(context.Background(), "t", nil, []byte("job")); err != nil {
		log.Fatal(err)
	}

	msgs, err := b.Poll(context.Background(), "t", "g", 0, 1)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(msgs[0].Value), msgs[0].DeliveryCount)
	clock.Advance(31 * time.Second) // the lease runs out: delivered again
	if msgs, err = b.Poll(context.Background(), "t", "g", 0, 1); err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(msgs[0].Value), msgs[0].DeliveryCount)
	if err := b.Close(); err != nil {
		log.Fatal(err)
	}
	// Output:
	// job 1
	// job 2
}

// A delayed message is appended at once but handed out only when the broker clock reaches its
// publish time + delay; it holds the messages behind it in its partition.
func ExampleWithDelay() {
	clock := mq.NewManualClock(0)
	b, err := mq.NewBroker(mq.WithClock(clock))
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()
	if err := b.CreateTopic("t"); err != nil {
		log.Fatal(err)
	}
	if err := b.Subscribe("t", "g"); err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	if _, _, err := b.Publish(ctx, "t", nil, []byte("in a minute"), mq.WithDelay(time.Minute)); err != nil {
		log.Fatal(err)
	}
	if _, err := b.PublishBatch(ctx, "t", []mq.Record{{Value: []byte("now")}, {Value: []byte("in 2 min"), Delay: 2 * time.Minute}}); err != nil {
		log.Fatal(err)
	}
	noWait, cancel := context.WithTimeout(ctx, 0)
	defer cancel()
	for i := 0; i < 3; i++ {
		msgs, err := b.Poll(noWait, "t", "g", 0, 10)
		var got []string
		for _, m := range msgs {
			got = append(got, string(m.Value))
		}
		fmt.Println(got, errors.Is(err, mq.ErrTimeout))
		if len(msgs) > 0 {
			if err := b.Ack("t", "g", 0, msgs[len(msgs)-1].Offset); err != nil {
				log.Fatal(err)
			}
		}
		clock.Advance(time.Minute)
	}
	// Output:
	// [] true
	// [in a minute now] false
	// [in 2 min] false
}

// A share group is a task queue: any number of workers poll the same partition, each poll
// acquires messages no other poll holds, and each message is settled on its own, in any order.
func ExampleShare() {
	b, err := mq.NewBroker()
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()
	if err := b.CreateTopic("jobs"); err != nil {
		log.Fatal(err)
	}
	if err := b.Subscribe("jobs", "workers", mq.Share(mq.ShareAll), mq.MaxAcquired(100)); err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	for _, job := range []string{"job-1", "job-2", "job-3", "job-4"} {
		if _, _, err := b.Publish(ctx, "jobs", nil, []byte(job)); err != nil {
			log.Fatal(err)
		}
	}
	noWait, cancel := context.WithTimeout(ctx, 0)
	defer cancel()
	settle := func(m mq.Message, a mq.SettleAction) {
		if err := b.Settle("jobs", "workers", m.Partition, m.Offset, m.DeliveryCount, a); err != nil {
			log.Fatal(err)
		}
	}
	show := func(who string, msgs []mq.Message) {
		for _, m := range msgs {
			fmt.Printf("%s: %s (delivery %d)\n", who, m.Value, m.DeliveryCount)
		}
	}
	// Two workers on the one partition: neither is handed what the other holds.
	a, err := b.Poll(noWait, "jobs", "workers", 0, 2)
	if err != nil {
		log.Fatal(err)
	}
	c, err := b.Poll(noWait, "jobs", "workers", 0, 2)
	if err != nil {
		log.Fatal(err)
	}
	show("A", a)
	show("B", c)
	// A finishes job-2 and gives job-1 back; B finishes both of its jobs.
	settle(a[1], mq.SettleAccept)
	settle(a[0], mq.SettleRelease)
	settle(c[0], mq.SettleAccept)
	settle(c[1], mq.SettleAccept)
	again, err := b.Poll(noWait, "jobs", "workers", 0, 10)
	if err != nil {
		log.Fatal(err)
	}
	show("B", again)
	// The first acquisition's delivery count is stale now.
	err = b.Settle("jobs", "workers", 0, a[0].Offset, a[0].DeliveryCount, mq.SettleAccept)
	fmt.Println(errors.Is(err, mq.ErrNotInFlight))
	settle(again[0], mq.SettleAccept)
	gi, err := b.GroupInfo("jobs", "workers", 0)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("committed", gi.Committed, "acquired", gi.Acquired)
	// Output:
	// A: job-1 (delivery 1)
	// A: job-2 (delivery 1)
	// B: job-3 (delivery 1)
	// B: job-4 (delivery 1)
	// B: job-1 (delivery 2)
	// true
	// committed 4 acquired 0
}

func ExampleKeyPartition() {
	p, err := mq.KeyPartition([]byte("user-a"), 2)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(p, mq.Murmur2([]byte("21")))
	// Output: 1 -973932308
}

// A consumer loop whose ack travels with its next poll: one call per batch (library 1.1).
// AckPollBatch polls into one reusable Batch, so the loop allocates nothing.
func ExampleBroker_AckPollBatch() {
	b, err := mq.NewBroker()
	if err != nil {
		log.Fatal(err)
	}
	if err := b.CreateTopic("events"); err != nil {
		log.Fatal(err)
	}
	if err := b.Subscribe("events", "audit"); err != nil {
		log.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		if _, _, err := b.Publish(context.Background(), "events", nil, []byte(fmt.Sprintf("e-%d", i))); err != nil {
			log.Fatal(err)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	var batch mq.Batch
	err = b.PollBatch(ctx, "events", "audit", 0, 2, &batch)
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
	// The loop ends when nothing comes within the deadline (any other error is a failure);
	// the last ack stood.
	if !errors.Is(err, mq.ErrTimeout) {
		log.Fatal(err)
	}
	info, err := b.GroupInfo("events", "audit", 0)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("committed", info.Committed)
	if err := b.Close(); err != nil {
		log.Fatal(err)
	}
	// Output:
	// 0:e-0 1:e-1
	// 2:e-2 3:e-3
	// 4:e-4
	// committed 5
}

// Deleting a topic frees its name; what was waiting on it returns ErrNoTopic.
func ExampleBroker_DeleteTopic() {
	b, err := mq.NewBroker()
	if err != nil {
		log.Fatal(err)
	}
	if err := b.CreateTopic("tmp"); err != nil {
		log.Fatal(err)
	}
	if err := b.Subscribe("tmp", "g"); err != nil {
		log.Fatal(err)
	}

	polled := make(chan error)
	go func() {
		_, err := b.Poll(context.Background(), "tmp", "g", 0, 10) // waits: nothing published
		polled <- err
	}()
	if err := b.DeleteTopic("tmp"); err != nil {
		log.Fatal(err)
	}
	fmt.Println(errors.Is(<-polled, mq.ErrNoTopic))
	fmt.Println(b.CreateTopic("tmp")) // a new, empty topic
	if err := b.Close(); err != nil {
		log.Fatal(err)
	}
	// Output:
	// true
	// <nil>
}
