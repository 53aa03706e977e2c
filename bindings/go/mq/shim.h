/*
 * The C side of the Go binding: what Go cannot do itself. The calls on the hot path (publish,
 * poll, ack) are wrapped so that one cgo crossing does the whole call with no Go allocation:
 * names arrive as pointer and length (Go strings are not NUL-terminated) and are terminated
 * here, on the stack, and on failure mq_last_error() is copied before returning, so it is read
 * on the OS thread that failed (a goroutine may move to another thread between two cgo calls).
 * The other calls are made from Go directly (direct.go). The rest are the trampolines the
 * library calls (handlers, assignors, rebalance callbacks, the manual clock).
 */
#ifndef MQGO_SHIM_H
#define MQGO_SHIM_H

#include <stddef.h>
#include <stdint.h>

#include <mq.h>

/* The polls are the copying ones (mq 1.3), the waits the asynchronous calls (mq 1.4), a
 * record carries its delivery delay (mq_record.delay_ms, mq 1.5), groups may be share groups
 * (mq_group_options.share, mq_share_settle, mq 1.6) and topics and groups' partitions have
 * handles (mq_publisher, mq_cursor, mq 1.7); with -tags mq_system, an older mq.h stops here. */
#if MQ_VERSION_NUMBER < 1007000
#error "mq 1.7 or later is needed (an older mq.h was found)"
#endif

typedef struct mqgo_result {
    int32_t status;
    int32_t partition;
    int64_t offset;
    size_t count;
    size_t needed; /* the copying polls' needed_out */
    char *err;     /* malloc'd copy of mq_last_error() when status != MQ_OK; the caller frees it */
} mqgo_result;

/* C handles and C scratch memory cross as integers: cgo checks every pointer argument of a
 * call for Go pointers, and these never are. */
typedef uintptr_t mqgo_broker;    /* mq_broker * */
typedef uintptr_t mqgo_member;    /* mq_member * */
typedef uintptr_t mqgo_cancel;    /* mq_cancel * */
typedef uintptr_t mqgo_publisher; /* mq_publisher * */
typedef uintptr_t mqgo_cursor;    /* mq_cursor * */
typedef uintptr_t mqgo_mem;       /* C memory the shim's caller laid out */

void mqgo_broker_close(mqgo_broker b);
void mqgo_broker_free(mqgo_broker b);
const char *mqgo_member_id(mqgo_member m);
mqgo_cancel mqgo_cancel_new(void); /* 0 when out of memory */
void mqgo_cancel_trigger(mqgo_cancel c);
void mqgo_cancel_reset(mqgo_cancel c);
void mqgo_cancel_free(mqgo_cancel c);

/* ---- the manual clock: the mq_clock_fn reading an atomic int64 in C memory ---------------- */
mq_clock_fn mqgo_clock_fn(void);

/* ---- publishing --------------------------------------------------------------------------- */
/* key and payload are byte strings (char, so that cgo need not check them for Go pointers) */
mqgo_result mqgo_publish(mqgo_broker b_, const char *topic, size_t topic_len, const char *key,
                         size_t key_len, const char *payload, size_t payload_len, mqgo_mem headers_,
                         size_t header_count, int64_t wait_ms, mqgo_cancel cancel_);
/* count = records published */
mqgo_result mqgo_publish_batch(mqgo_broker b_, const char *topic, size_t topic_len,
                               mqgo_mem records_, size_t count, int64_t wait_ms,
                               mqgo_cancel cancel_, mqgo_mem results_);

/* ---- pull consumption --------------------------------------------------------------------- */
/* The copying poll (mq_group_poll_copy), or with ack, mq_group_ack_poll_copy of offset, into
 * buf (cap bytes, 8-byte aligned). count = messages copied; needed = *needed_out. */
mqgo_result mqgo_poll_copy(mqgo_broker b_, const char *topic, size_t topic_len, const char *group,
                           size_t group_len, int32_t partition, int ack, int64_t offset, void *buf,
                           size_t cap, size_t max, int64_t wait_ms, mqgo_cancel cancel_);
mqgo_result mqgo_ack(mqgo_broker b_, const char *topic, size_t topic_len, const char *group,
                     size_t group_len, int32_t partition, int64_t offset);

/* ---- handles (mq 1.7): the calls above without the names; opened and closed from Go ---- */
mqgo_result mqgo_publisher_publish(mqgo_publisher p_, const char *key, size_t key_len,
                                   const char *payload, size_t payload_len, mqgo_mem headers_,
                                   size_t header_count, int64_t wait_ms, mqgo_cancel cancel_);
