/* mqpy.c: the native helpers of the Python binding (see mqpy.h for why each exists).
 * Included into the cffi-generated source, after the forward declarations of the extern
 * "Python" callbacks (_mqpy_py_*). */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mq.h"
#include "mqpy.h"

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
    set_err(ctx, "out of memory in the Python binding's publish buffers");
    return MQ_ERR_NO_MEMORY;
}

mqpy_ctx *mqpy_ctx_new(void) { return calloc(1, sizeof(mqpy_ctx)); }

void mqpy_ctx_free(mqpy_ctx *ctx) {
    if (!ctx) return;
    free(ctx->records);
    free(ctx->headers);
    free(ctx->pubres);
    free(ctx);
}

/* Also counted by the generated wrappers (tools/gen_cffi.py), which come after this file. */
static _Atomic int64_t g_blocked;

int64_t mqpy_blocked_calls(void) { return atomic_load(&g_blocked); }

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

/* Points records (count) and headers into the packed data (mqpy_publish_many's layout). */
static void pack_records(mq_record *records, mq_header *headers, const char *vdata,
                         const size_t *vlens, const char *kdata, const int64_t *klens,
                         const size_t *hcounts, const char *hdata, const size_t *hlens,
                         const int64_t *delays, size_t count) {
    size_t vpos = 0, kpos = 0, hpos = 0, hat = 0;
    for (size_t i = 0; i < count; ++i) {
        mq_record *r = &records[i];
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
        r->headers = hc ? headers + hat : NULL;
        r->header_count = hc;
        if (hc) unpack_headers(headers + hat, hdata, hlens + 2 * hat, hc, &hpos);
        hat += hc;
        r->delay_ms = delays ? delays[i] : 0;
    }
}

/* mq_topic_publish_batch on (b, topic), or mq_publisher_publish_batch on p when it is set. */
static int publish_many(mq_broker *b, const char *topic, mq_publisher *p, const char *vdata,
                        const size_t *vlens, const char *kdata, const int64_t *klens,
                        const size_t *hcounts, const char *hdata, const size_t *hlens,
                        const int64_t *delays, size_t count, int64_t wait_ms, mq_cancel *cancel,
                        mqpy_ctx *ctx) {
    size_t nheaders = 0;
    if (hcounts)
        for (size_t i = 0; i < count; ++i) nheaders += hcounts[i];
    if (!grow((void **)&ctx->records, &ctx->records_cap, count ? count : 1, sizeof(mq_record)) ||
        !grow((void **)&ctx->headers, &ctx->headers_cap, nheaders ? nheaders : 1,
              sizeof(mq_header)))
        return no_memory(ctx);
    pack_records(ctx->records, ctx->headers, vdata, vlens, kdata, klens, hcounts, hdata, hlens,
                 delays, count);
    if (!grow((void **)&ctx->pubres, &ctx->pubres_cap, count ? count : 1,
              sizeof(mq_publish_result)))
        return no_memory(ctx);
    mq_publish_result *res = ctx->pubres;
    size_t published = 0;
    mq_status s;
    if (wait_ms) atomic_fetch_add(&g_blocked, 1);
    if (p)
        s = mq_publisher_publish_batch(p, ctx->records, sizeof(mq_record), count, wait_ms, cancel,
                                       res, sizeof(mq_publish_result), &published);
    else
        s = mq_topic_publish_batch(b, topic, ctx->records, sizeof(mq_record), count, wait_ms,
                                   cancel, res, sizeof(mq_publish_result), &published);
    if (wait_ms) atomic_fetch_sub(&g_blocked, 1);
    ctx->count = published;
    return done(s, ctx);
}

int mqpy_publish_many(mq_broker *b, const char *topic, const char *vdata, const size_t *vlens,
                      const char *kdata, const int64_t *klens, const size_t *hcounts,
                      const char *hdata, const size_t *hlens, const int64_t *delays, size_t count,
                      int64_t wait_ms, mq_cancel *cancel, mqpy_ctx *ctx) {
    return publish_many(b, topic, NULL, vdata, vlens, kdata, klens, hcounts, hdata, hlens, delays,
                        count, wait_ms, cancel, ctx);
}

int mqpy_publisher_publish_many(mq_publisher *p, const char *vdata, const size_t *vlens,
                                const char *kdata, const int64_t *klens, const size_t *hcounts,
                                const char *hdata, const size_t *hlens, const int64_t *delays,
                                size_t count, int64_t wait_ms, mq_cancel *cancel, mqpy_ctx *ctx) {
    return publish_many(NULL, NULL, p, vdata, vlens, kdata, klens, hcounts, hdata, hlens, delays,
                        count, wait_ms, cancel, ctx);
}

mqpy_batch *mqpy_batch_new(const char *vdata, const size_t *vlens, const char *kdata,
                           const int64_t *klens, const size_t *hcounts, const char *hdata,
                           const size_t *hlens, const int64_t *delays, size_t count) {
    size_t nheaders = 0;
    if (hcounts)
        for (size_t i = 0; i < count; ++i) nheaders += hcounts[i];
    mqpy_batch *b = calloc(1, sizeof *b);
    if (!b) return NULL;
    b->records = malloc((count ? count : 1) * sizeof(mq_record));
    b->headers = malloc((nheaders ? nheaders : 1) * sizeof(mq_header));
    b->results = malloc((count ? count : 1) * sizeof(mq_publish_result));
    if (!b->records || !b->headers || !b->results) {
        mqpy_batch_free(b);
        return NULL;
    }
    pack_records(b->records, b->headers, vdata, vlens, kdata, klens, hcounts, hdata, hlens, delays,
                 count);
    return b;
}

void mqpy_batch_free(mqpy_batch *b) {
    if (!b) return;
    free(b->records);
    free(b->headers);
    free(b->results);
    free(b);
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

void mqpy_done(void *user, mq_status status) {
    /* Counted from before the call (tools/gen_cffi.py): done may run before it returned. */
    atomic_fetch_sub(&g_blocked, 1);
    if (atomic_load(&g_shutdown)) return; /* nobody is left to tell */
    _mqpy_py_done(user, (int)status, status != MQ_OK ? mq_last_error() : "");
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
