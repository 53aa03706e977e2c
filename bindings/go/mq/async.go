package mq

// #include <stdlib.h>
// #include "shim.h"
import "C"

import (
	"context"
	"errors"
	"runtime"
	"runtime/cgo"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/mqlib/mq/bindings/go/internal/waithook"
)

// How a Broker's Poll, AckPoll, Publish and PublishBatch, and a Member's Poll and AckPoll, wait
// (library 1.4, mq.h "asynchronous calls"): without an OS thread. The call is made through its
// *_async form on the calling goroutine; when it need not wait it returns at once like the
// blocking form. When it must wait, the library returns MQ_PENDING and the goroutine parks on a channel;
// the broker's one completer thread (a C thread, shared by every pending call of the broker)
// later calls done, which records the outcome in C memory and sends on that channel. So
// 10,000 goroutines waiting in Poll hold no OS thread each (a cgo call would pin one).
//
// cgo's rule that C keeps no Go pointer after a call returns is kept by giving a call that
// may pend only C memory: its state (names, outputs: mqgo_async), its copy buffer, its key,
// value, headers, records and results. They are freed or recycled only after done ran: a
// cancelled context triggers the call's cancel token and then still waits for done.

// asyncCall is the reusable state of one call that may pend: the C struct the library writes
// into and the channel done wakes, which a cgo.Handle in the struct names. Pooled: a call
// takes one, and gives it back once it is finished (done ran, or the call never pended). The
// handle refers to the channel, not to the asyncCall, so an asyncCall the pool drops becomes
// garbage and its cleanup deletes the handle and frees the C struct.
type asyncCall struct {
	st   *C.mqgo_async // C memory
	done chan struct{} // capacity 1: done's send never blocks
}

var asyncCalls sync.Pool

// parked counts the goroutines parked on a pending call (tests wait for it instead of
// sleeping).
var parked atomic.Int64

type asyncFree struct {
	h  cgo.Handle
	st unsafe.Pointer
}

// getAsync returns a call state, or nil when out of memory.
func getAsync() *asyncCall {
	if a, _ := asyncCalls.Get().(*asyncCall); a != nil {
		return a
	}
	st := (*C.mqgo_async)(C.calloc(1, C.sizeof_mqgo_async+asyncScratch))
	if st == nil {
		return nil
	}
	a := &asyncCall{st: st, done: make(chan struct{}, 1)}
	h := cgo.NewHandle(a.done)
	st.handle = C.uintptr_t(h)
	runtime.AddCleanup(a, func(f asyncFree) {
		f.h.Delete()
		C.free(f.st)
	}, asyncFree{h, unsafe.Pointer(st)})
	return a
}

// putAsync takes back a finished call's state.
func putAsync(a *asyncCall) { asyncCalls.Put(a) }

// asyncScratch is the C memory after each call state that a Publish lays its key, value and
// headers out in when they fit (a larger message takes a buffer of its own): one pooled
// object per call on the path that does not wait.
const asyncScratch = 512

func (a *asyncCall) scratch() unsafe.Pointer {
	return unsafe.Add(unsafe.Pointer(a.st), C.sizeof_mqgo_async)
}

func (a *asyncCall) mem() C.mqgo_mem { return C.mqgo_mem(uintptr(unsafe.Pointer(a.st))) }

// mqgoAsyncDone is what done calls, on the broker's completer thread, once the call's outcome
// is in its state. It only wakes the goroutine (a send on a buffered channel nobody else sends
// on): it never blocks, so a Close (which waits for every done) cannot hang on it.
//
//export mqgoAsyncDone
func mqgoAsyncDone(h C.uintptr_t) {
	cgo.Handle(h).Value().(chan struct{}) <- struct{}{}
}

// wait parks until the pending call's done ran and returns its result (the shim's result
// form: err is the C copy of mq_last_error() read on the completer thread). When ctx is
// cancelled first, it triggers the call's token (the call then ends MQ_CANCELLED, unless it
// ended otherwise first) and still waits for done: the call's memory is the library's until
// then. A deadline triggers nothing: the library's own wait (waitMs) ends at it, with the
// status of a wait that ran out (MQ_TIMEOUT, MQ_FULL), as the blocking calls do. triggered
// says whether the token was triggered (it must then be reset before reuse).
func (a *asyncCall) wait(ctx context.Context, tok *tokenHolder) (r C.mqgo_result, triggered bool) {
	parked.Add(1)
	defer parked.Add(-1)
	if f := waithook.From(ctx); f != nil {
		f()
	}
	select {
	case <-a.done:
	case <-ctx.Done():
		if tok != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			C.mqgo_cancel_trigger(tok.t)
			triggered = true
		}
		<-a.done
	}
	st := a.st
	r.status = st.status
	r.partition = st.partition
	r.offset = st.offset
	r.count = st.count
	r.needed = st.needed
	r.err = st.err
	st.err = nil
	return r, triggered
}

// asyncToken is the cancel token of a call that may pend under ctx: nil for a context that
// can never be done (nothing to cancel).
func asyncToken(ctx context.Context) (*tokenHolder, error) {
	if ctx.Done() == nil {
		return nil, nil
	}
	return getToken()
}

// tokenOf is the C token of h (0: none).
func tokenOf(h *tokenHolder) C.mqgo_cancel {
	if h == nil {
		return 0
	}
	return h.t
}

// releaseToken gives a token back to the pool; one that was triggered is reset first (a token
// never triggered needs no reset, so the calls that did not wait make no extra cgo call).
func releaseToken(h *tokenHolder, triggered bool) {
	if h == nil {
		return
	}
	if triggered {
		C.mqgo_cancel_reset(h.t)
	}
	tokens.Put(h)
}

// canPend says whether a call on b with these names can go through the asynchronous form: not
// on the Kafka engine (its *_async calls are MQ_ERR_UNSUPPORTED: the blocking forms wait
// there, holding their thread), and not with a name too long to be legal (the blocking form
// refuses it at once, with the library's message). A Member's polls have no names: they pend
// whenever their broker's calls can.
func (b *Broker) canPend(names ...string) bool {
	if b.core.blocking {
		return false
	}
	for _, n := range names {
		if len(n) >= C.MQGO_NAME_CAP {
			return false
		}
	}
	return true
}

// freeResult frees the message a result carries (one that is not returned as an error).
func freeResult(r C.mqgo_result) {
	if r.err != nil {
		C.free(unsafe.Pointer(r.err))
	}
}

func noMemoryResult() C.mqgo_result {
	var r C.mqgo_result
	r.status = C.MQ_ERR_NO_MEMORY
	return r
}
