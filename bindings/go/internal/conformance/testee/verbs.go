package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mqlib/mq/bindings/go/internal/waithook"
	"github.com/mqlib/mq/bindings/go/mq"
)

func (w *world) verb(parent context.Context, r *request, out *reply) {
	b := w.broker
	needBroker := func() {
		if b == nil {
			panic(testeeError("no broker"))
		}
	}
	topic, group := r.str("topic"), r.str("group")
	partition := int(r.int("partition", 0))
	switch r.verb {
	case "hello":
		if r.int("protocol", 0) != 1 {
			panic(testeeError("protocol 1 only"))
		}
		out.WriteString("MQ_OK protocol=1")
	case "broker_new":
		opts := w.brokerOptions()
		if r.has("max_message_bytes") {
			opts = append(opts, mq.WithMaxMessageBytes(int(r.int("max_message_bytes", 0))))
		}
		nb, err := mq.NewBroker(opts...)
		if status(out, err) {
			w.broker = nb
		}
	case "clock":
		if _, ok := kafkaBootstrap(); ok {
			panic(testeeError("no manual clock on the Kafka backend"))
		}
		w.clock.Advance(time.Duration(r.int("advance_ns", 0)))
		out.WriteString("MQ_OK")
	case "topic_create":
		needBroker()
		var opts []mq.TopicOption
		if r.has("partitions") {
			opts = append(opts, mq.Partitions(int(r.int("partitions", 0))))
		}
		if r.has("capacity") {
			opts = append(opts, mq.Capacity(r.int("capacity", 0)))
		}
		if r.has("max_bytes") {
			opts = append(opts, mq.MaxBytes(r.int("max_bytes", 0)))
		}
		if r.has("ack_timeout_ms") {
			opts = append(opts, mq.AckTimeout(msDuration(r.int("ack_timeout_ms", 0))))
		}
		if r.has("max_age_ms") {
			opts = append(opts, mq.MaxAge(msDuration(r.int("max_age_ms", 0))))
		}
		if r.has("retention") {
			ret := mq.RetainUntilAcked
			if r.str("retention") == "bounded" {
				ret = mq.RetainBounded
			}
			opts = append(opts, mq.WithRetention(ret))
		}
		if status(out, b.CreateTopic(topic, opts...)) {
			w.createdTopic(topic)
		}
	case "subscribe":
		needBroker()
		var opts []mq.GroupOption
		if r.has("start") {
			start := mq.StartLatest
			if r.str("start") == "earliest" {
				start = mq.StartEarliest
			}
			opts = append(opts, mq.StartAt(start))
		}
		if r.has("max_deliveries") {
			opts = append(opts, mq.MaxDeliveries(int(r.int("max_deliveries", 0))))
		}
		if r.has("dead_letter_topic") {
			opts = append(opts, mq.DeadLetterTopic(r.str("dead_letter_topic")))
		}
		if r.has("share") {
			share := mq.ShareNone
			switch r.str("share") {
			case "all":
				share = mq.ShareAll
			case "key":
				share = mq.ShareKey
			}
			opts = append(opts, mq.Share(share))
		}
		if r.has("max_acquired") {
			opts = append(opts, mq.MaxAcquired(int(r.int("max_acquired", 0))))
		}
		status(out, b.Subscribe(topic, group, opts...))
	case "unsubscribe":
		needBroker()
		status(out, b.Unsubscribe(topic, group))
	case "topic_delete":
		needBroker()
		status(out, b.DeleteTopic(topic))
	case "broker_close":
		needBroker()
		status(out, b.Shutdown())
	case "publish", "publish_batch":
		via := w.publisher(r)
		ctx, cancel := waitContext(parent, r.int("wait", 0))
		defer cancel()
		recs := records(r)
		if r.verb == "publish" {
			if len(recs) != 1 {
				panic(testeeError("publish needs one record"))
			}
			var opts []mq.PublishOption
			if len(recs[0].Headers) > 0 {
				opts = append(opts, mq.WithHeaders(recs[0].Headers...))
			}
			if recs[0].Delay != 0 {
				opts = append(opts, mq.WithDelay(recs[0].Delay))
			}
			p, o, err := via.Publish(ctx, recs[0].Key, recs[0].Value, opts...)
			if status(out, err) {
				out.int("partition", int64(p))
				out.int("offset", o)
			}
			return
		}
		results, err := via.PublishBatch(ctx, recs)
		status(out, err)
		published := 0
		for _, res := range results {
			if res.Offset >= 0 {
				published++
			}
		}
		out.int("published", int64(published))
		for _, res := range results {
			out.field("result", fmt.Sprintf("%d:%d", res.Partition, res.Offset))
		}
	case "poll", "member_poll", "ack_poll", "member_ack_poll":
		ctx, cancel := waitContext(parent, r.int("wait", 0))
		defer cancel()
		var msgs []mq.Message
		var err error
		max, offset := int(r.int("max", 10)), r.int("offset", 0)
		switch r.verb {
		case "poll":
			msgs, err = w.cursor(r).Poll(ctx, max)
		case "ack_poll":
			msgs, err = w.cursor(r).AckPoll(ctx, offset, max)
		case "member_poll":
			msgs, err = w.member(r).m.Poll(ctx, max)
		default:
			msgs, err = w.member(r).m.AckPoll(ctx, partition, offset, max)
		}
		status(out, err)
		out.int("count", int64(len(msgs)))
		for i := range msgs {
			putMessage(out, &msgs[i])
		}
	case "ack":
		status(out, w.cursor(r).Ack(r.int("offset", 0)))
	case "nack":
		needBroker()
		status(out, b.NackAfter(topic, group, partition, msDuration(r.int("delay_ms", 0))))
	case "extend_lease":
		needBroker()
		status(out, b.ExtendLease(topic, group, partition))
	case "settle":
		needBroker()
		var action mq.SettleAction
		switch a := r.str("action"); a {
		case "accept":
			action = mq.SettleAccept
		case "release":
			action = mq.SettleRelease
		case "reject":
			action = mq.SettleReject
		case "renew":
			action = mq.SettleRenew
		default:
			panic(testeeError("unknown settle action " + a))
		}
		status(out, b.SettleAfter(topic, group, partition, r.int("offset", 0), int(r.int("delivery_count", 0)),
			action, msDuration(r.int("delay_ms", 0))))
	case "seek":
		needBroker()
		var offset int64
		switch to, _ := r.raw("offset"); to {
		case "earliest":
			offset = mq.OffsetEarliest
		case "end":
			offset = mq.OffsetEnd
		default:
			offset = r.int("offset", 0)
		}
		status(out, b.Seek(topic, group, partition, offset))
	case "partition_describe":
		needBroker()
		text, err := b.Describe(topic, partition)
		if status(out, err) {
			out.bytes("text", []byte(text))
		}
	case "topic_list", "group_list":
		needBroker()
		var names []string
		var err error
		if r.verb == "topic_list" {
			names, err = b.Topics()
		} else {
			names, err = b.Groups(topic)
		}
		if status(out, err) {
			for _, n := range names {
				out.bytes("name", []byte(n))
			}
		}
	case "topic_get_info":
		needBroker()
		ti, err := b.TopicInfo(topic)
		if status(out, err) {
			ret := "until_acked"
			if ti.Retention == mq.RetainBounded {
				ret = "bounded"
			}
			out.int("partitions", int64(ti.Partitions))
			out.int("capacity", ti.Capacity)
			out.int("max_bytes", ti.MaxBytes)
			out.int("ack_timeout_ms", ti.AckTimeout.Milliseconds())
			out.field("retention", ret)
			out.int("max_age_ms", ti.MaxAge.Milliseconds())
		}
	case "partition_get_info":
		needBroker()
		pi, err := b.PartitionInfo(topic, partition)
		if status(out, err) {
			for _, f := range []struct {
				n string
				v int64
			}{{"start", pi.Start}, {"end", pi.End}, {"backlog", pi.Backlog}, {"capacity", pi.Capacity},
				{"retained_bytes", pi.RetainedBytes}, {"max_bytes", pi.MaxBytes}, {"producer_waits", pi.ProducerWaits},
				{"max_backlog", pi.MaxBacklog}, {"dropped", pi.Dropped}, {"oldest_timestamp_ns", pi.OldestTimestamp},
				{"oldest_age_ns", int64(pi.OldestAge)}} {
				out.int(f.n, f.v)
			}
		}
	case "group_get_info":
		needBroker()
		gi, err := b.GroupInfo(topic, group, partition)
		if status(out, err) {
			for _, f := range []struct {
				n string
				v int64
			}{{"committed", gi.Committed}, {"next", gi.Next}, {"lag", gi.Lag}, {"in_flight", gi.InFlight},
				{"lost", gi.Lost}, {"dead_lettered", gi.DeadLettered}, {"next_age_ns", int64(gi.NextAge)},
				{"paused_until_ns", gi.PausedUntil}, {"acquired", gi.Acquired}, {"available", gi.Available},
				{"delayed", gi.Delayed}, {"rejected", gi.Rejected},
				{"oldest_unsettled_age_ns", int64(gi.OldestUnsettledAge)}} {
				out.int(f.n, f.v)
			}
			d := gi.Delivered
			out.field("delivered", fmt.Sprintf("%d,%d,%d,%d", d[0], d[1], d[2], d[3]))
		}
	case "key_murmur2":
		out.WriteString("MQ_OK")
		out.int("hash", int64(mq.Murmur2(r.bytes("key"))))
	case "key_partition":
		p, err := mq.KeyPartition(r.bytes("key"), int(r.int("partitions", 0)))
		if status(out, err) {
			out.int("partition", int64(p))
		}
	case "assignment_round_robin":
		owned, err := mq.RoundRobin(int(r.int("partitions", 0)), int(r.int("members", 0)), int(r.int("member", 0)))
		if status(out, err) {
			out.field("owned", intList(owned))
		}
	case "subscription_open":
		needBroker()
		w.subscriptionOpen(r, out)
	case "subscription_close":
		p := w.sub(r)
		err := p.sub.Close()
		if status(out, err) {
			p.open = false
		}
		p.mu.Lock()
		out.int("frees", int64(p.releases))
		p.mu.Unlock()
	case "calls":
		p := w.sub(r)
		p.mu.Lock()
		out.WriteString("MQ_OK" + p.calls.String())
		p.mu.Unlock()
	case "frees":
		p := w.sub(r)
		p.mu.Lock()
		out.WriteString("MQ_OK")
		out.int("frees", int64(p.releases))
		p.mu.Unlock()
	case "handler_extend_lease":
		status(out, mq.ExtendHandlerLease())
	case "handler_set_nack_delay":
		status(out, mq.SetHandlerNackDelay(msDuration(r.int("delay_ms", 0))))
	case "member_join":
		needBroker()
		w.memberJoin(r, out)
	case "member_close":
		mb := w.member(r)
		if status(out, mb.m.Close()) {
			mb.open = false
		}
	case "member_get_assignment":
		gen, parts, err := w.member(r).m.Assignment()
		if status(out, err) {
			out.int("generation", gen)
			out.field("partitions", intList(parts))
		}
	case "member_ack":
		status(out, w.member(r).m.Ack(partition, r.int("offset", 0)))
	case "member_nack":
		status(out, w.member(r).m.NackAfter(partition, msDuration(r.int("delay_ms", 0))))
	case "member_extend_lease":
		status(out, w.member(r).m.ExtendLease(partition))
	case "rebalances":
		mb := w.member(r)
		mb.mu.Lock()
		out.WriteString("MQ_OK" + mb.rebalances.String())
		mb.mu.Unlock()
	case "publisher_open", "cursor_open":
		w.handleOpen(r, out)
	case "publisher_close", "cursor_close":
		w.handleClose(r, out)
	case "await":
		bg := w.call(r)
		select {
		case <-bg.done:
			out.WriteString(bg.reply)
		default:
			out.WriteString("pending")
		}
	case "cancel":
		w.call(r).cancel()
		out.WriteString("MQ_OK")
	case "end":
		w.end(out)
	default:
		panic(testeeError("unknown verb " + r.verb))
	}
}

