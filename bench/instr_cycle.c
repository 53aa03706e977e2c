/* Instruction counts of mq's hot paths, for callgrind: one thread publishes, polls and acks
 * (no contention, no waiting), so the count per message is the same on every run and machine
 * load does not change it. Times on a shared machine vary; instruction counts do not.
 *
 *   mq_instr_cycle single|batch|headers|ackpoll|copy|parked N
 *
 * single: publish one, poll one, ack it; batch: 64 at a time; headers: single with two
 * headers; ackpoll: single, but each ack travels with the next poll (mq_group_ack_poll, 1.1);
 * copy: batch, polled with the copying poll (mq_group_poll_copy, 1.3) into one 16 KiB buffer;
 * parked: single, while an asynchronous poll (1.4) of another topic is pending all along (what
 * the cycle pays for a parked call elsewhere on the broker).
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

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s single|batch|headers|ackpoll|copy|parked N\n", argv[0]);
        return 2;
    }
    const char *mode = argv[1];
    const long n = atol(argv[2]);
    mq_broker *b;
    must(mq_broker_new(NULL, &b), "broker");
    mq_topic_config cfg;
    mq_topic_config_init(&cfg, sizeof cfg);
    cfg.capacity = 1024;
    must(mq_topic_create(b, "t", &cfg), "topic");
    must(mq_group_subscribe(b, "t", "g", NULL), "subscribe");
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
            must(mq_topic_publish_batch(b, "t", recs, sizeof(mq_record), 64, MQ_NO_WAIT, NULL, NULL,
                                        sizeof(mq_publish_result), &published),
                 "mq_topic_publish_batch");
            if (copy) {
                must(mq_group_poll_copy(b, "t", "g", 0, buf, sizeof buf, 64, MQ_NO_WAIT, NULL, &got,
                                        NULL),
                     "mq_group_poll_copy");
                if (got == 0) return 1;
                mq_copied_message e;
                memcpy(&e,
                       (const char *)buf + sizeof(mq_copy_header) +
                           (got - 1) * sizeof(mq_copied_message),
                       sizeof e);
                last = e.offset;
                must(mq_group_ack(b, "t", "g", 0, last), "mq_group_ack");
                done += (long)got;
                continue;
            }
            must(
                mq_group_poll(b, "t", "g", 0, msgs, sizeof(mq_message), 64, MQ_NO_WAIT, NULL, &got),
                "mq_group_poll");
        } else if (ackpoll) {
            must(mq_topic_publish(b, "t", NULL, 0, payload, sizeof payload, NULL, 0, MQ_NO_WAIT,
                                  NULL, NULL, NULL),
                 "mq_topic_publish");
            if (unacked < 0) {
                must(mq_group_poll(b, "t", "g", 0, msgs, sizeof(mq_message), 1, MQ_NO_WAIT, NULL,
                                   &got),
                     "mq_group_poll");
            } else {
                must(mq_group_ack_poll(b, "t", "g", 0, unacked, msgs, sizeof(mq_message), 1,
                                       MQ_NO_WAIT, NULL, &got),
                     "mq_group_ack_poll");
            }
            if (got == 0) return 1;
            unacked = msgs[0].offset;
            done += 1;
            continue;
        } else {
            must(mq_topic_publish(b, "t", NULL, 0, payload, sizeof payload, hcount ? hdrs : NULL,
                                  hcount, MQ_NO_WAIT, NULL, NULL, NULL),
                 "mq_topic_publish");
            must(mq_group_poll(b, "t", "g", 0, msgs, sizeof(mq_message), 1, MQ_NO_WAIT, NULL, &got),
                 "mq_group_poll");
        }
        if (got == 0) return 1;
        must(mq_group_ack(b, "t", "g", 0, msgs[got - 1].offset), "mq_group_ack");
        done += (long)got;
    }
    mq_broker_free(b);
    return 0;
}
