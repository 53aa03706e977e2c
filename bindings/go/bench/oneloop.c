/* The C side of the Go binding's one-goroutine benchmarks (mq/bench_test.go): the same loops
 * through the C API, in one thread, printed in Go's benchmark format with the process's CPU
 * time per message. bench.sh builds it against the static library.
 *
 *   oneloop single|batch|singleackpoll|batchackpoll N GOMAXPROCS
 *
 * The *ackpoll modes make each ack travel with the next poll (mq_cursor_ack_poll), as the
 * Go benchmarks *AckPollOneGoroutine do with AckPollBatch. Both go through a publisher and a
 * cursor (1.7), as the Go benchmarks do. */
#define _POSIX_C_SOURCE 200809L
#include <mq.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

enum { PAYLOAD = 64, BATCH = 64, CAPACITY = 1024 };

static double cpu_ns(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e9 +
           (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e3;
}

static double wall_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static void must(mq_status s, const char *what) {
    if (s == MQ_OK) return;
    fprintf(stderr, "oneloop: %s: %s: %s\n", what, mq_status_name(s), mq_last_error());
    exit(1);
}

static void check(const void *payload, size_t len, uint64_t want) {
    uint64_t got;
    memcpy(&got, payload, sizeof got);
    if (len != PAYLOAD || got != want) {
        fprintf(stderr, "oneloop: message %llu is wrong\n", (unsigned long long)want);
        exit(1);
    }
}

int main(int argc, char **argv) {
    const char *mode = argc == 4 ? argv[1] : "";
    const int batch = strncmp(mode, "batch", 5) == 0;
    const int ackpoll = strstr(mode, "ackpoll") != NULL;
    if (argc != 4 || (strcmp(mode, "single") && strcmp(mode, "batch") &&
                      strcmp(mode, "singleackpoll") && strcmp(mode, "batchackpoll"))) {
        fprintf(stderr, "usage: oneloop single|batch|singleackpoll|batchackpoll N GOMAXPROCS\n");
        return 2;
    }
    const uint64_t n = strtoull(argv[2], NULL, 10);
    mq_broker *b;
    must(mq_broker_new(NULL, &b), "mq_broker_new");
    mq_topic_config c;
    mq_topic_config_init(&c, sizeof c);
    c.capacity = CAPACITY;
    must(mq_topic_create(b, "bench", &c), "mq_topic_create");
    must(mq_group_subscribe(b, "bench", "g", NULL), "mq_group_subscribe");
    mq_publisher *p;
    mq_cursor *cur;
    must(mq_publisher_open(b, "bench", &p), "mq_publisher_open");
    must(mq_cursor_open(b, "bench", "g", 0, &cur), "mq_cursor_open");
    static char msgs[BATCH][PAYLOAD], copies[BATCH][PAYLOAD];
    mq_record recs[BATCH];
    mq_message views[BATCH];
    int64_t unacked = -1; /* the ack the next poll carries (ackpoll modes) */
    double cpu0 = cpu_ns(), wall0 = wall_ns();
    for (uint64_t seq = 0; seq < n;) {
        size_t k = 0, got = 0, published = 0;
        for (; k < (batch ? BATCH : 1) && seq < n; k++, seq++) {
            memcpy(msgs[k], &seq, sizeof seq);
            recs[k] = (mq_record){.payload = msgs[k], .payload_len = PAYLOAD};
        }
        if (batch)
            must(mq_publisher_publish_batch(p, recs, sizeof recs[0], k, MQ_WAIT_FOREVER, NULL, NULL,
                                            sizeof(mq_publish_result), &published),
                 "mq_publisher_publish_batch");
        else
            must(mq_publisher_publish(p, NULL, 0, msgs[0], PAYLOAD, NULL, 0, MQ_WAIT_FOREVER, NULL,
                                      NULL, NULL),
                 "mq_publisher_publish");
        if (ackpoll && unacked >= 0)
            must(mq_cursor_ack_poll(cur, unacked, views, sizeof views[0], k, MQ_WAIT_FOREVER, NULL,
                                    &got),
                 "mq_cursor_ack_poll");
        else
            must(mq_cursor_poll(cur, views, sizeof views[0], k, MQ_WAIT_FOREVER, NULL, &got),
                 "mq_cursor_poll");
        for (size_t i = 0; i < got; i++) {
            /* the Go binding copies what it hands out; so does this loop */
            memcpy(copies[i], views[i].payload, views[i].payload_len);
            check(copies[i], views[i].payload_len, seq - k + i);
        }
        if (ackpoll) unacked = views[got - 1].offset;
        else must(mq_cursor_ack(cur, views[got - 1].offset), "mq_cursor_ack");
    }
    double wall = wall_ns() - wall0, cpu = cpu_ns() - cpu0;
    mq_cursor_close(cur);
    mq_publisher_close(p);
    mq_broker_free(b);
    printf("Benchmark%s%sOneGoroutine-%s\t%llu\t%.2f ns/op\t%.2f cpu-ns/op\n",
           batch ? "Batch64" : "Single", ackpoll ? "AckPoll" : "", argv[3], (unsigned long long)n,
           wall / (double)n, cpu / (double)n);
    return 0;
}
