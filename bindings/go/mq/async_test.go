package mq

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The waits of Broker.Poll, AckPoll, Publish and PublishBatch are the library's asynchronous
// calls (async.go): the goroutine parks on a channel and holds no OS thread. These tests wait
// for the goroutines to be parked (the parked counter) instead of sleeping.

// waitParked waits until n goroutines more than base are parked on a pending call.
func waitParked(t testing.TB, base, n int64) {
	t.Helper()
	eventually(t, fmt.Sprintf("%d calls to be pending", n), func() bool { return parked.Load()-base >= n })
}

type callResult struct {
	msgs []Message
	err  error
}

// goPoll runs Poll on a goroutine and returns where its result goes.
func goPoll(b *Broker, ctx context.Context, topic, group string, partition, max int) chan callResult {
	ch := make(chan callResult, 1)
	go func() {
		msgs, err := b.Poll(ctx, topic, group, partition, max)
		ch <- callResult{msgs, err}
	}()
	return ch
}

func receive(t testing.TB, what string, ch chan callResult) callResult {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(10 * time.Second):
		t.Fatalf("%s did not complete", what)
	}
	return callResult{}
}

// A poll with nothing to hand out parks, and a later publish completes it with the message.
func TestAsyncPollCompletedByPublish(t *testing.T) {
	b := newBroker(t)
	must(t, b.CreateTopic("t", Partitions(2)))
	must(t, b.Subscribe("t", "g"))
	base := parked.Load()
	ch := goPoll(b, context.Background(), "t", "g", 1, 10)
	waitParked(t, base, 1)
	if _, _, err := b.Publish(context.Background(), "t", keyFor(t, 0, 2), []byte("other partition")); err != nil {
		t.Fatal(err)
	}
	key := keyFor(t, 1, 2)
	if _, _, err := b.Publish(context.Background(), "t", key, []byte("hello"), WithHeaders(Header{"h", []byte("v")})); err != nil {
		t.Fatal(err)
	}
	r := receive(t, "the pending poll", ch)
	must(t, r.err)
	if len(r.msgs) != 1 || string(r.msgs[0].Value) != "hello" || !bytes.Equal(r.msgs[0].Key, key) ||
		r.msgs[0].Partition != 1 || len(r.msgs[0].Headers) != 1 || string(r.msgs[0].Headers[0].Value) != "v" {
		t.Fatalf("pending poll got %+v", r.msgs)
	}
	// The message stays valid after the ack (a copy in Go memory).
	must(t, b.Ack("t", "g", 1, r.msgs[0].Offset))
	runtime.GC()
	if string(r.msgs[0].Value) != "hello" {
		t.Fatalf("message changed after the ack: %q", r.msgs[0].Value)
	}
}

func keyFor(t testing.TB, partition, partitions int) []byte {
	for i := 0; ; i++ {
		k := []byte("key" + strconv.Itoa(i))
		p, err := KeyPartition(k, partitions)
		must(t, err)
		if p == partition {
			return k
		}
	}
}

