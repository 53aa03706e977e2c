// Command trace runs the specification's reference trace and push step through the Go
// binding and prints them exactly as the C demo (examples/demo.c) prints its trace section.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/mqlib/mq/bindings/go/mq"
)

// out is where the trace goes (a test captures it).
var out io.Writer = os.Stdout

const (
	orders = "orders"
	callW  = 46
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "trace:", err)
		os.Exit(1)
	}
}

func run() error {
	clock := mq.NewManualClock(1_000_000_000)
	b, err := mq.NewBroker(mq.WithClock(clock))
	if err != nil {
		return err
	}
	defer b.Close()
	if err := runTrace(b, clock); err != nil {
		return err
	}
	return runPush(b)
}

// statusText is the C demo's "MQ_FULL (detail)".
func statusText(err error) string {
	var e *mq.Error
	if errors.As(err, &e) {
		return fmt.Sprintf("%s (%s)", e.Status, e.Message)
	}
	return err.Error()
}

// row prints one trace row and partition 1's state after it.
func row(b *mq.Broker, n int, call, result string) error {
	state, err := b.Describe(orders, 1)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "  %d  %-*s %s\n", n, callW, call, result)
	fmt.Fprintf(out, "       partition 1 after: %s\n", state)
	return nil
}

func pollRow(b *mq.Broker, group string, max int) (string, []mq.Message) {
	// An expired context: the trace is single-threaded, polls do not wait.
	ctx, cancel := context.WithTimeout(context.Background(), 0)
	defer cancel()
	msgs, err := b.Poll(ctx, orders, group, 1, max)
	if err != nil {
		return "poll: " + statusText(err), nil
	}
	parts := make([]string, len(msgs))
	for i, m := range msgs {
		parts[i] = fmt.Sprintf("%d:%s", m.Offset, m.Value)
	}
	res := strings.Join(parts, ", ")
	if len(msgs) > 0 && msgs[0].DeliveryCount > 1 {
		res += fmt.Sprintf(" (lease ran out, rewound to %d)", msgs[0].Offset)
	}
	return res, msgs
}

func ackInto(b *mq.Broker, group string, offset int64, res string) string {
	if err := b.Ack(orders, group, 1, offset); err != nil {
		res += fmt.Sprintf("; ack %d: %s", offset, statusText(err))
	}
	return res
}

func noWait() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 0)
}

