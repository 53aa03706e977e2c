#include "shim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "_cgo_export.h"

/* ---- results ------------------------------------------------------------------------------ */

static mqgo_result result(int status) {
    mqgo_result r;
    memset(&r, 0, sizeof r);
    r.status = status;
    if (status != MQ_OK) {
        /* NULL when strdup fails: the Go side then names the status alone. */
        r.err = strdup(mq_last_error());
    }
    return r;
}

static mqgo_result no_memory(void) {
    mqgo_result r;
    memset(&r, 0, sizeof r);
    r.status = MQ_ERR_NO_MEMORY;
    r.err = NULL;
    return r;
}

/* A Go string made NUL-terminated: on the stack when it fits (every legal name does). A NUL
 * byte inside cannot travel in a C string (the library would see a shorter name): refused
 * here, where the copy looks at every byte anyway. */
typedef struct name_buf {
    char small[256];
    char *p;
} name_buf;

static mqgo_result refused(int status, char *msg) {
    mqgo_result r;
    memset(&r, 0, sizeof r);
    r.status = status;
    r.err = msg;
    return r;
}

static const char *name_of(name_buf *nb, const char *what, const char *s, size_t n,
                           mqgo_result *fail) {
    const char *nul = n ? (const char *)memchr(s, 0, n) : NULL;
    if (nul) {
        char *msg = (char *)malloc(128 + strlen(what));
        if (msg)
            snprintf(msg, 128 + strlen(what),
                     "%s name has a NUL byte at position %zu; names are 1 to 249 characters of "
                     "[a-zA-Z0-9._-]",
                     what, (size_t)(nul - s));
        *fail = refused(MQ_ERR_INVALID, msg);
        nb->p = NULL;
        return NULL;
    }
    nb->p = n < sizeof nb->small ? nb->small : (char *)malloc(n + 1);
    if (!nb->p) {
        *fail = no_memory();
        return NULL;
    }
    if (n) memcpy(nb->p, s, n);
    nb->p[n] = '\0';
    return nb->p;
}

static void name_done(name_buf *nb) {
    if (nb->p && nb->p != nb->small) free(nb->p);
}

