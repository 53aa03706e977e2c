/* Instruction counts of mq's hot paths, for callgrind: one thread publishes, polls and acks
 * (no contention, no waiting), so the count per message is the same on every run and machine
 * load does not change it. Times on a shared machine vary; instruction counts do not.
 *
 *   mq_instr_cycle [handle-]single|batch|headers|ackpoll|copy|parked N
 *
 * single: publish one, poll one, ack it; batch: 64 at a time; headers: single with two
 * headers; ackpoll: single, but each ack travels with the next poll (mq_group_ack_poll, 1.1);
 * copy: batch, polled with the copying poll (mq_group_poll_copy, 1.3) into one 16 KiB buffer;
 * parked: single, while an asynchronous poll (1.4) of another topic is pending all along (what
 * the cycle pays for a parked call elsewhere on the broker). With the prefix handle- each mode
 * runs its calls on a publisher and a cursor (1.7) instead of by name.
 * Run it twice under callgrind with two message counts, and the difference of the
 * totals over the difference of the counts is the cost per message, start-up excluded:
 *
 *   for n in 20480 40960; do
 *     valgrind --tool=callgrind --callgrind-out-file=/dev/null build/bench/mq_instr_cycle single $n
 *   done   # (Collected(40960) - Collected(20480)) / 20480 instructions per message
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mq.h"

static void must(mq_status st, const char *what) {
    if (st != MQ_OK) {
        fprintf(stderr, "%s: %s (%s)\n", what, mq_status_name(st), mq_last_error());
        exit(1);
    }
}

static void idle_done(void *user, mq_status st) { /* at mq_broker_free: MQ_CLOSED */
    (void)user;
    (void)st;
}

/* The calls of the cycle, by name or on the handles (h.p set). */
typedef struct {
    mq_broker *b;
    mq_publisher *p;
    mq_cursor *c;
} calls;

