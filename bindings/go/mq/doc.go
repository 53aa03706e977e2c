// Package mq is the Go binding of mq, a Kafka-shaped publish-subscribe log that lives inside
// one process: topics with partitions, consumer groups that each receive every message,
// per-key order, acks and leases for at-least-once delivery, and back-pressure when the
// slowest group falls behind. Nothing is persisted and nothing crosses a socket, unless the
// broker is opened on a Kafka cluster (WithKafka).
//
// The package wraps the library's C API (mq.h) through cgo. By default it compiles the C++
// core, which the module carries, into the program (a C++20 compiler is all it needs); with
// the build tag mq_system it links an installed libmq found by pkg-config instead.
//
// # Quick start
//
//	b, err := mq.NewBroker()
//	if err != nil {
//		return err
//	}
//	defer func() { err = errors.Join(err, b.Close()) }() // err: the function's named result
//	if err := b.CreateTopic("orders", mq.Partitions(2)); err != nil {
//		return err
//	}
//	if err := b.Subscribe("orders", "billing"); err != nil { // sees what is published from now on
//		return err
//	}
//
//	partition, _, err := b.Publish(ctx, "orders", []byte("user-a"), []byte("o-1"))
//	if err != nil {
//		return err
//	}
//	msgs, err := b.Poll(ctx, "orders", "billing", partition, 10)
//	if err != nil {
//		return err
//	}
//	// ... work on msgs ...
//	if err := b.Ack("orders", "billing", partition, msgs[len(msgs)-1].Offset); err != nil { // cumulative
//		return err
//	}
//
//	// nil acks; an error (or a panic) nacks: delivered again.
//	sub, err := b.SubscribeFunc("orders", "email", func(m *mq.Message) error {
//		return send(m.Value)
//	})
//	if err != nil {
//		return err
//	}
//	// ... later (b.Close would close it too): Close waits for a running handler.
//	if err := sub.Close(); err != nil {
//		return err
//	}
//
// The README's quick start is this as a whole program, built and run by the tests.
//
// # Waiting and cancellation
//
// Every call that can block takes a context.Context. Its deadline is the call's wait (no
// deadline: wait as long as it takes); a context that is already done means "do not wait".
// Cancelling the context ends a blocked call at once (through the library's cancel tokens)
// with an error matching both ErrCancelled and context.Canceled. A wait that runs out is
// ErrTimeout for a poll and ErrFull for a publish, matching context.DeadlineExceeded too.
// context.Background costs nothing; a cancellable context costs a cancel token (recycled).
//
// A Broker's Poll, PollBatch, AckPoll, AckPollBatch, Publish and PublishBatch wait without an
// OS thread (library 1.4's asynchronous calls): the goroutine parks on a channel, and the
// broker's one completer thread wakes it when the call ends, so thousands of goroutines can
// wait at once. Member polls, and every call of a broker on the Kafka engine (whose
// asynchronous calls are unsupported), block their thread in the library while they wait.
//
// # Errors
//
// Every error is an *Error carrying the library's status and its detail message (read in the
// same cgo call as the failure), and matches the sentinel of its status with errors.Is:
// ErrFull, ErrTimeout, ErrClosed, ErrCancelled, ErrNotInFlight, ErrFenced, ErrRebalanced, ...
//
// # Kafka
//
// WithKafka (library 1.2) opens a broker on a Kafka cluster instead of the in-process log, and
// WithKafkaConfig passes client settings to librdkafka. The core this package compiles by
// default is built without the Kafka backend: there NewBroker returns ErrUnsupported. To use a
// cluster, build with the mq_kafka tag (the core compiled with its backend, linking librdkafka)
// or link a libmq built with -DMQ_KAFKA=ON through the mq_system tag.
//
// # Messages
//
// The library copies the messages a poll hands out into a buffer of Go memory (the copying
// poll of library 1.3) while it still holds them: Message.Key and Message.Value stay valid
// after the ack and for as long as they are referenced. Poll costs one more copy of the bytes,
// out of a recycled buffer, and two allocations (the bytes and the slice of Messages); there
// is no zero-copy accessor. PollBatch and AckPollBatch poll into a reusable Batch, whose
// buffer the messages are slices of, and allocate nothing. AckPoll acks and polls in one call
// (library 1.1): a consumer loop makes one cgo crossing per batch.
//
// # Callbacks
//
// Push handlers (SubscribeFunc), assignors and rebalance callbacks run on the library's
// threads (or on the goroutine whose call caused a rebalance). They reach Go through a
// runtime/cgo.Handle kept in C memory and deleted when the library releases its user data.
// A handler's error or panic never reaches the library: the message is nacked and the failure
// reported (OnError, else the log).
//
// # Lifetimes
//
// Close releases a broker, its subscriptions and its members; it may be called from any
// goroutine, any number of times, in any order with the subscriptions' and members' own Close,
// and from a handler. A Broker or Member dropped without Close is released by the garbage
// collector, unless an open Subscription or a Member with an OnRebalance callback keeps it
// alive. DeleteTopic (library 1.1) leaves the topic's subscriptions and members valid as
// handles (a subscription stops calling its handler; a member's calls return ErrNoTopic):
// close them as usual, in any order.
package mq
