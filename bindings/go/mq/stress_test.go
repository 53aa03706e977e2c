package mq

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

const (
	sProducers   = 4
	sPerProducer = 2500
	sKeys        = 40
	sPartitions  = 4
	sCapacity    = 64
	sTotal       = sProducers * sPerProducer
	sPerKey      = sTotal / sKeys
)

func sKey(k int) []byte { return []byte(fmt.Sprintf("key-%02d", k)) }

// produce runs the reference stress's producers: key k belongs to producer k % 4, and the
// payload carries (key, per-key sequence number).
func produce(t *testing.T, b *Broker, topic string) {
	var wg sync.WaitGroup
	for p := 0; p < sProducers; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < sPerProducer; i++ {
				k := p + sProducers*(i%(sKeys/sProducers))
				var pl [8]byte
				binary.LittleEndian.PutUint32(pl[:], uint32(k))
				binary.LittleEndian.PutUint32(pl[4:], uint32(i/(sKeys/sProducers)))
				if _, _, err := b.Publish(context.Background(), topic, sKey(k), pl[:]); err != nil {
					t.Errorf("producer %d: %v", p, err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// keyOrder checks per-key order under at-least-once: a key's sequence numbers may repeat
// (redelivery) but never skip ahead, and at the end every one has been seen.
type keyOrder struct {
	mu       sync.Mutex
	next     [sKeys]uint32 // one past the highest seen
	received int
	dups     int
	bad      string
}

func (o *keyOrder) see(m *Message) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.received++
	k := binary.LittleEndian.Uint32(m.Value)
	seq := binary.LittleEndian.Uint32(m.Value[4:])
	switch {
	case k >= sKeys || string(m.Key) != string(sKey(int(k))):
		o.setBad(fmt.Sprintf("key %q does not match payload key %d", m.Key, k))
	case seq > o.next[k]:
		o.setBad(fmt.Sprintf("key %d: seq %d after %d (partition %d offset %d): a gap", k, seq, o.next[k], m.Partition, m.Offset))
	case seq < o.next[k]:
		o.dups++
	default:
		o.next[k] = seq + 1
	}
}

func (o *keyOrder) setBad(s string) {
	if o.bad == "" {
		o.bad = s
	}
}

func (o *keyOrder) check(t *testing.T, name string, exactlyOnce bool) {
	t.Helper()
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.bad != "" {
		t.Errorf("%s: %s", name, o.bad)
	}
	for k, n := range o.next {
		if n != sPerKey {
			t.Errorf("%s: key %d ended at seq %d of %d", name, k, n, sPerKey)
			break
		}
	}
	if exactlyOnce && (o.dups != 0 || o.received != sTotal) {
		t.Errorf("%s: %d messages with %d duplicates, want %d exactly once", name, o.received, o.dups, sTotal)
	}
}

// The reference stress through the Go API: producers blocked by back-pressure, two groups of
// two polling goroutines (round-robin assignment), every message once and in per-key order.
func TestStressPull(t *testing.T) {
	b := newBroker(t)
	must(t, b.CreateTopic("stress", Partitions(sPartitions), Capacity(sCapacity)))
	groups := []string{"billing", "email"}
	orders := map[string]*keyOrder{}
	var wg sync.WaitGroup
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, g := range groups {
		must(t, b.Subscribe("stress", g))
		o := &keyOrder{}
		orders[g] = o
		for c := 0; c < 2; c++ {
			parts, err := RoundRobin(sPartitions, 2, c)
			must(t, err)
			wg.Add(1)
			go func() {
				defer wg.Done()
				consumePull(t, ctx, b, g, parts, o, g == "email")
			}()
		}
	}
	produce(t, b, "stress")
	wg.Wait()
	for _, g := range groups {
		orders[g].check(t, g, true)
	}
	waits, largest := int64(0), int64(0)
	for p := 0; p < sPartitions; p++ {
		info, err := b.PartitionInfo("stress", p)
		must(t, err)
		waits += info.ProducerWaits
		largest = max(largest, info.MaxBacklog)
	}
	if waits == 0 || largest != sCapacity {
		t.Errorf("producer waits %d, largest backlog %d (want > 0 and %d)", waits, largest, sCapacity)
	}
}

func consumePull(t *testing.T, ctx context.Context, b *Broker, group string, parts []int, o *keyOrder, slow bool) {
	var want int
	for _, p := range parts {
		for k := 0; k < sKeys; k++ {
			if kp, _ := KeyPartition(sKey(k), sPartitions); kp == p {
				want += sPerKey
			}
		}
	}
	got := 0
	for got < want {
		progress := false
		for _, p := range parts {
			pctx, cancel := context.WithTimeout(ctx, time.Millisecond)
			msgs, err := b.Poll(pctx, "stress", group, p, 10)
			cancel()
			if errors.Is(err, ErrTimeout) {
				continue
			}
			if err != nil {
				t.Errorf("%s poll: %v", group, err)
				return
			}
			for i := range msgs {
				o.see(&msgs[i])
			}
			got += len(msgs)
			if err := b.Ack("stress", group, p, msgs[len(msgs)-1].Offset); err != nil {
				t.Errorf("%s ack: %v", group, err)
				return
			}
			if slow {
				time.Sleep(200 * time.Microsecond)
			}
			progress = true
		}
		if !progress && ctx.Err() != nil {
			t.Errorf("%s: %d of %d messages before the deadline", group, got, want)
			return
		}
	}
}

// Push subscriptions (two members of one group) whose handler fails now and then: every
// message is handled at least once, per-key order never skips ahead.
func TestStressPushAtLeastOnce(t *testing.T) {
	b := newBroker(t)
	must(t, b.CreateTopic("stress", Partitions(sPartitions), Capacity(sCapacity)))
	var o keyOrder
	var calls atomic.Int64
	var subs []*Subscription
	for i := 0; i < 2; i++ {
		s, err := b.SubscribeFunc("stress", "push", func(m *Message) error {
			if calls.Add(1)%97 == 0 {
				return errors.New("injected failure")
			}
			if calls.Load()%389 == 0 {
				panic("injected panic")
			}
			o.see(m)
			return nil
		}, Prefetch(16), OnError(func(*Message, error) {}))
		must(t, err)
		subs = append(subs, s)
	}
	produce(t, b, "stress")
	eventually(t, "every message acked", func() bool {
		total := int64(0)
		for p := 0; p < sPartitions; p++ {
			total += committed(t, b, "stress", "push", p)
		}
		return total == sTotal
	})
	for _, s := range subs {
		must(t, s.Close())
	}
	o.check(t, "push", false)
}