static mq_status publish(const calls *h, const void *payload, size_t len, const mq_header *hdrs,
                         size_t hcount) {
    if (h->p)
        return mq_publisher_publish(h->p, NULL, 0, payload, len, hdrs, hcount, MQ_NO_WAIT, NULL,
                                    NULL, NULL);
    return mq_topic_publish(h->b, "t", NULL, 0, payload, len, hdrs, hcount, MQ_NO_WAIT, NULL, NULL,
                            NULL);
}
static mq_status publish_batch(const calls *h, const mq_record *recs, size_t n, size_t *published) {
    if (h->p)
        return mq_publisher_publish_batch(h->p, recs, sizeof(mq_record), n, MQ_NO_WAIT, NULL, NULL,
                                          sizeof(mq_publish_result), published);
    return mq_topic_publish_batch(h->b, "t", recs, sizeof(mq_record), n, MQ_NO_WAIT, NULL, NULL,
                                  sizeof(mq_publish_result), published);
}
static mq_status poll(const calls *h, mq_message *msgs, size_t max, size_t *got) {
    if (h->c) return mq_cursor_poll(h->c, msgs, sizeof(mq_message), max, MQ_NO_WAIT, NULL, got);
    return mq_group_poll(h->b, "t", "g", 0, msgs, sizeof(mq_message), max, MQ_NO_WAIT, NULL, got);
}
static mq_status ack_poll(const calls *h, int64_t offset, mq_message *msgs, size_t *got) {
    if (h->c)
        return mq_cursor_ack_poll(h->c, offset, msgs, sizeof(mq_message), 1, MQ_NO_WAIT, NULL, got);
    return mq_group_ack_poll(h->b, "t", "g", 0, offset, msgs, sizeof(mq_message), 1, MQ_NO_WAIT,
                             NULL, got);
}
static mq_status poll_copy(const calls *h, void *buf, size_t cap, size_t *got) {
    if (h->c) return mq_cursor_poll_copy(h->c, buf, cap, 64, MQ_NO_WAIT, NULL, got, NULL);
    return mq_group_poll_copy(h->b, "t", "g", 0, buf, cap, 64, MQ_NO_WAIT, NULL, got, NULL);
}
static mq_status ack(const calls *h, int64_t offset) {
    if (h->c) return mq_cursor_ack(h->c, offset);
    return mq_group_ack(h->b, "t", "g", 0, offset);
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s [handle-]single|batch|headers|ackpoll|copy|parked N\n", argv[0]);
        return 2;
    }
    const char *mode = argv[1];
    const int handles = strncmp(mode, "handle-", 7) == 0;
    if (handles) mode += 7;
    const long n = atol(argv[2]);
    mq_broker *b;
    must(mq_broker_new(NULL, &b), "broker");
    mq_topic_config cfg;
    mq_topic_config_init(&cfg, sizeof cfg);
    cfg.capacity = 1024;
    must(mq_topic_create(b, "t", &cfg), "topic");
    must(mq_group_subscribe(b, "t", "g", NULL), "subscribe");
    calls h = {b, NULL, NULL};
    if (handles) {
        must(mq_publisher_open(b, "t", &h.p), "mq_publisher_open");
        must(mq_cursor_open(b, "t", "g", 0, &h.c), "mq_cursor_open");
    }
    unsigned char payload[64];
    memset(payload, 'p', sizeof payload);
    const mq_header hdrs[2] = {{"trace", 5, "0123456789abcdef", 16}, {"type", 4, "json", 4}};
    const int copy = strcmp(mode, "copy") == 0;
    const int batch = copy || strcmp(mode, "batch") == 0;
    static uint64_t buf[2048]; /* 16 KiB, 8-byte aligned: 64 entries and their bytes fit */
    int64_t last = -1;
    const int ackpoll = strcmp(mode, "ackpoll") == 0;
    mq_message idle_msg;
    size_t idle_count = 0;
    if (strcmp(mode, "parked") == 0) {
        must(mq_topic_create(b, "idle", &cfg), "topic idle");
        must(mq_group_subscribe(b, "idle", "g", NULL), "subscribe idle");
        if (mq_group_poll_async(b, "idle", "g", 0, &idle_msg, sizeof idle_msg, 1, MQ_WAIT_FOREVER,
                                NULL, &idle_count, &idle_done, NULL) != MQ_PENDING)
            return 1;
    }
    int64_t unacked = -1; /* ackpoll: the offset the next poll acks */
    const size_t hcount = strcmp(mode, "headers") == 0 ? 2 : 0;
    mq_record recs[64];
    mq_message msgs[64];
    for (int i = 0; i < 64; i++)
        recs[i] = (mq_record){.payload = payload,
                              .payload_len = sizeof payload,
                              .headers = hcount ? hdrs : NULL,
                              .header_count = hcount};
    for (long done = 0; done < n;) {
        size_t got = 0;
        if (batch) {
            size_t published = 0;
            must(publish_batch(&h, recs, 64, &published), "publish_batch");
            if (copy) {
                must(poll_copy(&h, buf, sizeof buf, &got), "poll_copy");
                if (got == 0) return 1;
                mq_copied_message e;
                memcpy(&e,
                       (const char *)buf + sizeof(mq_copy_header) +
                           (got - 1) * sizeof(mq_copied_message),
                       sizeof e);
                last = e.offset;
                must(ack(&h, last), "ack");
                done += (long)got;
                continue;
            }
            must(poll(&h, msgs, 64, &got), "poll");
        } else if (ackpoll) {
            must(publish(&h, payload, sizeof payload, NULL, 0), "publish");
            if (unacked < 0) {
                must(poll(&h, msgs, 1, &got), "poll");
            } else {
                must(ack_poll(&h, unacked, msgs, &got), "ack_poll");
            }
            if (got == 0) return 1;
            unacked = msgs[0].offset;
            done += 1;
            continue;
        } else {
            must(publish(&h, payload, sizeof payload, hcount ? hdrs : NULL, hcount), "publish");
            must(poll(&h, msgs, 1, &got), "poll");
        }
        if (got == 0) return 1;
        must(ack(&h, msgs[got - 1].offset), "ack");
        done += (long)got;
    }
    mq_cursor_close(h.c);
    mq_publisher_close(h.p);
    mq_broker_free(b);
    return 0;
}
