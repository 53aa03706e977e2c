// Command testee is the Go binding's conformance testee (tests/conformance/FORMAT.md, "The
// testee protocol"): it reads the runner's requests on stdin, carries out each through the
// public API of package mq, and writes one reply line per request. It compares nothing.
package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mqlib/mq/bindings/go/mq"
)

func main() {
	in := bufio.NewReaderSize(os.Stdin, 1<<16)
	out := bufio.NewWriter(os.Stdout)
	w := newWorld()
	for {
		line, err := in.ReadString('\n')
		if line == "" && err != nil {
			if err != io.EOF {
				fmt.Fprintln(os.Stderr, "testee:", err)
				os.Exit(1)
			}
			return
		}
		line = strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
		fmt.Fprintln(out, w.handle(line))
		out.Flush()
	}
}

// ---- the world of one scenario -------------------------------------------------------------

type push struct {
	mu       sync.Mutex
	sub      *mq.Subscription
	open     bool
	fails    [][]byte // payloads, one entry per failure left
	extends  [][]byte
	delay    *time.Duration
	calls    reply
	releases int
}

type member struct {
	mu         sync.Mutex
	m          *mq.Member
	open       bool
	rebalances reply
}

type background struct {
	cancel context.CancelFunc
	done   chan struct{}
	reply  string
}

type world struct {
	clock  *mq.ManualClock
	broker *mq.Broker

	mu      sync.Mutex // the tables: background calls look members up
	subs    map[string]*push
	members map[string]*member
	calls   map[string]*background
	handles map[string]io.Closer // open publishers and cursors
	order   []string             // names in creation order, for end

	kafkaTopics []string // the topics created on the cluster, deleted by end (kafka.go)
}

func newWorld() *world {
	return &world{
		clock:   mq.NewManualClock(1_000_000_000),
		subs:    map[string]*push{},
		members: map[string]*member{},
		calls:   map[string]*background{},
		handles: map[string]io.Closer{},
	}
}

// handle runs one request line and returns its reply line.
func (w *world) handle(line string) string {
	r, err := parseRequest(line)
	if err != nil {
		return refusal("not a request line: " + err.Error())
	}
	if name, ok := r.raw("async"); ok {
		return w.startBackground(string(decode(name)), r, false)
	}
	if name, ok := r.raw("start"); ok && startable[r.verb] {
		return w.startBackground(string(decode(name)), r, true)
	}
	return w.run(context.Background(), r)
}

func refusal(why string) string {
	var out reply
	out.WriteString("testee_error")
	out.bytes("detail", []byte(why))
	return out.String()
}

// status writes the reply's status: the error's status name and its text (prefix and all).
func status(out *reply, err error) bool {
	if err == nil {
		out.WriteString("MQ_OK")
		return true
	}
	var e *mq.Error
	if !errors.As(err, &e) {
		panic(testeeError("the binding returned an error that is not an *mq.Error: " + err.Error()))
	}
	out.WriteString(e.Status.String())
	out.bytes("error", []byte(err.Error()))
	return false
}

func (w *world) run(parent context.Context, r *request) (line string) {
	defer func() {
		if v := recover(); v != nil {
			te, ok := v.(testeeError)
			if !ok {
				te = testeeError(fmt.Sprint("the testee panicked: ", v))
			}
			line = refusal(string(te))
		}
	}()
	var out reply
	w.verb(parent, r, &out)
	return out.String()
}

func (w *world) member(r *request) *member {
	w.mu.Lock()
	defer w.mu.Unlock()
	m := w.members[r.str("member")]
	if m == nil {
		panic(testeeError("no such member"))
	}
	return m
}

func (w *world) sub(r *request) *push {
	w.mu.Lock()
	defer w.mu.Unlock()
	p := w.subs[r.str("subscription")]
	if p == nil {
		panic(testeeError("no such subscription"))
	}
	return p
}

