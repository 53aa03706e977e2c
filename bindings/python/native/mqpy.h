/* mqpy.h: the Python binding's own native helpers, compiled into the cffi extension beside
 * the generated wrappers. The cdef reads this file too (through the preprocessor), so keep it
 * to plain declarations cffi can parse: no macros but the include guard, no inline code.
 *
 * Why they exist:
 * - mq_last_error() belongs to the OS thread and is overwritten by the next failing call, so
 *   every wrapper copies it into the caller's buffer in the same native call (mq.h asks for
 *   exactly this shape).
 * - Batches cross into C once: values, keys and headers arrive packed.
 * - Ctrl-C: a thread reads the signal module's wakeup fd and triggers the cancel token of the
 *   main thread's blocking call (mq_cancel_trigger is not async-signal-safe, so it cannot run in
 *   a signal handler).
 * - Push handlers, assignors and rebalance callbacks enter Python only through trampolines that
 *   check whether the interpreter is shutting down first.
 * - The manual clock is an atomic read: mq calls it with partition locks held.
 */
#ifndef MQPY_H
#define MQPY_H

/* Per-thread scratch: the error text of the last failure and the output of batch publishes. */
typedef struct mqpy_ctx {
    char err[1024];
    size_t count;       /* batch publish: records published */
    mq_record *records; /* batch publish scratch */
    size_t records_cap;
    mq_header *headers;
    size_t headers_cap;
    mq_publish_result *pubres; /* batch publish: where each record went */
    size_t pubres_cap;
} mqpy_ctx;

mqpy_ctx *mqpy_ctx_new(void);
void mqpy_ctx_free(mqpy_ctx *ctx);

/* mq_topic_publish_batch of count records packed: values concatenated in vdata with lengths
 * vlens; keys likewise (klens[i] < 0: no key; klens NULL: no keys at all); hcounts[i] headers
 * per record (NULL: none), in record order, as pairs of (name, value) whose lengths are
 * hlens[2i], hlens[2i+1], bytes concatenated in hdata; delays[i] the record's delay_ms (mq 1.5;
 * NULL: none delayed). ctx->pubres gets mq's result per record, ctx->count the number
 * published. */
int mqpy_publish_many(mq_broker *b, const char *topic, const char *vdata, const size_t *vlens,
                      const char *kdata, const int64_t *klens, const size_t *hcounts,
                      const char *hdata, const size_t *hlens, const int64_t *delays, size_t count,
                      int64_t wait_ms, mq_cancel *cancel, mqpy_ctx *ctx);
/* mqpy_publish_many through a publisher (mq 1.7): mq_publisher_publish_batch. */
int mqpy_publisher_publish_many(mq_publisher *p, const char *vdata, const size_t *vlens,
                                const char *kdata, const int64_t *klens, const size_t *hcounts,
                                const char *hdata, const size_t *hlens, const int64_t *delays,
                                size_t count, int64_t wait_ms, mq_cancel *cancel, mqpy_ctx *ctx);

/* Threads now inside a call that may block (wait_ms != 0): the batch publishes above and every
 * generated wrapper of a function with a wait_ms parameter (tools/gen_cffi.py). What tests watch
 * to know that a call is really waiting in C, with the GIL released. */
int64_t mqpy_blocked_calls(void);

/* ---- Ctrl-C ---- */
/* Starts (once) the thread that reads rfd; every byte read triggers the armed token and is
 * forwarded to the fd set with mqpy_sigwatch_forward (-1: none). 0 on success. */
int mqpy_sigwatch_start(int rfd);
void mqpy_sigwatch_forward(int fd);
/* The token the watcher triggers (NULL: none). Armed and disarmed under a lock so a trigger
 * never reaches a token that has been disarmed. */
void mqpy_arm(mq_cancel *cancel);

/* ---- callbacks ---- */
/* Once set, trampolines no longer enter Python: handlers nack, assignors fall back to round
 * robin, rebalance callbacks and user_free do nothing. Set at interpreter exit. */
void mqpy_set_shutdown(void);
int mqpy_handler(void *user, const mq_message *msg);
void mqpy_user_free(void *user);
void mqpy_rebalance(void *user, mq_member *member, int64_t generation);
void mqpy_assignor(void *user, int32_t partitions, const char *const *member_ids,
                   int32_t member_count, int32_t *owner_out);

/* ---- asynchronous calls (mq 1.4) ---- */
/* The done of every *_async call the binding makes (user: the call's cffi handle). Runs on the
 * broker's completer thread: takes the call off mqpy_blocked_calls(), reads mq_last_error()
 * there (it belongs to that thread) and hands status and text to Python, unless the interpreter
 * is shutting down (mqpy_set_shutdown: then nothing enters Python). */
void mqpy_done(void *user, mq_status status);

/* A batch of records for mq_topic_publish_batch_async, packed as mqpy_publish_many packs its
 * own (the pointers go into vdata, kdata and hdata, which the caller keeps until done), with
 * its own results: unlike the per-thread scratch, it lives as long as the pending call. */
typedef struct mqpy_batch {
    mq_record *records;
    mq_header *headers;
    mq_publish_result *results;
    size_t published;
} mqpy_batch;
mqpy_batch *mqpy_batch_new(const char *vdata, const size_t *vlens, const char *kdata,
                           const int64_t *klens, const size_t *hcounts, const char *hdata,
                           const size_t *hlens, const int64_t *delays, size_t count);
void mqpy_batch_free(mqpy_batch *b);

/* ---- manual clock ---- */
typedef struct mqpy_clock mqpy_clock;
mqpy_clock *mqpy_clock_new(int64_t start_ns);
void mqpy_clock_free(mqpy_clock *c);
void mqpy_clock_set(mqpy_clock *c, int64_t now_ns);
int64_t mqpy_clock_advance(mqpy_clock *c, int64_t delta_ns);
int64_t mqpy_clock_read(void *user);

#endif /* MQPY_H */