func (w *world) call(r *request) *background {
	w.mu.Lock()
	defer w.mu.Unlock()
	bg := w.calls[r.str("call")]
	if bg == nil {
		panic(testeeError("no such call"))
	}
	return bg
}

// startable are the calls a start=NAME request may start (FORMAT.md, "start"): those with an
// asynchronous form in the library (1.4), which are also every call async=NAME may start.
// (subscribe's start= is its start position.)
var startable = map[string]bool{"publish": true, "publish_batch": true, "poll": true, "ack_poll": true,
	"member_poll": true, "member_ack_poll": true}

// startBackground runs a call on its own goroutine under a cancellable context (the Go form
// of a fresh cancel token). Both async=NAME and start=NAME come here: Go's native asynchronous
// form of a call is that goroutine with that context, and package mq's Broker.Poll, AckPoll,
// Publish and PublishBatch, and Member.Poll and AckPoll, wait in it without a thread (the
// library's asynchronous calls, the goroutine parked on a channel until the call's done runs).
func (w *world) startBackground(name string, r *request, native bool) string {
	if !startable[r.verb] {
		return refusal("not a blocking call: " + r.verb)
	}
	ctx, cancel := context.WithCancel(context.Background())
	bg := &background{cancel: cancel, done: make(chan struct{})}
	// start answers once the call did what needs no wait (as a C *_async call has returned
	// by then): it has finished, or it parked (an AckPoll's ack made, a publish routed). On
	// the Kafka backend the calls block a thread instead of parking: no waiting for that.
	parked := make(chan struct{}, 1)
	if _, kafka := kafkaBootstrap(); native && !kafka {
		ctx = waithook.With(ctx, func() {
			select {
			case parked <- struct{}{}:
			default:
			}
		})
	}
	w.mu.Lock()
	w.calls[name] = bg
	w.order = append(w.order, name)
	w.mu.Unlock()
	go func() {
		bg.reply = w.run(ctx, r)
		close(bg.done)
	}()
	if _, kafka := kafkaBootstrap(); native && !kafka {
		select {
		case <-bg.done:
		case <-parked:
		}
	}
	return "MQ_OK"
}