// PollBatch and AckPollBatch wait the same way; the messages land in the Batch's storage.
func TestAsyncPollBatchAndAckPoll(t *testing.T) {
	b := newBroker(t)
	must(t, b.CreateTopic("t"))
	must(t, b.Subscribe("t", "g"))
	publish(t, b, "t", nil, "a")
	var into Batch
	must(t, b.PollBatch(noWait(), "t", "g", 0, 10, &into))
	base := parked.Load()
	done := make(chan error, 1)
	go func() { done <- b.AckPollBatch(context.Background(), "t", "g", 0, 0, 10, &into) }()
	waitParked(t, base, 1)
	// The ack stands while the poll waits.
	if gi, err := b.GroupInfo("t", "g", 0); err != nil || gi.Committed != 1 || gi.InFlight != 0 {
		t.Fatalf("while the ack-poll waits: %+v %v", gi, err)
	}
	publish(t, b, "t", nil, "b", "c")
	select {
	case err := <-done:
		must(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("the pending ack-poll did not complete")
	}
	got := values(into.Messages)
	if len(got) == 0 || got[0] != "b" {
		t.Fatalf("ack-poll got %v", got)
	}
	// And AckPoll (fresh memory), pending again.
	last := into.Messages[len(into.Messages)-1].Offset
	if last < 2 {
		msgs, err := b.Poll(noWait(), "t", "g", 0, 10)
		must(t, err)
		last = msgs[len(msgs)-1].Offset
	}
	base = parked.Load()
	ch := make(chan callResult, 1)
	go func() {
		msgs, err := b.AckPoll(context.Background(), "t", "g", 0, last, 10)
		ch <- callResult{msgs, err}
	}()
	waitParked(t, base, 1)
	publish(t, b, "t", nil, "d")
	r := receive(t, "the pending AckPoll", ch)
	must(t, r.err)
	if got := values(r.msgs); len(got) != 1 || got[0] != "d" {
		t.Fatalf("AckPoll got %v", got)
	}
}

// A message larger than the waiting poll's C buffer (64 KiB at most) still arrives whole.
func TestAsyncPollOfALargeMessage(t *testing.T) {
	b := newBroker(t, WithMaxMessageBytes(1<<20))
	must(t, b.CreateTopic("t"))
	must(t, b.Subscribe("t", "g"))
	big := bytes.Repeat([]byte("x"), 200<<10)
	for _, reuse := range []bool{false, true} {
		base := parked.Load()
		ch := make(chan callResult, 1)
		var into Batch
		go func() {
			if reuse {
				err := b.PollBatch(context.Background(), "t", "g", 0, 1, &into)
				ch <- callResult{into.Messages, err}
				return
			}
			msgs, err := b.Poll(context.Background(), "t", "g", 0, 1)
			ch <- callResult{msgs, err}
		}()
		waitParked(t, base, 1)
		if _, _, err := b.Publish(context.Background(), "t", nil, big); err != nil {
			t.Fatal(err)
		}
		r := receive(t, "the pending poll", ch)
		must(t, r.err)
		if len(r.msgs) != 1 || !bytes.Equal(r.msgs[0].Value, big) {
			t.Fatalf("reuse %v: got %d messages", reuse, len(r.msgs))
		}
		must(t, b.Ack("t", "g", 0, r.msgs[0].Offset))
	}
}

// A publish pending on a full partition completes when an ack makes room; a batch goes on as
// room appears.
func TestAsyncPublishCompletedByAck(t *testing.T) {
	b := newBroker(t)
	must(t, b.CreateTopic("t", Capacity(1)))
	must(t, b.Subscribe("t", "g"))
	publish(t, b, "t", nil, "a")
	base := parked.Load()
	type pubResult struct {
		off int64
		err error
	}
	pub := make(chan pubResult, 1)
	go func() {
		_, off, err := b.Publish(context.Background(), "t", []byte{}, []byte("b"), WithHeaders(Header{"n", []byte("1")}))
		pub <- pubResult{off, err}
	}()
	waitParked(t, base, 1)
	if info, _ := b.PartitionInfo("t", 0); info.ProducerWaits != 1 {
		t.Fatalf("producer waits %d", info.ProducerWaits)
	}
	msgs, err := b.Poll(noWait(), "t", "g", 0, 1)
	must(t, err)
	must(t, b.Ack("t", "g", 0, msgs[0].Offset))
	select {
	case r := <-pub:
		if r.err != nil || r.off != 1 {
			t.Fatalf("pending publish: offset %d, %v", r.off, r.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the pending publish did not complete")
	}
	msgs, err = b.Poll(noWait(), "t", "g", 0, 1)
	must(t, err)
	if len(msgs) != 1 || string(msgs[0].Value) != "b" || msgs[0].Key == nil || len(msgs[0].Headers) != 1 {
		t.Fatalf("the published message: %+v", msgs)
	}

	// A batch of three into the full partition: one record per ack.
	base = parked.Load()
	batch := make(chan error, 1)
	var results []PublishResult
	go func() {
		var err error
		results, err = b.PublishBatch(context.Background(), "t", []Record{{Value: []byte("c")}, {Value: []byte("d")}, {Value: []byte("e")}})
		batch <- err
	}()
	waitParked(t, base, 1)
	for i := 0; i < 3; i++ {
		must(t, b.Ack("t", "g", 0, msgs[0].Offset))
		eventually(t, "the next record", func() bool {
			m, err := b.Poll(noWait(), "t", "g", 0, 1)
			if err != nil {
				return false
			}
			msgs = m
			return true
		})
	}
	select {
	case err := <-batch:
		must(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("the pending batch did not complete")
	}
	if len(results) != 3 || results[0].Offset != 2 || results[2].Offset != 4 {
		t.Fatalf("batch results %+v", results)
	}
}

// A deadline ends a pending poll with ErrTimeout and a pending publish with ErrFull, both
// matching context.DeadlineExceeded.
func TestAsyncDeadline(t *testing.T) {
	b := newBroker(t)
	must(t, b.CreateTopic("t", Capacity(1)))
	must(t, b.Subscribe("t", "g"))
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := b.Poll(ctx, "t", "g", 0, 1)
	wantStatus(t, err, ErrTimeout, StatusTimeout)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("%v does not match DeadlineExceeded", err)
	}
	publish(t, b, "t", nil, "a")
	ctx2, cancel2 := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel2()
	_, _, err = b.Publish(ctx2, "t", nil, []byte("b"))
	wantStatus(t, err, ErrFull, StatusFull)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("%v does not match DeadlineExceeded", err)
	}
	ctx3, cancel3 := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel3()
	res, err := b.PublishBatch(ctx3, "t", []Record{{Value: []byte("c")}})
	wantStatus(t, err, ErrFull, StatusFull)
	if len(res) != 1 || res[0].Offset != -1 {
		t.Errorf("batch results %+v", res)
	}
}

// Cancelling the context ends each kind of pending call with ErrCancelled (also
// context.Canceled); the token goes back clean (the next call under a new context waits).
func TestAsyncCancel(t *testing.T) {
	b := newBroker(t)
	must(t, b.CreateTopic("t", Capacity(1), Partitions(2)))
	must(t, b.Subscribe("t", "g"))
	k1 := keyFor(t, 1, 2)
	if _, _, err := b.Publish(noWait(), "t", k1, []byte("full")); err != nil {
		t.Fatal(err)
	}
	calls := map[string]func(ctx context.Context) error{
		"poll": func(ctx context.Context) error { _, err := b.Poll(ctx, "t", "g", 0, 1); return err },
		"poll batch": func(ctx context.Context) error {
			var into Batch
			return b.PollBatch(ctx, "t", "g", 0, 1, &into)
		},
		"publish": func(ctx context.Context) error { _, _, err := b.Publish(ctx, "t", k1, []byte("x")); return err },
		"publish batch": func(ctx context.Context) error {
			_, err := b.PublishBatch(ctx, "t", []Record{{Key: k1, Value: []byte("y")}})
			return err
		},
	}
	for round := 0; round < 3; round++ {
		for name, call := range calls {
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
	// The recycled tokens are not stale: a call under a fresh context waits to its deadline.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	_, err := b.Poll(ctx, "t", "g", 0, 1)
	wantStatus(t, err, ErrTimeout, StatusTimeout)
	if info, _ := b.PartitionInfo("t", 1); info.End != 1 {
		t.Errorf("cancelled publishes appended: end %d", info.End)
	}
}

// Close completes every pending call with ErrClosed, and returns after them.
func TestAsyncCloseCompletesPending(t *testing.T) {
	b, err := NewBroker()
	must(t, err)
	must(t, b.CreateTopic("t", Capacity(1), Partitions(2)))
	must(t, b.Subscribe("t", "g"))
	k1 := keyFor(t, 1, 2)
	if _, _, err := b.Publish(noWait(), "t", k1, []byte("full")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	base := parked.Load()
	const n = 8
	errs := make(chan error, 4*n)
	for i := 0; i < n; i++ {
		go func() { _, err := b.Poll(context.Background(), "t", "g", 0, 1); errs <- err }()
		go func() { _, err := b.AckPoll(ctx, "t", "g", 0, 0, 1); errs <- err }()
		go func() { _, _, err := b.Publish(ctx, "t", k1, []byte("x")); errs <- err }()
		go func() {
			_, err := b.PublishBatch(context.Background(), "t", []Record{{Key: k1, Value: []byte("y")}})
			errs <- err
		}()
	}
	// AckPoll of offset 0 fails at once (ErrNotInFlight: nothing in flight on partition 0).
	for i := 0; i < n; i++ {
		wantStatus(t, <-errs, ErrNotInFlight, StatusNotInFlight)
	}
	waitParked(t, base, 3*n)
	must(t, b.Close())
	for i := 0; i < 3*n; i++ {
		select {
		case err := <-errs:
			wantStatus(t, err, ErrClosed, StatusClosed)
		case <-time.After(10 * time.Second):
			t.Fatalf("%d pending calls not completed by Close", 3*n-i)
		}
	}
}

// Shutdown too, and calls after it get ErrClosed at once.
func TestAsyncShutdownCompletesPending(t *testing.T) {
	b := newBroker(t)
	must(t, b.CreateTopic("t"))
	must(t, b.Subscribe("t", "g"))
	base := parked.Load()
	ch := goPoll(b, context.Background(), "t", "g", 0, 1)
	waitParked(t, base, 1)
	must(t, b.Shutdown())
	wantStatus(t, receive(t, "the pending poll", ch).err, ErrClosed, StatusClosed)
	_, err := b.Poll(context.Background(), "t", "g", 0, 1)
	wantStatus(t, err, ErrClosed, StatusClosed)
}

// Deleting the topic ends a pending poll with ErrNoTopic, with the library's message.
func TestAsyncTopicDeletion(t *testing.T) {
	b := newBroker(t)
	must(t, b.CreateTopic("t"))
	must(t, b.Subscribe("t", "g"))
	base := parked.Load()
	ch := goPoll(b, context.Background(), "t", "g", 0, 1)
	waitParked(t, base, 1)
	must(t, b.DeleteTopic("t"))
	e := wantStatus(t, receive(t, "the pending poll", ch).err, ErrNoTopic, StatusNoTopic)
	if e.Message == "" {
		t.Errorf("no detail message (mq_last_error read on the completer thread): %v", e)
	}
}

// osThreads is the number of OS threads of this process.
func osThreads(t testing.TB) int {
	entries, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Skipf("no /proc/self/task: %v", err)
	}
	return len(entries)
}

func rssKiB() int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			n, _ := strconv.ParseInt(f[1], 10, 64)
			return n
		}
	}
	return -1
}

// 10,000 goroutines waiting in Poll, one per partition, hold no OS thread each: the process's
// threads stay a handful (a blocking cgo call would pin 10,000; Go's default limit is 10,000
// threads). Fewer under the race detector (at most 8,128 live goroutines) and with -short.
func TestAsyncManyPendingPollsHoldNoThreads(t *testing.T) {
	n := 10000
	if raceEnabled {
		n = 4000
	}
	if testing.Short() {
		n = 1000
	}
	b := newBroker(t)
	must(t, b.CreateTopic("t", Partitions(n), Capacity(4)))
	must(t, b.Subscribe("t", "g"))
	// One pending call first: it starts the broker's completer thread and the M its callback
	// runs Go on.
	base := parked.Load()
	first := goPoll(b, context.Background(), "t", "g", 0, 1)
	waitParked(t, base, 1)
	before, rssBefore := osThreads(t), rssKiB()
	results := make(chan callResult, n)
	var wg sync.WaitGroup
	for p := 1; p < n; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			msgs, err := b.Poll(context.Background(), "t", "g", p, 1)
			results <- callResult{msgs, err}
		}()
	}
	waitParked(t, base, int64(n))
	after, rssAfter := osThreads(t), rssKiB()
	t.Logf("%d pending polls: %d OS threads with 1 pending, %d with %d (GOMAXPROCS %d); RSS +%d KiB (%.0f bytes per pending call, goroutine included)",
		n, before, after, n, runtime.GOMAXPROCS(0), rssAfter-rssBefore, float64(rssAfter-rssBefore)*1024/float64(n-1))
	if after-before > 8 {
		t.Errorf("%d pending polls added %d OS threads (%d -> %d)", n-1, after-before, before, after)
	}
	// One publish to each partition completes each poll with its message.
	// (Keyless publishes go round-robin: n of them reach every partition once.)
	for p := 0; p < n; p++ {
		if _, _, err := b.Publish(context.Background(), "t", nil, []byte("m")); err != nil {
			t.Fatal(err)
		}
	}
	seen := make([]bool, n)
	r := receive(t, "the first poll", first)
	must(t, r.err)
	seen[0] = true
	for i := 1; i < n; i++ {
		r := receive(t, "a pending poll", results)
		must(t, r.err)
		if len(r.msgs) != 1 || seen[r.msgs[0].Partition] {
			t.Fatalf("pending poll got %+v", r.msgs)
		}
		seen[r.msgs[0].Partition] = true
	}
	wg.Wait()
}