// waitContext is the Go spelling of a request's wait: -1 no deadline, 0 an expired context,
// n a deadline n ms away. Other negative waits have no Go spelling (a negative timeout is an
// expired context, which means "do not wait").
func waitContext(parent context.Context, ms int64) (context.Context, context.CancelFunc) {
	switch {
	case ms == -1:
		return context.WithCancel(parent)
	case ms >= 0:
		return context.WithTimeout(parent, msDuration(ms))
	default:
		panic(testeeError(fmt.Sprintf("a wait of %d ms has no Go spelling: a context's deadline is the wait, and a negative timeout means do not wait", ms)))
	}
}

// msDuration converts milliseconds, saturating where time.Duration ends (the library refuses
// such values either way).
func msDuration(ms int64) time.Duration {
	const most = math.MaxInt64 / int64(time.Millisecond)
	switch {
	case ms > most:
		return math.MaxInt64
	case ms < -most:
		return math.MinInt64
	}
	return time.Duration(ms) * time.Millisecond
}

func putMessage(out *reply, m *mq.Message) {
	out.field("message", fmt.Sprintf("%d:%d", m.Partition, m.Offset))
	out.bytes("payload", m.Value)
	if m.Key != nil {
		out.bytes("key", m.Key)
	}
	out.int("delivery_count", int64(m.DeliveryCount))
	out.int("timestamp_ns", m.Timestamp)
	out.int("lost", m.Lost)
	for _, h := range m.Headers {
		out.field("header", encode([]byte(h.Key))+":"+encode(h.Value))
	}
	if d := m.DeadLetter; d != nil {
		out.field("dead_letter", fmt.Sprintf("%s:%s:%d:%d:%d", encode([]byte(d.Topic)), encode([]byte(d.Group)),
			d.Partition, d.Offset, d.DeliveryCount))
	}
}

// records are the payload= runs of a request, each with its key=, header= and delay_ms=
// fields.
func records(r *request) []mq.Record {
	var recs []mq.Record
	for _, f := range r.fields {
		switch f.name {
		case "payload":
			recs = append(recs, mq.Record{Value: decode(f.value)})
		case "key":
			recs[len(recs)-1].Key = decode(f.value)
		case "header":
			name, value, _ := strings.Cut(f.value, ":")
			last := &recs[len(recs)-1]
			last.Headers = append(last.Headers, mq.Header{Key: string(decode(name)), Value: decode(value)})
		case "delay_ms":
			ms, err := strconv.ParseInt(f.value, 10, 64)
			if err != nil {
				panic(testeeError("not an integer: delay_ms=" + f.value))
			}
			recs[len(recs)-1].Delay = msDuration(ms)
		}
	}
	return recs
}

func ints(list string) []int {
	if list == "" {
		return nil
	}
	var out []int
	for _, s := range strings.Split(list, ",") {
		n, err := strconv.Atoi(s)
		if err != nil {
			panic(testeeError("not an integer list: " + list))
		}
		out = append(out, n)
	}
	return out
}

func intList(ns []int) string {
	parts := make([]string, len(ns))
	for i, n := range ns {
		parts[i] = strconv.Itoa(n)
	}
	return strings.Join(parts, ",")
}

// take uses up one entry of uses equal to payload.
func take(uses *[][]byte, payload []byte) bool {
	for i, u := range *uses {
		if string(u) == string(payload) {
			*uses = append((*uses)[:i], (*uses)[i+1:]...)
			return true
		}
	}
	return false
}

func statusName(err error) string {
	if err == nil {
		return "MQ_OK"
	}
	var e *mq.Error
	if errors.As(err, &e) {
		return e.Status.String()
	}
	return "MQ_ERR_INTERNAL"
}

// The scripted assignors (FORMAT.md, member_join).
var assignors = map[string]mq.Assignor{
	"all_to_last": func(ids []string, owners []int) {
		for p := range owners {
			owners[p] = len(ids) - 1
		}
	},
	"by_id": func(ids []string, owners []int) {
		order := make([]int, len(ids))
		for i := range order {
			order[i] = i
		}
		sort.SliceStable(order, func(a, b int) bool { return ids[order[a]] < ids[order[b]] })
		for p := range owners {
			owners[p] = order[p%len(ids)]
		}
	},
	"none": func(ids []string, owners []int) {
		for p := range owners {
			owners[p] = len(ids) // out of range: unowned
		}
	},
}