#define NAME(var, what, s, n)                                      \
    name_buf var##_nb;                                             \
    mqgo_result var##_fail;                                        \
    const char *var = name_of(&var##_nb, what, s, n, &var##_fail); \
    if (!var) return var##_fail

#define NAME2(var, what, s, n, other)                              \
    name_buf var##_nb;                                             \
    mqgo_result var##_fail;                                        \
    const char *var = name_of(&var##_nb, what, s, n, &var##_fail); \
    if (!var) {                                                    \
        name_done(&other##_nb);                                    \
        return var##_fail;                                         \
    }

/* ---- handles ------------------------------------------------------------------------------ */

void mqgo_broker_close(mqgo_broker b) { mq_broker_close((mq_broker *)b); }
void mqgo_broker_free(mqgo_broker b) { mq_broker_free((mq_broker *)b); }
const char *mqgo_member_id(mqgo_member m) { return mq_member_id((mq_member *)m); }

mqgo_cancel mqgo_cancel_new(void) {
    mq_cancel *c = NULL;
    return mq_cancel_new(&c) == MQ_OK ? (mqgo_cancel)c : 0;
}
void mqgo_cancel_trigger(mqgo_cancel c) { mq_cancel_trigger((mq_cancel *)c); }
void mqgo_cancel_reset(mqgo_cancel c) { mq_cancel_reset((mq_cancel *)c); }
void mqgo_cancel_free(mqgo_cancel c) { mq_cancel_free((mq_cancel *)c); }

/* ---- the manual clock ---------------------------------------------------------------------- */

/* Runs with partition locks held: reads the atomic (Go's ManualClock writes it) and nothing
 * else (no Go, no mq). */
static int64_t manual_clock(void *user) {
    return __atomic_load_n((const int64_t *)user, __ATOMIC_SEQ_CST);
}

mq_clock_fn mqgo_clock_fn(void) { return manual_clock; }

/* ---- publishing --------------------------------------------------------------------------- */

/* The result of a publish (expr) that writes partition and offset. */
#define PUBLISHED(expr)           \
    int32_t partition = -1;       \
    int64_t offset = -1;          \
    mqgo_result r = result(expr); \
    r.partition = partition;      \
    r.offset = offset

/* The result of a batch publish (expr) that writes published. */
#define BATCH_PUBLISHED(expr)     \
    size_t published = 0;         \
    mqgo_result r = result(expr); \
    r.count = published

mqgo_result mqgo_publish(mqgo_broker b_, const char *topic, size_t topic_len, const char *key,
                         size_t key_len, const char *payload, size_t payload_len, mqgo_mem headers_,
                         size_t header_count, int64_t wait_ms, mqgo_cancel cancel_) {
    mq_broker *b = (mq_broker *)b_;
    mq_cancel *cancel = (mq_cancel *)cancel_;
    const mq_header *headers = (const mq_header *)headers_;
    NAME(t, "topic", topic, topic_len);
    PUBLISHED(mq_topic_publish(b, t, key, key_len, payload, payload_len, headers, header_count,
                               wait_ms, cancel, &partition, &offset));
    name_done(&t_nb);
    return r;
}

mqgo_result mqgo_publish_batch(mqgo_broker b_, const char *topic, size_t topic_len,
                               mqgo_mem records_, size_t count, int64_t wait_ms,
                               mqgo_cancel cancel_, mqgo_mem results_) {
    mq_broker *b = (mq_broker *)b_;
    mq_cancel *cancel = (mq_cancel *)cancel_;
    const mq_record *records = (const mq_record *)records_;
    mq_publish_result *results = (mq_publish_result *)results_;
    NAME(t, "topic", topic, topic_len);
    BATCH_PUBLISHED(mq_topic_publish_batch(b, t, records, sizeof(mq_record), count, wait_ms, cancel,
                                           results, sizeof(mq_publish_result), &published));
    name_done(&t_nb);
    return r;
}

/* ---- pull consumption --------------------------------------------------------------------- */

/* The copying polls: buf is the caller's (Go memory, for this call only). */
#define COPIED(expr)              \
    size_t n = 0, needed = 0;     \
    mqgo_result r = result(expr); \
    r.count = n;                  \
    r.needed = needed

mqgo_result mqgo_poll_copy(mqgo_broker b_, const char *topic, size_t topic_len, const char *group,
                           size_t group_len, int32_t partition, int ack, int64_t offset, void *buf,
                           size_t cap, size_t max, int64_t wait_ms, mqgo_cancel cancel_) {
    mq_broker *b = (mq_broker *)b_;
    mq_cancel *cancel = (mq_cancel *)cancel_;
    NAME(t, "topic", topic, topic_len);
    NAME2(g, "group", group, group_len, t);
    COPIED(
        ack ? mq_group_ack_poll_copy(b, t, g, partition, offset, buf, cap, max, wait_ms, cancel, &n,
                                     &needed)
            : mq_group_poll_copy(b, t, g, partition, buf, cap, max, wait_ms, cancel, &n, &needed));
    name_done(&t_nb);
    name_done(&g_nb);
    return r;
}

#define GROUP_CALL(expr)                    \
    NAME(t, "topic", topic, topic_len);     \
    NAME2(g, "group", group, group_len, t); \
    mqgo_result r = result(expr);           \
    name_done(&t_nb);                       \
    name_done(&g_nb);                       \
    return r

mqgo_result mqgo_ack(mqgo_broker b_, const char *topic, size_t topic_len, const char *group,
                     size_t group_len, int32_t partition, int64_t offset) {
    mq_broker *b = (mq_broker *)b_;
    GROUP_CALL(mq_group_ack(b, t, g, partition, offset));
}

/* ---- handles ------------------------------------------------------------------------------ */

mqgo_result mqgo_publisher_publish(mqgo_publisher p_, const char *key, size_t key_len,
                                   const char *payload, size_t payload_len, mqgo_mem headers_,
                                   size_t header_count, int64_t wait_ms, mqgo_cancel cancel_) {
    PUBLISHED(mq_publisher_publish((mq_publisher *)p_, key, key_len, payload, payload_len,
                                   (const mq_header *)headers_, header_count, wait_ms,
                                   (mq_cancel *)cancel_, &partition, &offset));
    return r;
}

mqgo_result mqgo_publisher_publish_batch(mqgo_publisher p_, mqgo_mem records_, size_t count,
                                         int64_t wait_ms, mqgo_cancel cancel_, mqgo_mem results_) {
    BATCH_PUBLISHED(mq_publisher_publish_batch((mq_publisher *)p_, (const mq_record *)records_,
                                               sizeof(mq_record), count, wait_ms,
                                               (mq_cancel *)cancel_, (mq_publish_result *)results_,
                                               sizeof(mq_publish_result), &published));
    return r;
}

mqgo_result mqgo_cursor_poll_copy(mqgo_cursor c_, int ack, int64_t offset, void *buf, size_t cap,
                                  size_t max, int64_t wait_ms, mqgo_cancel cancel_) {
    mq_cursor *c = (mq_cursor *)c_;
    mq_cancel *cancel = (mq_cancel *)cancel_;
    COPIED(ack ? mq_cursor_ack_poll_copy(c, offset, buf, cap, max, wait_ms, cancel, &n, &needed)
               : mq_cursor_poll_copy(c, buf, cap, max, wait_ms, cancel, &n, &needed));
    return r;
}

mqgo_result mqgo_cursor_ack(mqgo_cursor c_, int64_t offset) {
    return result(mq_cursor_ack((mq_cursor *)c_, offset));
}

/* ---- push --------------------------------------------------------------------------------- */

/* The box whose handler or rebalance callback this thread is running, so that a Close from
 * inside it is refused (MQ_ERR_DEADLOCK) instead of waiting for itself. */
static __thread void *current_handler_box;
static __thread void *current_rebalance_box;

void *mqgo_current_handler_box(void) { return current_handler_box; }
void *mqgo_current_rebalance_box(void) { return current_rebalance_box; }

/* Library threads enter Go here. The box holds the handle of the Go subscription. */
static int handler_tramp(void *user, const mq_message *msg) {
    void *outer = current_handler_box;
    current_handler_box = user;
    int rc = mqgoHandle(*(uintptr_t *)user, (mq_message *)msg);
    current_handler_box = outer;
    return rc;
}

static void user_free_tramp(void *user) {
    mqgoRelease(*(uintptr_t *)user);
    free(user);
}

mqgo_result mqgo_subscription_open(mqgo_broker b_, const char *topic, size_t topic_len,
                                   const char *group, size_t group_len, int32_t prefetch,
                                   int has_prefetch, const int32_t *partitions,
                                   size_t partition_count, int has_partitions,
                                   int64_t session_timeout_ms, int has_session_timeout, void *box,
                                   mq_subscription **out) {
    mq_broker *b = (mq_broker *)b_;
    name_buf t_nb, g_nb;
    mqgo_result fail;
    const char *t = name_of(&t_nb, "topic", topic, topic_len, &fail);
    const char *g = t ? name_of(&g_nb, "group", group, group_len, &fail) : NULL;
    if (!t || !g) {
        if (t) name_done(&t_nb);
        user_free_tramp(box); /* the promise of mq_subscription_open, kept on our failure too */
        return fail;
    }
    mq_subscription_options o;
    mq_subscription_options_init(&o, sizeof o);
    if (has_prefetch) o.prefetch = prefetch;
    if (has_partitions) {
        o.partitions = partitions;
        o.partition_count = partition_count;
    }
    if (has_session_timeout) o.session_timeout_ms = session_timeout_ms;
    mqgo_result r =
        result(mq_subscription_open(b, t, g, &o, handler_tramp, box, user_free_tramp, out));
    name_done(&t_nb);
    name_done(&g_nb);
    return r;
}

/* ---- members ------------------------------------------------------------------------------ */

static void assignor_tramp(void *user, int32_t partitions, const char *const *member_ids,
                           int32_t member_count, int32_t *owner_out) {
    mqgoAssign(*(uintptr_t *)user, partitions, (char **)member_ids, member_count, owner_out);
}

static void rebalance_tramp(void *user, mq_member *member, int64_t generation) {
    void *outer = current_rebalance_box;
    current_rebalance_box = user;
    mqgoRebalance(*(uintptr_t *)user, (mqgo_member)member, generation);
    current_rebalance_box = outer;
}

mqgo_result mqgo_member_join(mqgo_broker b_, const char *topic, size_t topic_len, const char *group,
                             size_t group_len, const char *id, size_t id_len, int has_id,
                             int64_t session_timeout_ms, int has_session_timeout,
                             void *assignor_box, void *rebalance_box, mqgo_member *out) {
    mq_broker *b = (mq_broker *)b_;
    NAME(t, "topic", topic, topic_len);
    NAME2(g, "group", group, group_len, t);
    name_buf i_nb = {{0}, NULL};
    mqgo_result i_fail;
    const char *i = NULL;
    if (has_id && !(i = name_of(&i_nb, "member", id, id_len, &i_fail))) {
        name_done(&t_nb);
        name_done(&g_nb);
        return i_fail;
    }
    mq_member_options o;
    mq_member_options_init(&o, sizeof o);
    o.member_id = i;
    if (has_session_timeout) o.session_timeout_ms = session_timeout_ms;
    if (assignor_box) {
        o.assignor = assignor_tramp;
        o.assignor_user = assignor_box;
    }
    if (rebalance_box) {
        o.on_rebalance = rebalance_tramp;
        o.on_rebalance_user = rebalance_box;
    }
    mq_member *m = NULL;
    mqgo_result r = result(mq_member_join(b, t, g, &o, &m));
    *out = (mqgo_member)m;
    name_done(&t_nb);
    name_done(&g_nb);
    name_done(&i_nb);
    return r;
}

mqgo_result mqgo_member_poll_copy(mqgo_member m_, int ack, int32_t partition, int64_t offset,
                                  void *buf, size_t cap, size_t max, int64_t wait_ms,
                                  mqgo_cancel cancel_) {
    mq_member *m = (mq_member *)m_;
    mq_cancel *cancel = (mq_cancel *)cancel_;
    COPIED(ack ? mq_member_ack_poll_copy(m, partition, offset, buf, cap, max, wait_ms, cancel, &n,
                                         &needed)
               : mq_member_poll_copy(m, buf, cap, max, wait_ms, cancel, &n, &needed));
    return r;
}

mqgo_result mqgo_member_ack(mqgo_member m_, int32_t partition, int64_t offset) {
    mq_member *m = (mq_member *)m_;
    return result(mq_member_ack(m, partition, offset));
}

/* ---- asynchronous calls ------------------------------------------------------------------- */

/* Runs on the broker's completer thread, with no lock of the library held: records the
 * outcome (mq_last_error() is this thread's) and wakes the goroutine. The Go side only sends
 * on a buffered channel: it never blocks, so close and free, which wait for it, never hang. */
static void done_tramp(void *user, mq_status status) {
    mqgo_async *st = (mqgo_async *)user;
    st->err = status != MQ_OK ? strdup(mq_last_error()) : NULL;
    st->status = status;
    mqgoAsyncDone(st->handle);
}

/* A Go string copied, NUL-terminated, into the call's state (n < MQGO_NAME_CAP: Go checks). */
static int name_into(char *dst, const char *what, const char *s, size_t n, mqgo_result *fail) {
    if (n >= MQGO_NAME_CAP) { /* Go sends these to the blocking call; kept safe all the same */
        *fail = refused(MQ_ERR_INVALID, strdup("name too long for an asynchronous call"));
        return 0;
    }
    if (n && memchr(s, 0, n)) {
        name_buf nb; /* name_of words the refusal */
        name_of(&nb, what, s, n, fail);
        return 0;
    }
    if (n) memcpy(dst, s, n);
    dst[n] = '\0';
    return 1;
}

/* Begins a call in its state st_: the names copied in (topic or group NULL: none), the
 * outputs reset. NULL, with *fail set, when a name is refused. */
static mqgo_async *async_begin(mqgo_mem st_, const char *topic, size_t topic_len, const char *group,
                               size_t group_len, mqgo_result *fail) {
    mqgo_async *st = (mqgo_async *)st_;
    if (topic && !name_into(st->topic, "topic", topic, topic_len, fail)) return NULL;
    if (group && !name_into(st->group, "group", group, group_len, fail)) return NULL;
    st->status = MQ_PENDING;
    st->partition = -1;
    st->offset = -1;
    st->count = 0;
    st->needed = 0;
    st->err = NULL;
    return st;
}

/* The result of a call begun in st that returned s: MQ_PENDING (nothing else: st is done's
 * now, maybe already written, so nothing here touches it), or the final result of a call that
 * did not pend (done is never called then), its outputs from st. */
static mqgo_result async_now(mqgo_async *st, int s) {
    if (s == MQ_PENDING) {
        mqgo_result r;
        memset(&r, 0, sizeof r);
        r.status = MQ_PENDING;
        return r;
    }
    mqgo_result r = result(s);
    r.partition = st->partition;
    r.offset = st->offset;
    r.count = st->count;
    r.needed = st->needed;
    return r;
}

/* The body of every wrapper below: begins the call in st (its names, or NULL), makes it with
 * expr (which passes done_tramp, st as done and user, and the outputs in st), and returns
 * async_now's result. */
#define ASYNC_CALL(topic, topic_len, group, group_len, expr)                       \
    mqgo_result fail_;                                                             \
    mqgo_async *st = async_begin(st_, topic, topic_len, group, group_len, &fail_); \
    if (!st) return fail_;                                                         \
    return async_now(st, (expr))

mqgo_result mqgo_poll_copy_async(mqgo_broker b_, mqgo_mem st_, const char *topic, size_t topic_len,
                                 const char *group, size_t group_len, int32_t partition, int ack,
                                 int64_t offset, mqgo_mem buf, size_t cap, size_t max,
                                 int64_t wait_ms, mqgo_cancel cancel_) {
    mq_broker *b = (mq_broker *)b_;
    mq_cancel *cancel = (mq_cancel *)cancel_;
    ASYNC_CALL(
        topic, topic_len, group, group_len,
        ack ? mq_group_ack_poll_copy_async(b, st->topic, st->group, partition, offset, (void *)buf,
                                           cap, max, wait_ms, cancel, &st->count, &st->needed,
                                           done_tramp, st)
            : mq_group_poll_copy_async(b, st->topic, st->group, partition, (void *)buf, cap, max,
                                       wait_ms, cancel, &st->count, &st->needed, done_tramp, st));
}

mqgo_result mqgo_member_poll_copy_async(mqgo_member m_, mqgo_mem st_, int ack, int32_t partition,
                                        int64_t offset, mqgo_mem buf, size_t cap, size_t max,
                                        int64_t wait_ms, mqgo_cancel cancel_) {
    mq_member *m = (mq_member *)m_;
    mq_cancel *cancel = (mq_cancel *)cancel_;
    ASYNC_CALL(
        NULL, 0, NULL, 0,
        ack ? mq_member_ack_poll_copy_async(m, partition, offset, (void *)buf, cap, max, wait_ms,
                                            cancel, &st->count, &st->needed, done_tramp, st)
            : mq_member_poll_copy_async(m, (void *)buf, cap, max, wait_ms, cancel, &st->count,
                                        &st->needed, done_tramp, st));
}

mqgo_result mqgo_publish_async(mqgo_broker b_, mqgo_mem st_, const char *topic, size_t topic_len,
                               mqgo_mem key, size_t key_len, mqgo_mem payload, size_t payload_len,
                               mqgo_mem headers_, size_t header_count, int64_t wait_ms,
                               mqgo_cancel cancel_) {
    mq_broker *b = (mq_broker *)b_;
    mq_cancel *cancel = (mq_cancel *)cancel_;
    ASYNC_CALL(
        topic, topic_len, NULL, 0,
        mq_topic_publish_async(b, st->topic, (const void *)key, key_len, (const void *)payload,
                               payload_len, (const mq_header *)headers_, header_count, wait_ms,
                               cancel, &st->partition, &st->offset, done_tramp, st));
}

mqgo_result mqgo_publish_batch_async(mqgo_broker b_, mqgo_mem st_, const char *topic,
                                     size_t topic_len, mqgo_mem records_, size_t count,
                                     int64_t wait_ms, mqgo_cancel cancel_, mqgo_mem results_) {
    mq_broker *b = (mq_broker *)b_;
    mq_cancel *cancel = (mq_cancel *)cancel_;
    ASYNC_CALL(
        topic, topic_len, NULL, 0,
        mq_topic_publish_batch_async(b, st->topic, (const mq_record *)records_, sizeof(mq_record),
                                     count, wait_ms, cancel, (mq_publish_result *)results_,
                                     sizeof(mq_publish_result), &st->count, done_tramp, st));
}
