/* mqpy.c: the native helpers of the Python binding (see mqpy.h for why each exists).
 * Included into the cffi-generated source, after the forward declarations of the extern
 * "Python" callbacks (_mqpy_py_*). */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mq.h"
#include "mqpy.h"

enum {
    F_PARTITION,
    F_DELIVERY,
    F_OFFSET,
    F_KEY_OFF,
    F_KEY_LEN,
    F_VALUE_OFF,
    F_VALUE_LEN,
    F_TIMESTAMP,
    F_LOST,
    F_HEADER_COUNT,
    F_HEADERS_AT,
    F_DL_TOPIC_OFF,
    F_DL_TOPIC_LEN,
    F_DL_GROUP_OFF,
    F_DL_GROUP_LEN,
    F_DL_PARTITION,
    F_DL_OFFSET,
    F_DL_DELIVERY,
    MQPY_META
};

int mqpy_meta_fields(void) { return MQPY_META; }

static void set_err(mqpy_ctx *ctx, const char *text) {
    size_t n = strlen(text);
    if (n >= sizeof ctx->err) n = sizeof ctx->err - 1;
    memcpy(ctx->err, text, n);
    ctx->err[n] = '\0';
}

/* The shape every call takes: on failure, copy the thread's detail message at once. */
static int done(mq_status s, mqpy_ctx *ctx) {
    if (s != MQ_OK) set_err(ctx, mq_last_error());
    return (int)s;
}

static int grow(void **buf, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap) return 1;
    size_t n = *cap ? *cap : 16;
    while (n < need) n *= 2;
    void *p = realloc(*buf, n * elem);
    if (!p) return 0;
    *buf = p;
    *cap = n;
    return 1;
}

static int no_memory(mqpy_ctx *ctx) {
    set_err(ctx, "out of memory in the Python binding's copy buffers");
    return MQ_ERR_NO_MEMORY;
}

/* ---- deletion: group polls announce what they are copying -------------------------------- */

/* A view of mq_group_poll is valid until its topic is deleted or its group unsubscribed, and
 * Python copies it after mq_group_poll returns: a deletion by another thread in between would
 * free what is being copied. So each thread's group poll announces (broker, topic, group)
 * before it calls mq and withdraws after the copy; a deletion made through this binding waits,
 * once mq has returned, until no announced poll of that topic (group) is left. The fields
 * change only under g_busy_mu (announce); withdrawing is one atomic store. */
typedef struct busy {
    _Atomic int active;
    mq_broker *b;
    char topic[256];
    char group[256];
    struct busy *prev, *next;
} busy;

static pthread_mutex_t g_busy_mu = PTHREAD_MUTEX_INITIALIZER;
static busy g_busy = {0, NULL, "", "", &g_busy, &g_busy};

/* 0 when the names cannot be announced: then mq refuses them (NULL, longer than a legal name)
 * and hands out no view. */
static int announce(mqpy_ctx *ctx, mq_broker *b, const char *topic, const char *group) {
    busy *me = ctx->busy;
    if (!me || !topic || !group) return 0;
    size_t tl = strlen(topic), gl = strlen(group);
    if (tl >= sizeof me->topic || gl >= sizeof me->group) return 0;
    pthread_mutex_lock(&g_busy_mu);
    me->b = b;
    memcpy(me->topic, topic, tl + 1);
    memcpy(me->group, group, gl + 1);
    atomic_store(&me->active, 1);
    pthread_mutex_unlock(&g_busy_mu);
    return 1;
}

static void withdraw(mqpy_ctx *ctx, int announced) {
    if (announced) atomic_store(&((busy *)ctx->busy)->active, 0);
}

static void quiesce(mq_broker *b, const char *topic, const char *group) {
    pthread_mutex_lock(&g_busy_mu);
    for (busy *x = g_busy.next; x != &g_busy;) {
        if (atomic_load(&x->active) && x->b == b && strcmp(x->topic, topic) == 0 &&
            (!group || strcmp(x->group, group) == 0)) {
            pthread_mutex_unlock(&g_busy_mu);
            sched_yield(); /* it was woken by the deletion, or is copying */
            pthread_mutex_lock(&g_busy_mu);
            x = g_busy.next; /* the list may have changed meanwhile */
            continue;
        }
        x = x->next;
    }
    pthread_mutex_unlock(&g_busy_mu);
}

