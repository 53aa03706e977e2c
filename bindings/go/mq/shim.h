/*
 * The C side of the Go binding: small wrappers that call mq and, on failure, copy
 * mq_last_error() before returning, so the message is read on the OS thread that failed (a
 * goroutine may move to another thread between two cgo calls). Names arrive as pointer and
 * length (Go strings are not NUL-terminated) and are terminated here, on the stack.
 * Every wrapper returns its status, counts and the copied message by value, so a call costs
 * one cgo crossing and no Go allocation.
 */
#ifndef MQGO_SHIM_H
#define MQGO_SHIM_H

#include <stddef.h>
#include <stdint.h>

#include <mq.h>

/* The polls are the copying ones (mq 1.3); with -tags mq_system, an older mq.h stops here. */
#if MQ_VERSION_NUMBER < 1003000
#error "mq 1.3 or later is needed (an older mq.h was found)"
#endif

typedef struct mqgo_result {
    int32_t status;
    int32_t partition;
    int64_t offset;
    size_t count;
    size_t needed; /* the copying polls' needed_out */
    char *err; /* malloc'd copy of mq_last_error() when status != MQ_OK; the caller frees it */
} mqgo_result;

/* C handles and C scratch memory cross as integers: cgo checks every pointer argument of a
 * call for Go pointers, and these never are. */
typedef uintptr_t mqgo_broker; /* mq_broker * */
typedef uintptr_t mqgo_member; /* mq_member * */
typedef uintptr_t mqgo_cancel; /* mq_cancel * */
typedef uintptr_t mqgo_mem;    /* C memory the shim's caller laid out */

mqgo_broker mqgo_broker_handle(mq_broker *b);
void mqgo_broker_close(mqgo_broker b);
void mqgo_broker_free(mqgo_broker b);
const char *mqgo_member_id(mqgo_member m);
mqgo_cancel mqgo_cancel_new(void); /* 0 when out of memory */
void mqgo_cancel_trigger(mqgo_cancel c);
void mqgo_cancel_reset(mqgo_cancel c);
void mqgo_cancel_free(mqgo_cancel c);

/* ---- user data boxes: a cgo.Handle value kept in C memory -------------------------------- */
void *mqgo_box_new(uintptr_t handle);
void mqgo_box_free(void *box);

/* ---- the manual clock: an atomic int64 in C memory ---------------------------------------- */
int64_t *mqgo_clock_new(int64_t start_ns);
void mqgo_clock_free(int64_t *clock);
void mqgo_clock_set(int64_t *clock, int64_t ns);
int64_t mqgo_clock_add(int64_t *clock, int64_t ns);
int64_t mqgo_clock_get(int64_t *clock);
mq_clock_fn mqgo_clock_fn(void);

/* ---- broker, topics, groups --------------------------------------------------------------- */
mqgo_result mqgo_broker_new(const mq_broker_options *opts, mqgo_broker *out);
mqgo_result mqgo_topic_create(mqgo_broker b_, const char *name, size_t name_len,
                              const mq_topic_config *cfg);
mqgo_result mqgo_group_subscribe(mqgo_broker b_, const char *topic, size_t topic_len,
                                 const char *group, size_t group_len, int32_t start, int has_start,
                                 uint32_t max_deliveries, int has_max_deliveries,
                                 const char *dead_letter, size_t dead_letter_len,
                                 int has_dead_letter);
/* ABI 1.1 */
mqgo_result mqgo_topic_delete(mqgo_broker b_, const char *name, size_t name_len);
mqgo_result mqgo_group_unsubscribe(mqgo_broker b_, const char *topic, size_t topic_len,
                                   const char *group, size_t group_len);
/* Lists and descriptions come back as one malloc'd string in *out (the caller frees it). */
mqgo_result mqgo_topic_list(mqgo_broker b_, char **out);
mqgo_result mqgo_group_list(mqgo_broker b_, const char *topic, size_t topic_len, char **out);
mqgo_result mqgo_partition_describe(mqgo_broker b_, const char *topic, size_t topic_len,
                                    int32_t partition, char **out);

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
mqgo_result mqgo_nack(mqgo_broker b_, const char *topic, size_t topic_len, const char *group,
                      size_t group_len, int32_t partition, int64_t delay_ms);
mqgo_result mqgo_extend_lease(mqgo_broker b_, const char *topic, size_t topic_len,
                              const char *group, size_t group_len, int32_t partition);
mqgo_result mqgo_seek(mqgo_broker b_, const char *topic, size_t topic_len, const char *group,
                      size_t group_len, int32_t partition, int64_t offset);

/* ---- introspection ------------------------------------------------------------------------ */
mqgo_result mqgo_topic_info(mqgo_broker b_, const char *topic, size_t topic_len,
                            mq_topic_info *out);
mqgo_result mqgo_partition_info(mqgo_broker b_, const char *topic, size_t topic_len,
                                int32_t partition, mq_partition_info *out);
mqgo_result mqgo_group_info(mqgo_broker b_, const char *topic, size_t topic_len, const char *group,
                            size_t group_len, int32_t partition, mq_group_info *out);

/* ---- push --------------------------------------------------------------------------------- */
/* box is a mqgo_box_new box; on failure it has been released (user_free) before return. */
mqgo_result mqgo_subscription_open(mqgo_broker b_, const char *topic, size_t topic_len,
                                   const char *group, size_t group_len, int32_t prefetch,
                                   int has_prefetch, const int32_t *partitions,
                                   size_t partition_count, int has_partitions,
                                   int64_t session_timeout_ms, int has_session_timeout, void *box,
                                   mq_subscription **out);
mqgo_result mqgo_subscription_close(mq_subscription *sub);
/* The box of the handler / rebalance callback running on this thread, or NULL. */
void *mqgo_current_handler_box(void);
void *mqgo_current_rebalance_box(void);
mqgo_result mqgo_handler_extend_lease(void);
mqgo_result mqgo_handler_set_nack_delay(int64_t delay_ms);

/* ---- members ------------------------------------------------------------------------------ */
/* assignor_box and rebalance_box may be NULL (no custom assignor / no callback). */
mqgo_result mqgo_member_join(mqgo_broker b_, const char *topic, size_t topic_len, const char *group,
                             size_t group_len, const char *id, size_t id_len, int has_id,
                             int64_t session_timeout_ms, int has_session_timeout,
                             void *assignor_box, void *rebalance_box, mqgo_member *out);
mqgo_result mqgo_member_close(mqgo_member m_);
/* The assignment in a malloc'd array (*partitions, the caller frees it), count in result. */
mqgo_result mqgo_member_assignment(mqgo_member m_, int64_t *generation, int32_t **partitions);
/* As mqgo_poll_copy, for a member (ack: mq_member_ack_poll_copy of partition and offset). */
mqgo_result mqgo_member_poll_copy(mqgo_member m_, int ack, int32_t partition, int64_t offset,
                                  void *buf, size_t cap, size_t max, int64_t wait_ms,
                                  mqgo_cancel cancel_);
mqgo_result mqgo_member_ack(mqgo_member m_, int32_t partition, int64_t offset);
mqgo_result mqgo_member_nack(mqgo_member m_, int32_t partition, int64_t delay_ms);
mqgo_result mqgo_member_extend_lease(mqgo_member m_, int32_t partition);

/* ---- partitioning helpers ----------------------------------------------------------------- */
mqgo_result mqgo_key_partition(const char *key, size_t key_len, int32_t partitions);
/* The owned partitions in a malloc'd array (*out), count in result. */
mqgo_result mqgo_round_robin(int32_t partitions, int32_t members, int32_t member, int32_t **out);

#endif
