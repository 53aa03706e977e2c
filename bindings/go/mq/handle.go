package mq

// #include "shim.h"
import "C"

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/mqlib/mq/bindings/go/internal/waithook"
)

// closeWake ends the blocking calls of a handle when it is closed: each runs under a cancel
// token that Close triggers, as a cancelled context does. A Member's polls on the Kafka engine
// and every wait of a Publisher or Cursor block their thread in the library (ABI 1.7 has no
// asynchronous handle calls), so nothing else would wake them.
type closeWake struct {
	mu      sync.Mutex
	closing bool
	active  map[C.mqgo_cancel]struct{} // tokens of the calls in flight (one call per token)
}

// run makes call under a token that cancelling ctx and close trigger. closed: refused (close
// had begun) or ended by close; r is then closedResult().
func (w *closeWake) run(ctx context.Context, call func(tok C.mqgo_cancel) C.mqgo_result) (r C.mqgo_result, closed bool, err error) {
	held, err := getToken()
	if err != nil {
		return r, false, err
	}
	tok := held.t
	w.mu.Lock()
	if w.closing {
		w.mu.Unlock()
		putToken(held)
		return closedResult(), true, nil
	}
	if w.active == nil {
		w.active = map[C.mqgo_cancel]struct{}{}
	}
	w.active[tok] = struct{}{}
	w.mu.Unlock()
	var wt waiter
	wt.startWith(ctx, tok)
	r = call(tok)
	wt.disarm()
	w.mu.Lock()
	delete(w.active, tok)
	closing := w.closing
	w.mu.Unlock()
	// Reset only a token that may have been triggered (the reset is a cgo call).
	releaseToken(held, closing || ctx.Err() != nil)
	if r.status == C.MQ_CANCELLED && closing && ctx.Err() == nil {
		freeResult(r)
		return closedResult(), true, nil
	}
	return r, false, nil
}

// closeLocked refuses later calls and wakes those in flight; w.mu is held.
func (w *closeWake) closeLocked() {
	w.closing = true
	for t := range w.active {
		C.mqgo_cancel_trigger(t)
	}
}

func (w *closeWake) close() {
	w.mu.Lock()
	w.closeLocked()
	w.mu.Unlock()
}

func handleClosed(op, what string) *Error {
	return &Error{Op: op, Status: StatusClosed, Message: "the " + what + " was closed"}
}

// liveCHandles counts the publishers and cursors not yet freed (tests check that the
// collector and every close order free each exactly once).
var liveCHandles atomic.Int64

// handle is what a Publisher or a Cursor owns: its C handle (mq_publisher *, mq_cursor *),
// freed by the guard after the last call in flight, whoever closes it and whenever. The C
// handle holds its broker's memory, so it may outlive the Broker; it holds the broker's clock
// (shared) too, which the library may read during its calls.
type handle struct {
	ptr    C.uintptr_t
	what   string // "publisher", "cursor": for the errors
	guard  *guard
	wake   closeWake
	shared *shared
}

// openHandle opens a handle on b: open makes the C call (direct, names as C strings) and
// returns the C handle, free releases it.
func (b *Broker) openHandle(op, what string, open func(C.mqgo_broker) (unsafe.Pointer, error), free func(unsafe.Pointer)) (*handle, error) {
	p := b.acquire()
	if p == 0 {
		return nil, closedError(op)
	}
	defer b.release()
	ptr, err := open(p)
	if err != nil {
		return nil, err
	}
	liveCHandles.Add(1)
	h := &handle{ptr: C.uintptr_t(uintptr(ptr)), what: what, shared: b.core.shared}
	h.guard = newGuard(func() {
		free(ptr)
		liveCHandles.Add(-1)
	})
	return h, nil
}

// collect closes h when owner is collected: on a goroutine of its own, so that the cleanup
// never waits on the library (freeing the last handle of a freed broker frees the broker).
func collect[T any](owner *T, h *handle) {
	runtime.AddCleanup(owner, func(h *handle) { go h.close() }, h)
}

// run makes one call on the C handle, holding the guard: a call that may wait runs under a
// token of its own (closeWake.run), one that cannot (an expired deadline: MQ_NO_WAIT) with
// none. With tryFirst (a keyed single publish, a poll without an ack) a call that may wait is made
// without waiting first: most find their room or message at once and then need no token; only
// one that would have to wait (MQ_FULL, MQ_TIMEOUT) is made again, under the wait. Not for an
// ack-then-poll or a batch, whose second try would repeat the ack or the records already
// appended. A call ended by Close comes back as MQ_CLOSED with the words of handleClosed, so
// that the callers' error paths (and a batch's partial results) treat it as the library's.
func (h *handle) run(ctx context.Context, op string, tryFirst bool, call func(ptr C.uintptr_t, tok C.mqgo_cancel, wait C.int64_t) C.mqgo_result) (C.mqgo_result, error) {
	if !h.guard.acquire() {
		return C.mqgo_result{}, handleClosed(op, h.what)
	}
	defer h.guard.release()
	if waitMs(ctx) == C.MQ_NO_WAIT {
		return call(h.ptr, 0, C.MQ_NO_WAIT), nil
	}
	if tryFirst && ctx.Err() == nil {
		r := call(h.ptr, 0, C.MQ_NO_WAIT)
		if r.status != C.MQ_TIMEOUT && r.status != C.MQ_FULL {
			return r, nil
		}
		freeResult(r)
	}
	if f := waithook.From(ctx); f != nil {
		f() // the call is about to block (as a parked one would park)
	}
	r, closed, err := h.wake.run(ctx, func(tok C.mqgo_cancel) C.mqgo_result { return call(h.ptr, tok, waitMs(ctx)) })
	if closed {
		r.err = C.CString(handleClosed(op, h.what).Message)
	}
	return r, err
}

// close wakes the calls in flight (ErrClosed) and refuses later ones; the last call out
// frees the C handle. Idempotent.
func (h *handle) close() {
	h.wake.close()
	h.guard.close()
}