int mqpy_topic_delete(mq_broker *b, const char *topic, mqpy_ctx *ctx) {
    mq_status s = mq_topic_delete(b, topic);
    if (s == MQ_OK) quiesce(b, topic, NULL);
    return done(s, ctx);
}

int mqpy_group_unsubscribe(mq_broker *b, const char *topic, const char *group, mqpy_ctx *ctx) {
    mq_status s = mq_group_unsubscribe(b, topic, group);
    if (s == MQ_OK) quiesce(b, topic, group);
    return done(s, ctx);
}

mqpy_ctx *mqpy_ctx_new(void) {
    mqpy_ctx *ctx = calloc(1, sizeof(mqpy_ctx));
    busy *me = calloc(1, sizeof(busy));
    if (!ctx || !me) {
        free(ctx);
        free(me);
        return NULL;
    }
    ctx->busy = me;
    pthread_mutex_lock(&g_busy_mu);
    me->next = g_busy.next;
    me->prev = &g_busy;
    g_busy.next->prev = me;
    g_busy.next = me;
    pthread_mutex_unlock(&g_busy_mu);
    return ctx;
}

void mqpy_ctx_free(mqpy_ctx *ctx) {
    if (!ctx) return;
    busy *me = ctx->busy;
    pthread_mutex_lock(&g_busy_mu);
    me->prev->next = me->next;
    me->next->prev = me->prev;
    pthread_mutex_unlock(&g_busy_mu);
    free(me);
    free(ctx->meta);
    free(ctx->data);
    free(ctx->msgs);
    free(ctx->results);
    free(ctx->records);
    free(ctx->headers);
    free(ctx->pubres);
    free(ctx);
}

static _Atomic int64_t g_blocked;

int64_t mqpy_blocked_calls(void) { return atomic_load(&g_blocked); }

/* ---- copying polled messages ------------------------------------------------------------- */

static int64_t put(mqpy_ctx *ctx, const void *p, size_t n) {
    int64_t at = (int64_t)ctx->data_len;
    if (n) memcpy(ctx->data + ctx->data_len, p, n);
    ctx->data_len += n;
    return at;
}

int mqpy_pack(const mq_message *msgs, size_t n, mqpy_ctx *ctx) {
    size_t bytes = 0, nheaders = 0, keys = 0, dead = 0;
    for (size_t i = 0; i < n; ++i) {
        const mq_message *m = &msgs[i];
        bytes += m->key_len + m->payload_len;
        keys += m->key != NULL;
        dead += m->dead_letter != NULL;
        for (size_t h = 0; h < m->header_count; ++h)
            bytes += m->headers[h].name_len + m->headers[h].value_len;
        nheaders += m->header_count;
        if (m->dead_letter) bytes += strlen(m->dead_letter->topic) + strlen(m->dead_letter->group);
    }
    ctx->count = 0;
    ctx->data_len = 0;
    if (!grow((void **)&ctx->meta, &ctx->meta_cap, n * MQPY_META + 4 * nheaders, sizeof(int64_t)) ||
        !grow((void **)&ctx->data, &ctx->data_cap, bytes ? bytes : 1, 1))
        return no_memory(ctx);
    int64_t *hm = ctx->meta + n * MQPY_META;
    for (size_t i = 0; i < n; ++i) {
        const mq_message *m = &msgs[i];
        int64_t *f = ctx->meta + i * MQPY_META;
        f[F_PARTITION] = m->partition;
        f[F_DELIVERY] = m->delivery_count;
        f[F_OFFSET] = m->offset;
        f[F_KEY_LEN] = (int64_t)m->key_len;
        f[F_KEY_OFF] = m->key ? put(ctx, m->key, m->key_len) : -1;
        f[F_VALUE_LEN] = (int64_t)m->payload_len;
        f[F_VALUE_OFF] = put(ctx, m->payload, m->payload_len);
        f[F_TIMESTAMP] = m->timestamp_ns;
        f[F_LOST] = m->lost;
        f[F_HEADER_COUNT] = (int64_t)m->header_count;
        f[F_HEADERS_AT] = hm - ctx->meta;
        for (size_t h = 0; h < m->header_count; ++h) {
            const mq_header *hd = &m->headers[h];
            hm[1] = (int64_t)hd->name_len;
            hm[0] = put(ctx, hd->name, hd->name_len);
            hm[3] = (int64_t)hd->value_len;
            hm[2] = put(ctx, hd->value, hd->value_len);
            hm += 4;
        }
        if (m->dead_letter) {
            const mq_dead_letter *d = m->dead_letter;
            size_t tl = strlen(d->topic), gl = strlen(d->group);
            f[F_DL_TOPIC_LEN] = (int64_t)tl;
            f[F_DL_TOPIC_OFF] = put(ctx, d->topic, tl);
            f[F_DL_GROUP_LEN] = (int64_t)gl;
            f[F_DL_GROUP_OFF] = put(ctx, d->group, gl);
            f[F_DL_PARTITION] = d->partition;
            f[F_DL_OFFSET] = d->offset;
            f[F_DL_DELIVERY] = d->delivery_count;
        } else {
            f[F_DL_TOPIC_OFF] = -1;
            f[F_DL_TOPIC_LEN] = f[F_DL_GROUP_OFF] = f[F_DL_GROUP_LEN] = 0;
            f[F_DL_PARTITION] = f[F_DL_OFFSET] = f[F_DL_DELIVERY] = 0;
        }
    }
    ctx->keys = keys;
    ctx->header_total = nheaders;
    ctx->dead_letters = dead;
    ctx->count = n;
    return MQ_OK;
}