// A program may end with calls still pending, its broker never closed: nothing crashes and
// exit does not hang (the completer thread is the library's; the parked goroutines just end).
// Run in a child process: this test binary, asked by the environment to be that program.
func TestAsyncExitWithPendingCalls(t *testing.T) {
	if os.Getenv("MQ_GO_ASYNC_EXIT_CHILD") == "1" {
		asyncExitChild(t)
		return
	}
	exe, err := os.Executable()
	must(t, err)
	cmd := exec.Command(exe, "-test.run=^TestAsyncExitWithPendingCalls$", "-test.count=1")
	cmd.Env = append(os.Environ(), "MQ_GO_ASYNC_EXIT_CHILD=1")
	done := make(chan error, 1)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	must(t, cmd.Start())
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil || !strings.Contains(out.String(), "PASS") {
			t.Fatalf("the child ended with %v:\n%s", err, out.String())
		}
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("the child did not exit:\n%s", out.String())
	}
}

func asyncExitChild(t *testing.T) {
	b, err := NewBroker() // never closed
	must(t, err)
	must(t, b.CreateTopic("t", Capacity(1), Partitions(4)))
	must(t, b.Subscribe("t", "g"))
	publish(t, b, "t", keyFor(t, 3, 4), "full")
	base := parked.Load()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for p := 0; p < 3; p++ {
		go func() { _, _ = b.Poll(context.Background(), "t", "g", p, 1) }()
		go func() { _, _ = b.AckPoll(ctx, "t", "g", p, 0, 1) }()
	}
	go func() { _, _, _ = b.Publish(context.Background(), "t", keyFor(t, 3, 4), []byte("x")) }()
	go func() { _, _ = b.PublishBatch(ctx, "t", []Record{{Key: keyFor(t, 3, 4), Value: []byte("y")}}) }()
	waitParked(t, base, 5)
	runtime.GC()
	// A second broker dropped unclosed with nothing pending goes to its cleanup meanwhile.
	b2, err := NewBroker()
	must(t, err)
	must(t, b2.CreateTopic("t"))
	b2 = nil
	runtime.GC()
	runtime.KeepAlive(b)
}

