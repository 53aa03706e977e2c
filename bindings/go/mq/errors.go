package mq

// #include <stdlib.h>
// #include "shim.h"
import "C"

import (
	"context"
	"errors"
	"fmt"
	"time"
	"unsafe"
)

// Status is a status code of the library (mq_status in mq.h). Values never change and are
// never reused. Most code matches errors with errors.Is and the Err* sentinels instead.
type Status int32

// The statuses of mq.h, read from the header by cgo.
const (
	StatusOK         Status = C.MQ_OK
	StatusTimeout    Status = C.MQ_TIMEOUT
	StatusFull       Status = C.MQ_FULL
	StatusClosed     Status = C.MQ_CLOSED
	StatusCancelled  Status = C.MQ_CANCELLED
	StatusRebalanced Status = C.MQ_REBALANCED
	// StatusPending (since 1.4) is not a failure: an asynchronous C call returns it when it
	// will report through its callback. No call of this package returns it as an error.
	StatusPending     Status = C.MQ_PENDING
	StatusInvalid     Status = C.MQ_ERR_INVALID
	StatusNoTopic     Status = C.MQ_ERR_NO_TOPIC
	StatusNoGroup     Status = C.MQ_ERR_NO_GROUP
	StatusExists      Status = C.MQ_ERR_EXISTS
	StatusPartition   Status = C.MQ_ERR_PARTITION
	StatusTooLarge    Status = C.MQ_ERR_TOO_LARGE
	StatusNotInFlight Status = C.MQ_ERR_NOT_IN_FLIGHT
	StatusOwned       Status = C.MQ_ERR_OWNED
	StatusDeadlock    Status = C.MQ_ERR_DEADLOCK
	StatusNoMemory    Status = C.MQ_ERR_NO_MEMORY
	StatusInternal    Status = C.MQ_ERR_INTERNAL
	StatusOutOfRange  Status = C.MQ_ERR_OUT_OF_RANGE
	StatusFenced      Status = C.MQ_ERR_FENCED
	StatusUnsupported Status = C.MQ_ERR_UNSUPPORTED // since 1.2
	StatusBackend     Status = C.MQ_ERR_BACKEND     // since 1.2
)

// String is the status's constant name in mq.h, e.g. "MQ_FULL".
func (s Status) String() string {
	return C.GoString(C.mq_status_name(C.int(s)))
}

// sentinel is the value errors.Is compares an *Error's status with.
type sentinel struct {
	status Status
	text   string
}

func (s *sentinel) Error() string { return s.text }

// Sentinel errors, one per status a caller may want to handle. Every error of this package is
// an *Error that matches the sentinel of its status with errors.Is, and carries the library's
// detail message.
var (
	ErrTimeout     error = &sentinel{StatusTimeout, "mq: timed out"}
	ErrFull        error = &sentinel{StatusFull, "mq: partition full"}
	ErrClosed      error = &sentinel{StatusClosed, "mq: closed"}
	ErrCancelled   error = &sentinel{StatusCancelled, "mq: cancelled"}
	ErrRebalanced  error = &sentinel{StatusRebalanced, "mq: group rebalanced"}
	ErrInvalid     error = &sentinel{StatusInvalid, "mq: invalid argument"}
	ErrNoTopic     error = &sentinel{StatusNoTopic, "mq: no such topic"}
	ErrNoGroup     error = &sentinel{StatusNoGroup, "mq: no such group"}
	ErrExists      error = &sentinel{StatusExists, "mq: already exists"}
	ErrPartition   error = &sentinel{StatusPartition, "mq: partition out of range"}
	ErrTooLarge    error = &sentinel{StatusTooLarge, "mq: message too large"}
	ErrNotInFlight error = &sentinel{StatusNotInFlight, "mq: offset not in flight"}
	ErrOwned       error = &sentinel{StatusOwned, "mq: partition owned elsewhere"}
	ErrDeadlock    error = &sentinel{StatusDeadlock, "mq: would deadlock"}
	ErrNoMemory    error = &sentinel{StatusNoMemory, "mq: out of memory"}
	ErrInternal    error = &sentinel{StatusInternal, "mq: internal error"}
	ErrOutOfRange  error = &sentinel{StatusOutOfRange, "mq: offset out of range"}
	ErrFenced      error = &sentinel{StatusFenced, "mq: fenced"}
	// ErrUnsupported: the call or option has no meaning on the broker's backend, or the
	// library was built without that backend (WithKafka on the core this package compiles).
	// errors.Is(err, errors.ErrUnsupported) holds for it too.
	ErrUnsupported error = &sentinel{StatusUnsupported, "mq: unsupported by this broker's backend"}
	// ErrBackend: the Kafka cluster refused the request or did not answer in time; the
	// message carries the cluster's words.
	ErrBackend error = &sentinel{StatusBackend, "mq: Kafka cluster error"}
)