func (w *world) subscriptionOpen(r *request, out *reply) {
	p := &push{}
	for _, f := range r.fields {
		switch f.name {
		case "fail":
			p.fails = append(p.fails, decode(f.value))
		case "extend":
			p.extends = append(p.extends, decode(f.value))
		}
	}
	if r.has("nack_delay_ms") {
		d := msDuration(r.int("nack_delay_ms", 0))
		p.delay = &d
	}
	opts := []mq.SubscribeOption{
		mq.OnError(func(*mq.Message, error) {}), // scripted failures are not news
		mq.OnRelease(func() {
			p.mu.Lock()
			p.releases++
			p.mu.Unlock()
		}),
	}
	if r.has("prefetch") {
		opts = append(opts, mq.Prefetch(int(r.int("prefetch", 0))))
	}
	if list, ok := r.raw("partitions"); ok {
		opts = append(opts, mq.OnPartitions(ints(list)...))
	}
	handler := func(m *mq.Message) error {
		p.mu.Lock()
		defer p.mu.Unlock()
		fails := take(&p.fails, m.Value)
		extended, delayed := "", ""
		if take(&p.extends, m.Value) {
			extended = statusName(mq.ExtendHandlerLease())
		}
		if fails && p.delay != nil {
			delayed = statusName(mq.SetHandlerNackDelay(*p.delay))
		}
		putMessage(&p.calls, m)
		outcome := "ok"
		if fails {
			outcome = "fail"
		}
		p.calls.field("outcome", outcome)
		if extended != "" {
			p.calls.field("extend_lease", extended)
		}
		if delayed != "" {
			p.calls.field("nack_delay", delayed)
		}
		if fails {
			return errors.New("scripted failure")
		}
		return nil
	}
	w.mu.Lock()
	name := r.str("subscription")
	w.subs[name] = p
	w.order = append(w.order, name)
	w.mu.Unlock()
	sub, err := w.broker.SubscribeFunc(r.str("topic"), r.str("group"), handler, opts...)
	if status(out, err) {
		p.sub, p.open = sub, true
	}
	p.mu.Lock()
	out.int("frees", int64(p.releases))
	p.mu.Unlock()
}