/* The view buffer is kept zeroed where mq may not write (headers, until the core stores them),
 * so a field it leaves alone reads as "none" rather than as an earlier poll's leftovers. */
static int grow_views(mqpy_ctx *ctx, size_t max) {
    size_t old = ctx->msgs_cap;
    if (!grow((void **)&ctx->msgs, &ctx->msgs_cap, max ? max : 1, sizeof(mq_message))) return 0;
    if (ctx->msgs_cap > old) memset(ctx->msgs + old, 0, (ctx->msgs_cap - old) * sizeof(mq_message));
    return 1;
}

static int poll_done(mq_status s, size_t n, mqpy_ctx *ctx) {
    if (s != MQ_OK) {
        ctx->count = 0;
        return done(s, ctx);
    }
    int rc = mqpy_pack(ctx->msgs, n, ctx);
    for (size_t i = 0; i < n; ++i) {
        ctx->msgs[i].headers = NULL;
        ctx->msgs[i].header_count = 0;
        ctx->msgs[i].dead_letter = NULL;
    }
    return rc;
}

int mqpy_poll(mq_broker *b, const char *topic, const char *group, int32_t partition, size_t max,
              int64_t wait_ms, mq_cancel *cancel, mqpy_ctx *ctx) {
    /* max 0 is the library's MQ_ERR_INVALID to report: it gets a buffer anyway */
    if (!grow_views(ctx, max)) return no_memory(ctx);
    size_t n = 0;
    int announced = announce(ctx, b, topic, group);
    if (wait_ms) atomic_fetch_add(&g_blocked, 1);
    mq_status s = mq_group_poll(b, topic, group, partition, ctx->msgs, sizeof(mq_message), max,
                                wait_ms, cancel, &n);
    if (wait_ms) atomic_fetch_sub(&g_blocked, 1);
    int rc = poll_done(s, n, ctx);
    withdraw(ctx, announced);
    return rc;
}

int mqpy_member_poll(mq_member *m, size_t max, int64_t wait_ms, mq_cancel *cancel, mqpy_ctx *ctx) {
    if (!grow_views(ctx, max)) return no_memory(ctx);
    size_t n = 0;
    if (wait_ms) atomic_fetch_add(&g_blocked, 1);
    mq_status s = mq_member_poll(m, ctx->msgs, sizeof(mq_message), max, wait_ms, cancel, &n);
    if (wait_ms) atomic_fetch_sub(&g_blocked, 1);
    return poll_done(s, n, ctx);
}

int mqpy_ack_poll(mq_broker *b, const char *topic, const char *group, int32_t partition,
                  int64_t offset, size_t max, int64_t wait_ms, mq_cancel *cancel, mqpy_ctx *ctx) {
    if (!grow_views(ctx, max)) return no_memory(ctx);
    size_t n = 0;
    int announced = announce(ctx, b, topic, group);
    if (wait_ms) atomic_fetch_add(&g_blocked, 1);
    mq_status s = mq_group_ack_poll(b, topic, group, partition, offset, ctx->msgs,
                                    sizeof(mq_message), max, wait_ms, cancel, &n);
    if (wait_ms) atomic_fetch_sub(&g_blocked, 1);
    int rc = poll_done(s, n, ctx);
    withdraw(ctx, announced);
    return rc;
}