// Error is a failed call: the operation, the library's status and its detail message (read
// on the thread that failed, in the same cgo call).
type Error struct {
	Op      string // the call, e.g. "publish"
	Status  Status
	Message string // the library's detail, e.g. "offset 7 is not in flight for billing (nothing is)"
	cause   error  // the context's error when the call's context ended its wait
}

// Error is "mq: OP: STATUS: MESSAGE", the library's message last and verbatim.
func (e *Error) Error() string {
	text := "mq: " + e.Op + ": " + e.Status.String()
	if e.Message != "" {
		text += ": " + e.Message
	}
	return text
}

// Is reports whether target is the sentinel of e's status (or e's context error). An
// ErrUnsupported error is also errors.ErrUnsupported, the standard library's sentinel for it.
func (e *Error) Is(target error) bool {
	if s, ok := target.(*sentinel); ok {
		return s.status == e.Status
	}
	return target == errors.ErrUnsupported && e.Status == StatusUnsupported
}

// Unwrap returns context.Canceled or context.DeadlineExceeded when the call's context ended
// it, so errors.Is(err, context.Canceled) holds as well as errors.Is(err, ErrCancelled).
func (e *Error) Unwrap() error { return e.cause }

// failure turns a failed shim result into an *Error, freeing the copied message.
func failure(op string, r C.mqgo_result) *Error {
	e := &Error{Op: op, Status: Status(r.status)}
	if r.err != nil {
		e.Message = C.GoString(r.err)
		C.free(unsafe.Pointer(r.err))
	}
	return e
}

// check is nil for MQ_OK, else the call's *Error.
func check(op string, r C.mqgo_result) error {
	if r.status == C.MQ_OK {
		return nil
	}
	return failure(op, r)
}

// waitFailure is failure for calls that waited under ctx: the context's error becomes the
// cause, so callers can match context.Canceled / context.DeadlineExceeded too.
func waitFailure(op string, r C.mqgo_result, ctx context.Context) *Error {
	e := failure(op, r)
	switch e.Status {
	case StatusCancelled:
		e.cause = ctx.Err()
	case StatusTimeout, StatusFull:
		// The wait ran to the deadline; the context's timer may fire a moment later.
		if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
			e.cause = context.DeadlineExceeded
		}
	}
	return e
}

// invalid is an argument the binding refuses before calling the library, because it cannot be
// expressed in C (a NUL byte in a name, a number that does not fit the C type).
func invalid(op, message string) *Error {
	return &Error{Op: op, Status: StatusInvalid, Message: message}
}

func closedError(op string) *Error {
	return &Error{Op: op, Status: StatusClosed, Message: "the broker handle was released by Close"}
}

// PanicError is how a panic of a handler, assignor or rebalance callback is reported: the
// panic never reaches the library; the message is nacked.
type PanicError struct {
	Value any    // what the code panicked with
	Stack []byte // the goroutine's stack at the panic
}

func (p *PanicError) Error() string {
	return fmt.Sprintf("mq: handler panicked: %v", p.Value)
}