// Many goroutines parked on one partition, some of them cancelled at random while a producer
// publishes: every message is handed out exactly once (a poll cancelled after it completed
// returns its messages; one cancelled before hands out nothing).
func TestAsyncManyWaitersOnePartitionWithCancels(t *testing.T) {
	const consumers, total = 32, 3000
	b := newBroker(t)
	must(t, b.CreateTopic("t", Capacity(64)))
	must(t, b.Subscribe("t", "g"))
	var mu sync.Mutex
	seen := make(map[int64]int)
	got := 0
	all := make(chan struct{})
	stop, cancelAll := context.WithCancel(context.Background())
	defer cancelAll()
	var wg sync.WaitGroup
	for c := 0; c < consumers; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; stop.Err() == nil; i++ {
				ctx, cancel := context.WithCancel(stop)
				if i%3 == c%3 {
					go cancel() // races with the call: before it parks, while parked, after it ended
				}
				msgs, err := b.Poll(ctx, "t", "g", 0, 1+c%3)
				cancel()
				if err != nil {
					if !errors.Is(err, ErrCancelled) {
						t.Errorf("poll: %v", err)
						return
					}
					continue
				}
				mu.Lock()
				for _, m := range msgs {
					seen[m.Offset]++
				}
				got += len(msgs)
				if got == total {
					close(all)
				}
				mu.Unlock()
				_ = b.Ack("t", "g", 0, msgs[len(msgs)-1].Offset) // others may have acked past it
			}
		}()
	}
	for i := 0; i < total; i++ {
		if _, _, err := b.Publish(within(t, 10*time.Second), "t", nil, []byte("m")); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-all:
	case <-time.After(20 * time.Second):
		mu.Lock()
		t.Fatalf("%d of %d messages handed out", got, total)
	}
	cancelAll()
	wg.Wait()
	for off := int64(0); off < total; off++ {
		if seen[off] != 1 {
			t.Fatalf("offset %d handed out %d times", off, seen[off])
		}
	}
}
