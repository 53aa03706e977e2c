// Package waithook lets the module's own code (the conformance testee) learn when a call of
// package mq starts to wait: a Broker's Poll, AckPoll, Publish or PublishBatch, or a Member's
// Poll or AckPoll, whose asynchronous C call returned MQ_PENDING, so that what it does without
// waiting is done (an AckPoll's ack is made, a keyless publish has its partition); and a
// Publisher's or Cursor's call that may wait, just before its blocking C call (the handles have
// no asynchronous form). It is internal: not part of package mq's API.
package waithook

import "context"

type key struct{}

// With returns a copy of parent under which such a call runs f when it parks, on the calling
// goroutine, once per wait. f must not block.
func With(parent context.Context, f func()) context.Context {
	return context.WithValue(parent, key{}, f)
}

// From is the f of With, or nil.
func From(ctx context.Context) func() {
	f, _ := ctx.Value(key{}).(func())
	return f
}