func runTrace(b *mq.Broker, clock *mq.ManualClock) error {
	if err := b.CreateTopic(orders, mq.Partitions(2), mq.Capacity(3), mq.AckTimeout(30*time.Second)); err != nil {
		return err
	}
	for _, g := range []string{"billing", "email"} {
		if err := b.Subscribe(orders, g); err != nil {
			return err
		}
	}
	pa, err := mq.KeyPartition([]byte("user-a"), 2)
	if err != nil {
		return err
	}
	pb, err := mq.KeyPartition([]byte("user-b"), 2)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "Reference trace: topic orders, 2 partitions, capacity 3, ack timeout 30 s;\n")
	fmt.Fprintf(out, "groups billing and email subscribed first; user-a -> partition %d, user-b -> partition %d.\n"+
		"Rows trace partition 1 (committed/next per group).\n\n", pa, pb)
	fmt.Fprintf(out, "  #  %-*s %s\n", callW, "call", "result")
	fmt.Fprintf(out, "  -  %-*s %s\n", callW, "----", "------")

	ctx, cancel := noWait()
	defer cancel()

	// 1: three messages for user-a and one for user-b, each fitting without a wait
	keys := []string{"user-a", "user-a", "user-a", "user-b"}
	pays := []string{"o-1", "o-2", "o-3", "o-4"}
	var p [4]int
	var o [4]int64
	res := ""
	for i := range keys {
		if p[i], o[i], err = b.Publish(ctx, orders, []byte(keys[i]), []byte(pays[i])); err != nil {
			res = fmt.Sprintf("publish %s: %s", pays[i], statusText(err))
			break
		}
	}
	if res == "" && p[1] == p[0] && p[2] == p[0] {
		res = fmt.Sprintf("offsets %d, %d, %d on p%d; %d on p%d", o[0], o[1], o[2], p[0], o[3], p[3])
	} else if res == "" {
		res = fmt.Sprintf("o-1..o-3 on partitions %d, %d, %d", p[0], p[1], p[2])
	}
	if err := row(b, 1, "publish o-1, o-2, o-3 (user-a); o-4 (user-b)", res); err != nil {
		return err
	}

	// 2: the partition is at capacity and the publish may not wait
	_, off, err := b.Publish(ctx, orders, []byte("user-a"), []byte("o-5"))
	switch {
	case errors.Is(err, mq.ErrFull):
		res = "full"
	case err == nil:
		res = fmt.Sprintf("offset %d", off)
	default:
		res = statusText(err)
	}
	if err := row(b, 2, "publish o-5 (user-a), wait 0", res); err != nil {
		return err
	}

	// 3
	res, _ = pollRow(b, "billing", 2)
	res = ackInto(b, "billing", 0, res)
	if err := row(b, 3, "billing polls max 2, acks 0", res); err != nil {
		return err
	}

	// 4: email's ack frees offset 0, which billing has already acked
	res, _ = pollRow(b, "email", 10)
	res = ackInto(b, "email", 2, res)
	if err := row(b, 4, "email polls max 10, acks 2", res); err != nil {
		return err
	}

	// 5
	part, off, err := b.Publish(ctx, orders, []byte("user-a"), []byte("o-5"))
	switch {
	case err == nil && part == 1:
		res = fmt.Sprintf("offset %d", off)
	case err == nil:
		res = fmt.Sprintf("offset %d on p%d", off, part)
	default:
		res = statusText(err)
	}
	if err := row(b, 5, "publish o-5 again", res); err != nil {
		return err
	}

	// 6: billing's lease (30 s) from row 3 runs out
	clock.Advance(31 * time.Second)
	res, _ = pollRow(b, "billing", 10)
	if err := row(b, 6, "clock +31 s; billing polls max 10", res); err != nil {
		return err
	}

	// 7
	res = "ok"
	if err := b.Ack(orders, "billing", 1, 3); err != nil {
		res = statusText(err)
	}
	if err := row(b, 7, "billing acks 3", res); err != nil {
		return err
	}

	// 8: never delivered, so rejected with a message naming the in-flight range
	err = b.Ack(orders, "billing", 1, 7)
	var e *mq.Error
	switch {
	case errors.Is(err, mq.ErrNotInFlight) && errors.As(err, &e):
		res = "rejected: " + e.Message
	case err == nil:
		res = "ok"
	default:
		res = statusText(err)
	}
	return row(b, 8, "billing acks 7", res)
}

type handlerCall struct {
	payload string
	offset  int64
	ok      bool
}

func runPush(b *mq.Broker) error {
	fmt.Fprintf(out, "\nPush: topic payments, 1 partition, capacity 10; group ledger's handler fails "+
		"the first time it sees pay-2.\n\n")
	if err := b.CreateTopic("payments", mq.Partitions(1), mq.Capacity(10)); err != nil {
		return err
	}
	var (
		mu       sync.Mutex
		calls    []handlerCall
		failed   bool
		fourCall = make(chan struct{})
	)
	handler := func(m *mq.Message) error {
		mu.Lock()
		defer mu.Unlock()
		isPay2 := string(m.Value) == "pay-2"
		ok := !(isPay2 && !failed)
		if isPay2 {
			failed = true
		}
		calls = append(calls, handlerCall{string(m.Value), m.Offset, ok})
		if len(calls) == 4 {
			close(fourCall)
		}
		if !ok {
			return errors.New("pay-2 fails the first time")
		}
		return nil
	}
	// The failure is the scenario, not news: keep it out of the log.
	sub, err := b.SubscribeFunc("payments", "ledger", handler, mq.OnError(func(*mq.Message, error) {}))
	if err != nil {
		return err
	}
	for _, pay := range []string{"pay-1", "pay-2", "pay-3"} {
		if _, _, err := b.Publish(context.Background(), "payments", nil, []byte(pay)); err != nil {
			return err
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	select {
	case <-fourCall:
	case <-time.After(time.Until(deadline)):
	}
	// Then the last ack must land.
	for {
		gi, err := b.GroupInfo("payments", "ledger", 0)
		if err != nil {
			return err
		}
		if gi.Committed == 3 || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond) // the interval between looks at observable state
	}
	if err := sub.Close(); err != nil {
		return err
	}
	mu.Lock()
	defer mu.Unlock()
	for i, c := range calls {
		outcome := "ok, acked"
		if !c.ok {
			outcome = "failed, nacked"
		}
		fmt.Fprintf(out, "  handler call %d: %s (offset %d) -> %s\n", i+1, c.payload, c.offset, outcome)
	}
	state, err := b.Describe("payments", 0)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "  after: %s\n", state)
	return nil
}
