/* Delayed delivery (docs/BENCHMARKS.md, "Delayed delivery"; SPEC rule 15).
 *
 * 1. Memory: N pending delayed messages beside N plain ones in the same run (one topic each,
 *    one group, the same 16-byte payloads), as resident bytes per message; the difference is
 *    what a delay costs beyond the message. Threads are counted too: no thread per message.
 * 2. Lateness: a consumer in a blocking poll (wait forever) on a partition whose messages come
 *    due one by one (delays 20 ms apart, or --gap-us); for each, the time from its deliver-at
 *    (publish timestamp + delay) to the poll's return, as p50, p99 and max.
 *   mq_bench_delayed [--messages N] [--due R] [--gap-us G] */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mq.h"

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static long status_field(const char *name) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long v = -1;
    size_t n = strlen(name);
    while (f && fgets(line, sizeof line, f)) {
        if (strncmp(line, name, n) == 0) v = strtol(line + n, NULL, 10);
    }
    if (f) fclose(f);
    return v;
}

static void check(mq_status st, const char *what) {
    if (st != MQ_OK) {
        fprintf(stderr, "%s: %s: %s\n", what, mq_status_name(st), mq_last_error());
        exit(1);
    }
}

static int cmp64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Publishes n records of a 16-byte payload to `topic` in batches of 256, each with `delay_ms`,
 * and returns the resident kB it added. */
static long fill(mq_broker *b, const char *topic, long n, int64_t delay_ms) {
    char payload[16];
    memset(payload, 'x', sizeof payload);
    mq_record recs[256];
    memset(recs, 0, sizeof recs);
    for (int i = 0; i < 256; i++) {
        recs[i].payload = payload;
        recs[i].payload_len = sizeof payload;
        recs[i].delay_ms = delay_ms;
    }
    const long before = status_field("VmRSS:");
    for (long done = 0; done < n;) {
        size_t k = (size_t)(n - done < 256 ? n - done : 256);
        size_t published = 0;
        check(mq_topic_publish_batch(b, topic, recs, sizeof recs[0], k, MQ_NO_WAIT, NULL, NULL,
                                     sizeof(mq_publish_result), &published),
              "publish");
        done += (long)published;
    }
    return status_field("VmRSS:") - before;
}

int main(int argc, char **argv) {
    long messages = 1000000, due = 500;
    int64_t gap_us = 20000;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--messages") == 0) messages = atol(argv[i + 1]);
        if (strcmp(argv[i], "--due") == 0) due = atol(argv[i + 1]);
        if (strcmp(argv[i], "--gap-us") == 0) gap_us = atoll(argv[i + 1]);
    }
    if (messages < 1 || due < 2 || gap_us < 1000) {
        fprintf(stderr, "usage: mq_bench_delayed [--messages N] [--due R>=2] [--gap-us G>=1000]\n");
        return 2;
    }
    mq_broker *b = NULL;
    check(mq_broker_new(NULL, &b), "broker");
    mq_topic_config c;
    mq_topic_config_init(&c, sizeof c);
    c.partitions = 1;
    c.capacity = messages + 1;
    check(mq_topic_create(b, "plain", &c), "topic");
    check(mq_topic_create(b, "delayed", &c), "topic");
    check(mq_group_subscribe(b, "plain", "g", NULL), "subscribe");
    check(mq_group_subscribe(b, "delayed", "g", NULL), "subscribe");
    const long threads_before = status_field("Threads:");
    const long plain_kb = fill(b, "plain", messages, 0);
    const long delayed_kb = fill(b, "delayed", messages, 3600 * 1000); /* due in an hour */
    const long threads_after = status_field("Threads:");
    mq_message m;
    size_t n = 0;
    if (mq_group_poll(b, "delayed", "g", 0, &m, sizeof m, 1, MQ_NO_WAIT, NULL, &n) != MQ_TIMEOUT) {
        fprintf(stderr, "a delayed message was handed out early\n");
        return 1;
    }
    printf(
        "memory: %ld messages of 16 bytes: plain %.1f B/message, delayed %.1f B/message, "
        "a delay costs %.1f B/message; threads %ld -> %ld\n",
        messages, plain_kb * 1024.0 / messages, delayed_kb * 1024.0 / messages,
        (delayed_kb - plain_kb) * 1024.0 / messages, threads_before, threads_after);
    check(mq_topic_delete(b, "plain"), "delete");
    check(mq_topic_delete(b, "delayed"), "delete");

    /* Lateness: one message due every gap_us, published at once, polled by one blocking poll. */
    c.capacity = due + 1;
    check(mq_topic_create(b, "due", &c), "topic");
    check(mq_group_subscribe(b, "due", "g", NULL), "subscribe");
    mq_record *recs = calloc((size_t)due, sizeof *recs);
    int64_t *late = calloc((size_t)due, sizeof *late);
    if (!recs || !late) return 1;
    for (long i = 0; i < due; i++) {
        recs[i].payload = "d";
        recs[i].payload_len = 1;
        recs[i].delay_ms = 10 + i * gap_us / 1000;
    }
    size_t published = 0;
    check(mq_topic_publish_batch(b, "due", recs, sizeof *recs, (size_t)due, MQ_NO_WAIT, NULL, NULL,
                                 sizeof(mq_publish_result), &published),
          "publish");
    for (long i = 0; i < due; i++) {
        check(mq_group_poll(b, "due", "g", 0, &m, sizeof m, 1, MQ_WAIT_FOREVER, NULL, &n), "poll");
        const int64_t t = now_ns();
        const int64_t at = m.timestamp_ns + recs[m.offset].delay_ms * 1000000;
        if (t < at) {
            fprintf(stderr, "offset %lld handed out %lld ns early\n", (long long)m.offset,
                    (long long)(at - t));
            return 1;
        }
        late[i] = t - at;
        check(mq_group_ack(b, "due", "g", 0, m.offset), "ack");
    }
    qsort(late, (size_t)due, sizeof *late, cmp64);
    printf(
        "lateness: %ld messages due %lld us apart, blocking poll: p50 %.1f us, p99 %.1f us, "
        "max %.1f us\n",
        due, (long long)gap_us, late[due / 2] / 1e3, late[due * 99 / 100] / 1e3,
        late[due - 1] / 1e3);
    free(recs);
    free(late);
    mq_broker_free(b);
    return 0;
}