mqgo_result mqgo_publisher_publish_batch(mqgo_publisher p_, mqgo_mem records_, size_t count,
                                         int64_t wait_ms, mqgo_cancel cancel_, mqgo_mem results_);
mqgo_result mqgo_cursor_poll_copy(mqgo_cursor c_, int ack, int64_t offset, void *buf, size_t cap,
                                  size_t max, int64_t wait_ms, mqgo_cancel cancel_);
mqgo_result mqgo_cursor_ack(mqgo_cursor c_, int64_t offset);

/* ---- push --------------------------------------------------------------------------------- */
/* box is a mqgo_box_new box; on failure it has been released (user_free) before return. */
mqgo_result mqgo_subscription_open(mqgo_broker b_, const char *topic, size_t topic_len,
                                   const char *group, size_t group_len, int32_t prefetch,
                                   int has_prefetch, const int32_t *partitions,
                                   size_t partition_count, int has_partitions,
                                   int64_t session_timeout_ms, int has_session_timeout, void *box,
                                   mq_subscription **out);
/* The box of the handler / rebalance callback running on this thread, or NULL. */
void *mqgo_current_handler_box(void);
void *mqgo_current_rebalance_box(void);

/* ---- members ------------------------------------------------------------------------------ */
/* assignor_box and rebalance_box may be NULL (no custom assignor / no callback). */
mqgo_result mqgo_member_join(mqgo_broker b_, const char *topic, size_t topic_len, const char *group,
                             size_t group_len, const char *id, size_t id_len, int has_id,
                             int64_t session_timeout_ms, int has_session_timeout,
                             void *assignor_box, void *rebalance_box, mqgo_member *out);
mqgo_result mqgo_member_poll_copy(mqgo_member m_, int ack, int32_t partition, int64_t offset,
                                  void *buf, size_t cap, size_t max, int64_t wait_ms,
                                  mqgo_cancel cancel_);
mqgo_result mqgo_member_ack(mqgo_member m_, int32_t partition, int64_t offset);

/* ---- asynchronous calls (mq 1.4) ----------------------------------------------------------- */
/* Room for a name in an mqgo_async: every legal name (1 to 249 characters) fits with its NUL.
 * Go sends a longer one through the blocking call, which refuses it without waiting. */
#define MQGO_NAME_CAP 256

/* The state of one asynchronous call, in C memory (malloc'd by Go, reused call after call):
 * what the library may use until the call's done runs. The names are copied here; the outputs
 * land here; done (on the broker's completer thread) sets status and err, then wakes the Go
 * goroutine waiting on the channel whose cgo.Handle is handle. */
typedef struct mqgo_async {
    uintptr_t handle; /* cgo.Handle of the call's done channel (Go) */
    int32_t status;   /* the final status, set by done */
    int32_t partition;
    int64_t offset;
    size_t count; /* count_out, or *published of a batch */
    size_t needed;
    char *err; /* set by done: malloc'd copy of mq_last_error() when status != MQ_OK */
    char topic[MQGO_NAME_CAP];
    char group[MQGO_NAME_CAP];
} mqgo_async;

/* Each returns MQ_PENDING (nothing else set: the call is done's now) or the final result as
 * the blocking wrappers do (outputs also in the mqgo_async). Every pointer must be C memory
 * that stays valid until done ran: st_, buf, key, payload, headers, records, results. */
mqgo_result mqgo_poll_copy_async(mqgo_broker b_, mqgo_mem st_, const char *topic, size_t topic_len,
                                 const char *group, size_t group_len, int32_t partition, int ack,
                                 int64_t offset, mqgo_mem buf, size_t cap, size_t max,
                                 int64_t wait_ms, mqgo_cancel cancel_);
/* The member's copying poll, or with ack its ack-poll of offset on partition. */
mqgo_result mqgo_member_poll_copy_async(mqgo_member m_, mqgo_mem st_, int ack, int32_t partition,
                                        int64_t offset, mqgo_mem buf, size_t cap, size_t max,
                                        int64_t wait_ms, mqgo_cancel cancel_);
/* key 0: no key */
mqgo_result mqgo_publish_async(mqgo_broker b_, mqgo_mem st_, const char *topic, size_t topic_len,
                               mqgo_mem key, size_t key_len, mqgo_mem payload, size_t payload_len,
                               mqgo_mem headers_, size_t header_count, int64_t wait_ms,
                               mqgo_cancel cancel_);
/* count = records published (final at done) */
mqgo_result mqgo_publish_batch_async(mqgo_broker b_, mqgo_mem st_, const char *topic,
                                     size_t topic_len, mqgo_mem records_, size_t count,
                                     int64_t wait_ms, mqgo_cancel cancel_, mqgo_mem results_);

#endif