func (w *world) memberJoin(r *request, out *reply) {
	mb := &member{}
	opts := []mq.MemberOption{mq.OnRebalance(func(m *mq.Member, generation int64) {
		mb.mu.Lock()
		mb.rebalances.field("rebalance", fmt.Sprintf("%d:%s", generation, encode([]byte(m.ID()))))
		mb.mu.Unlock()
	})}
	if r.has("id") {
		opts = append(opts, mq.MemberID(r.str("id")))
	}
	if r.has("session_timeout_ms") {
		opts = append(opts, mq.SessionTimeout(msDuration(r.int("session_timeout_ms", 0))))
	}
	if name := r.str("assignor"); r.has("assignor") && name != "round_robin" {
		a := assignors[name]
		if a == nil {
			panic(testeeError("unknown assignor " + name))
		}
		opts = append(opts, mq.WithAssignor(a))
	}
	w.mu.Lock()
	name := r.str("member")
	w.members[name] = mb
	w.order = append(w.order, name)
	w.mu.Unlock()
	m, err := w.broker.Join(r.str("topic"), r.str("group"), opts...)
	if status(out, err) {
		mb.m, mb.open = m, true
		out.bytes("id", []byte(m.ID()))
	}
}

// end closes the broker (waking the background calls), waits for them, closes what is still
// open and releases the broker.
func (w *world) end(out *reply) {
	if w.broker != nil {
		w.broker.Shutdown()
	}
	w.mu.Lock()
	names := append([]string(nil), w.order...)
	w.mu.Unlock()
	good := true
	for _, n := range names {
		if bg := w.calls[n]; bg != nil {
			<-bg.done
			bg.cancel()
		}
	}
	for _, n := range names {
		if p := w.subs[n]; p != nil && p.open {
			good = good && p.sub.Close() == nil
			p.open = false
		}
	}
	for _, n := range names {
		if mb := w.members[n]; mb != nil && mb.open {
			good = good && mb.m.Close() == nil
			mb.open = false
		}
	}
	if w.broker != nil {
		good = good && w.broker.Close() == nil
		w.broker = nil
	}
	good = w.closeHandles(names) && good
	w.deleteKafkaTopics()
	if !good {
		panic(testeeError("closing what the scenario left open failed"))
	}
	out.WriteString("MQ_OK")
}
