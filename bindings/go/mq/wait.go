package mq

// #include "shim.h"
import "C"

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"time"
)

// maxWaitMs is the longest wait the library accepts (2^40 ms); a deadline further away is
// "no deadline".
const maxWaitMs = 1 << 40

// waitMs turns ctx's deadline into the library's wait: -1 (forever) without one, 0 (don't
// block) once it has passed, else the milliseconds left, rounded up so the call never gives
// up before the deadline.
func waitMs(ctx context.Context) C.int64_t {
	d, ok := ctx.Deadline()
	if !ok {
		return C.MQ_WAIT_FOREVER
	}
	left := time.Until(d)
	if left <= 0 {
		return C.MQ_NO_WAIT
	}
	ms := (left + time.Millisecond - 1) / time.Millisecond
	if ms > maxWaitMs {
		return C.MQ_WAIT_FOREVER
	}
	return C.int64_t(ms)
}

// tokens recycles cancel tokens (per P): a blocking call under a cancellable context borrows
// one. A token the pool lets go is freed by its holder's cleanup.
var tokens sync.Pool

type tokenHolder struct{ t C.mqgo_cancel }

func getToken() (*tokenHolder, error) {
	if h, _ := tokens.Get().(*tokenHolder); h != nil {
		return h, nil
	}
	t := C.mqgo_cancel_new()
	if t == 0 {
		return nil, &Error{Op: "cancel token", Status: StatusNoMemory, Message: "out of memory for a cancel token"}
	}
	h := &tokenHolder{t: t}
	runtime.AddCleanup(h, func(t C.mqgo_cancel) { C.mqgo_cancel_free(t) }, t)
	return h, nil
}

// putToken takes back a token nobody can trigger any more.
func putToken(h *tokenHolder) {
	C.mqgo_cancel_reset(h.t)
	tokens.Put(h)
}

// waiter ties a context to the cancel token of one blocking call.
type waiter struct {
	tok   C.mqgo_cancel // 0: none
	held  *tokenHolder  // set when tok came from the pool
	stop  func() bool
	fired chan struct{}
}

// start arms w for ctx: cancelling ctx triggers a token, so the call returns MQ_CANCELLED at
// once. A deadline does not trigger it: the call's own wait (waitMs) ends then, with the
// status of a wait that ran out (MQ_TIMEOUT, MQ_FULL). Contexts that can never be done cost
// nothing (w.tok stays nil).
func (w *waiter) start(ctx context.Context) error {
	if ctx.Done() == nil {
		return nil
	}
	h, err := getToken()
	if err != nil {
		return err
	}
	w.startWith(ctx, h.t)
	w.held = h
	return nil
}

// startWith arms w with a token the caller owns (it may trigger it for reasons of its own).
func (w *waiter) startWith(ctx context.Context, tok C.mqgo_cancel) {
	w.tok = tok
	if ctx.Done() == nil {
		return
	}
	w.fired = make(chan struct{})
	fired := w.fired
	w.stop = context.AfterFunc(ctx, func() {
		if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			C.mqgo_cancel_trigger(tok)
		}
		close(fired)
	})
}

// disarm detaches the context once the call has returned. If the trigger has started, it
// waits for it to finish, so a recycled token is never triggered by a stale context.
func (w *waiter) disarm() {
	if w.stop != nil && !w.stop() {
		<-w.fired
	}
	w.stop = nil
}

// end disarms w and recycles a token that start took.
func (w *waiter) end() {
	w.disarm()
	if w.held != nil {
		putToken(w.held)
	}
	w.tok, w.held = 0, nil
}