int mqpy_member_ack_poll(mq_member *m, int32_t partition, int64_t offset, size_t max,
                         int64_t wait_ms, mq_cancel *cancel, mqpy_ctx *ctx) {
    if (!grow_views(ctx, max)) return no_memory(ctx);
    size_t n = 0;
    if (wait_ms) atomic_fetch_add(&g_blocked, 1);
    mq_status s = mq_member_ack_poll(m, partition, offset, ctx->msgs, sizeof(mq_message), max,
                                     wait_ms, cancel, &n);
    if (wait_ms) atomic_fetch_sub(&g_blocked, 1);
    return poll_done(s, n, ctx);
}

/* ---- publishing -------------------------------------------------------------------------- */

/* Points count headers into hdata (lengths in pairs in hlens). */
static void unpack_headers(mq_header *out, const char *hdata, const size_t *hlens, size_t count,
                           size_t *pos) {
    for (size_t h = 0; h < count; ++h) {
        out[h].name_len = hlens[2 * h];
        out[h].name = hdata + *pos;
        *pos += out[h].name_len;
        out[h].value_len = hlens[2 * h + 1];
        out[h].value = hdata + *pos;
        *pos += out[h].value_len;
    }
}

int mqpy_publish(mq_broker *b, const char *topic, const char *key, size_t key_len,
                 const char *value, size_t value_len, const char *hdata, const size_t *hlens,
                 size_t hcount, int64_t wait_ms, mq_cancel *cancel, mqpy_ctx *ctx) {
    const mq_header *headers = NULL;
    if (hcount) {
        if (!grow((void **)&ctx->headers, &ctx->headers_cap, hcount, sizeof(mq_header)))
            return no_memory(ctx);
        size_t pos = 0;
        unpack_headers(ctx->headers, hdata, hlens, hcount, &pos);
        headers = ctx->headers;
    }
    if (wait_ms) atomic_fetch_add(&g_blocked, 1);
    mq_status s = mq_topic_publish(b, topic, key, key_len, value, value_len, headers, hcount,
                                   wait_ms, cancel, &ctx->partition, &ctx->offset);
    if (wait_ms) atomic_fetch_sub(&g_blocked, 1);
    return done(s, ctx);
}

int mqpy_publish_many(mq_broker *b, const char *topic, const char *vdata, const size_t *vlens,
                      const char *kdata, const int64_t *klens, const size_t *hcounts,
                      const char *hdata, const size_t *hlens, size_t count, int64_t wait_ms,
                      mq_cancel *cancel, mqpy_ctx *ctx) {
    size_t nheaders = 0;
    if (hcounts)
        for (size_t i = 0; i < count; ++i) nheaders += hcounts[i];
    if (!grow((void **)&ctx->records, &ctx->records_cap, count ? count : 1, sizeof(mq_record)) ||
        !grow((void **)&ctx->results, &ctx->results_cap, 2 * (count ? count : 1),
              sizeof(int64_t)) ||
        !grow((void **)&ctx->headers, &ctx->headers_cap, nheaders ? nheaders : 1,
              sizeof(mq_header)))
        return no_memory(ctx);
    size_t vpos = 0, kpos = 0, hpos = 0, hat = 0;
    for (size_t i = 0; i < count; ++i) {
        mq_record *r = &ctx->records[i];
        r->payload = vdata + vpos;
        r->payload_len = vlens[i];
        vpos += vlens[i];
        if (klens && klens[i] >= 0) {
            r->key = kdata + kpos;
            r->key_len = (size_t)klens[i];
            kpos += (size_t)klens[i];
        } else {
            r->key = NULL;
            r->key_len = 0;
        }
        size_t hc = hcounts ? hcounts[i] : 0;
        r->headers = hc ? ctx->headers + hat : NULL;
        r->header_count = hc;
        if (hc) unpack_headers(ctx->headers + hat, hdata, hlens + 2 * hat, hc, &hpos);
        hat += hc;
    }
    if (!grow((void **)&ctx->pubres, &ctx->pubres_cap, count ? count : 1,
              sizeof(mq_publish_result)))
        return no_memory(ctx);
    mq_publish_result *res = ctx->pubres;
    size_t published = 0;
    if (wait_ms) atomic_fetch_add(&g_blocked, 1);
    mq_status s = mq_topic_publish_batch(b, topic, ctx->records, sizeof(mq_record), count, wait_ms,
                                         cancel, res, sizeof(mq_publish_result), &published);
    if (wait_ms) atomic_fetch_sub(&g_blocked, 1);
    ctx->count = published;
    if (s == MQ_OK || published > 0 || s == MQ_FULL || s == MQ_CLOSED || s == MQ_CANCELLED) {
        for (size_t i = 0; i < count; ++i) {
            ctx->results[2 * i] = res[i].partition;
            ctx->results[2 * i + 1] = res[i].offset;
        }
    }
    return done(s, ctx);
}

/* ---- Ctrl-C ------------------------------------------------------------------------------ */

static pthread_mutex_t g_arm_mu = PTHREAD_MUTEX_INITIALIZER;
static mq_cancel *g_armed;
static _Atomic int g_forward = -1;
static int g_watch_started;

void mqpy_arm(mq_cancel *cancel) {
    pthread_mutex_lock(&g_arm_mu);
    g_armed = cancel;
    pthread_mutex_unlock(&g_arm_mu);
}

void mqpy_sigwatch_forward(int fd) { atomic_store(&g_forward, fd); }

static void *sigwatch_main(void *arg) {
    int fd = (int)(intptr_t)arg;
    unsigned char buf[64];
    for (;;) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return NULL;
        pthread_mutex_lock(&g_arm_mu);
        if (g_armed) mq_cancel_trigger(g_armed);
        pthread_mutex_unlock(&g_arm_mu);
        /* Whoever had the wakeup fd before us (asyncio's loop) still hears of the signal. */
        int fwd = atomic_load(&g_forward);
        if (fwd >= 0) {
            ssize_t w = write(fwd, buf, (size_t)n);
            (void)w;
        }
    }
}

int mqpy_sigwatch_start(int rfd) {
    pthread_mutex_lock(&g_arm_mu);
    int rc = 0;
    if (!g_watch_started) {
        pthread_t t;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        rc = pthread_create(&t, &attr, sigwatch_main, (void *)(intptr_t)rfd);
        pthread_attr_destroy(&attr);
        if (rc == 0) g_watch_started = 1;
    }
    pthread_mutex_unlock(&g_arm_mu);
    return rc;
}

/* ---- callbacks --------------------------------------------------------------------------- */

static _Atomic int g_shutdown;

void mqpy_set_shutdown(void) { atomic_store(&g_shutdown, 1); }

int mqpy_handler(void *user, const mq_message *msg) {
    if (atomic_load(&g_shutdown)) return 1; /* nack: the message stays for another owner */
    return _mqpy_py_handler(user, msg);
}

void mqpy_user_free(void *user) {
    if (atomic_load(&g_shutdown)) return;
    _mqpy_py_user_free(user);
}

void mqpy_rebalance(void *user, mq_member *member, int64_t generation) {
    if (atomic_load(&g_shutdown)) return;
    _mqpy_py_rebalance(user, member, generation);
}

void mqpy_assignor(void *user, int32_t partitions, const char *const *member_ids,
                   int32_t member_count, int32_t *owner_out) {
    /* Round robin first: what the partitions get if Python cannot be asked or fails. */
    for (int32_t p = 0; p < partitions; ++p) owner_out[p] = member_count > 0 ? p % member_count : 0;
    if (atomic_load(&g_shutdown)) return;
    _mqpy_py_assignor(user, partitions, member_ids, member_count, owner_out);
}

/* ---- manual clock ------------------------------------------------------------------------ */

struct mqpy_clock {
    _Atomic int64_t now;
};

mqpy_clock *mqpy_clock_new(int64_t start_ns) {
    mqpy_clock *c = malloc(sizeof *c);
    if (c) atomic_init(&c->now, start_ns);
    return c;
}

void mqpy_clock_free(mqpy_clock *c) { free(c); }
void mqpy_clock_set(mqpy_clock *c, int64_t now_ns) { atomic_store(&c->now, now_ns); }
int64_t mqpy_clock_advance(mqpy_clock *c, int64_t delta_ns) {
    return atomic_fetch_add(&c->now, delta_ns) + delta_ns;
}
int64_t mqpy_clock_read(void *user) { return atomic_load(&((mqpy_clock *)user)->now); }
