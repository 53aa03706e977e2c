/* Asynchronous calls at scale (docs/BENCHMARKS.md, "Asynchronous calls"): N pending polls across
 * N partitions, one publish each. Prints the process's threads and resident memory before and
 * with the calls pending (memory per pending call), and the wake-up latency of an asynchronous
 * poll (publish -> its callback) beside a blocking poll's (publish -> the poll's return) in the
 * same run, as p50 and p99 over --rounds single wake-ups.
 *   mq_bench_async_pending [--calls N] [--rounds R] */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
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

/* "Threads:" and "VmRSS:" of /proc/self/status (kB for the latter). */
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

typedef struct {
    atomic_int done;
    atomic_llong at_ns;
    mq_message msg;
    size_t n;
} Pending;

static void on_done(void *user, mq_status st) {
    Pending *p = user;
    atomic_store(&p->at_ns, now_ns());
    atomic_store(&p->done, st == MQ_OK ? 1 : -1);
}

static int cmp64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

typedef struct {
    mq_broker *b;
    atomic_int polling;  /* the round whose poll is under way */
    atomic_int finished; /* the last round whose message arrived */
    atomic_llong at_ns;
    int rounds;
} Blocking;

static void *blocking_poller(void *arg) {
    Blocking *bl = arg;
    for (int i = 0; i < bl->rounds; i++) {
        mq_message m;
        size_t n = 0;
        atomic_store(&bl->polling, i + 1);
        check(mq_group_poll(bl->b, "lat", "g", 0, &m, sizeof m, 1, MQ_WAIT_FOREVER, NULL, &n),
              "blocking poll");
        atomic_store(&bl->at_ns, now_ns());
        check(mq_group_ack(bl->b, "lat", "g", 0, m.offset), "ack");
        atomic_store(&bl->finished, i + 1);
    }
    return NULL;
}

int main(int argc, char **argv) {
    int calls = 10000, rounds = 2000;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--calls")) calls = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--rounds")) rounds = atoi(argv[i + 1]);
    }
    if (calls < 1 || calls > 65536 || rounds < 10) {
        fprintf(stderr, "usage: %s [--calls 1..65536] [--rounds >= 10]\n", argv[0]);
        return 2;
    }
    mq_broker *b;
    check(mq_broker_new(NULL, &b), "broker");
    mq_topic_config c;
    mq_topic_config_init(&c, sizeof c);
    c.partitions = calls;
    c.capacity = 4;
    check(mq_topic_create(b, "wide", &c), "topic");
    check(mq_group_subscribe(b, "wide", "g", NULL), "subscribe");
    Pending *p = calloc((size_t)calls, sizeof *p);
    /* One call first, so that the completer thread exists when the baseline is read. */
    if (mq_group_poll_async(b, "wide", "g", 0, &p[0].msg, sizeof p[0].msg, 1, MQ_WAIT_FOREVER, NULL,
                            &p[0].n, on_done, &p[0]) != MQ_PENDING) {
        fprintf(stderr, "the first poll did not pend: %s\n", mq_last_error());
        return 1;
    }
    const long threads0 = status_field("Threads:"), rss0 = status_field("VmRSS:");
    for (int i = 1; i < calls; i++) {
        if (mq_group_poll_async(b, "wide", "g", i, &p[i].msg, sizeof p[i].msg, 1, MQ_WAIT_FOREVER,
                                NULL, &p[i].n, on_done, &p[i]) != MQ_PENDING) {
            fprintf(stderr, "poll %d did not pend: %s\n", i, mq_last_error());
            return 1;
        }
    }
    const long threads1 = status_field("Threads:"), rss1 = status_field("VmRSS:");
    const int64_t t0 = now_ns();
    for (int i = 0; i < calls; i++) {
        /* Round-robin (no key): publish i goes to partition i. */
        check(mq_topic_publish(b, "wide", NULL, 0, "x", 1, NULL, 0, 0, NULL, NULL, NULL),
              "publish");
    }
    for (int i = 0; i < calls; i++) {
        while (!atomic_load(&p[i].done)) sched_yield();
        if (atomic_load(&p[i].done) != 1 || p[i].msg.partition != i) {
            fprintf(stderr, "call %d completed wrong\n", i);
            return 1;
        }
    }
    const int64_t all_ns = now_ns() - t0;
    printf("pending async polls: %d across %d partitions\n", calls, calls);
    printf("  threads: %ld with 1 pending, %ld with %d pending\n", threads0, threads1, calls);
    printf("  memory: %.0f bytes per pending call (VmRSS %ld -> %ld kB)\n",
           (double)(rss1 - rss0) * 1024.0 / (calls - 1), rss0, rss1);
    printf("  %d publishes completing them: %.1f ms (%.2f us per call)\n", calls, all_ns / 1e6,
           all_ns / 1e3 / calls);

    /* Wake-up latency, one waiter at a time: blocking, then asynchronous. */
    mq_topic_config_init(&c, sizeof c);
    check(mq_topic_create(b, "lat", &c), "topic lat");
    check(mq_group_subscribe(b, "lat", "g", NULL), "subscribe lat");
    int64_t *blk = calloc((size_t)rounds, sizeof *blk), *asy = calloc((size_t)rounds, sizeof *asy);
    Blocking bl = {.b = b, .rounds = rounds};
    pthread_t th;
    pthread_create(&th, NULL, blocking_poller, &bl);
    for (int i = 0; i < rounds; i++) {
        while (atomic_load(&bl.polling) != i + 1) sched_yield();
        /* Let it get to sleep: the figure is a sleeping poller's wake-up. */
        struct timespec pause = {0, 200000};
        nanosleep(&pause, NULL);
        const int64_t sent = now_ns();
        check(mq_topic_publish(b, "lat", NULL, 0, "x", 1, NULL, 0, 0, NULL, NULL, NULL), "pub");
        while (atomic_load(&bl.finished) != i + 1) sched_yield();
        blk[i] = atomic_load(&bl.at_ns) - sent;
    }
    pthread_join(th, NULL);
    for (int i = 0; i < rounds; i++) {
        Pending one;
        memset(&one, 0, sizeof one);
        mq_status st = mq_group_poll_async(b, "lat", "g", 0, &one.msg, sizeof one.msg, 1,
                                           MQ_WAIT_FOREVER, NULL, &one.n, on_done, &one);
        if (st != MQ_PENDING) {
            fprintf(stderr, "latency poll did not pend: %s\n", mq_status_name(st));
            return 1;
        }
        struct timespec pause = {0, 200000};
        nanosleep(&pause, NULL);
        const int64_t sent = now_ns();
        check(mq_topic_publish(b, "lat", NULL, 0, "x", 1, NULL, 0, 0, NULL, NULL, NULL), "pub");
        while (!atomic_load(&one.done)) sched_yield();
        asy[i] = atomic_load(&one.at_ns) - sent;
        check(mq_group_ack(b, "lat", "g", 0, one.msg.offset), "ack");
    }
    qsort(blk, (size_t)rounds, sizeof *blk, cmp64);
    qsort(asy, (size_t)rounds, sizeof *asy, cmp64);
    const int64_t bp50 = blk[rounds / 2], bp99 = blk[rounds * 99 / 100];
    const int64_t ap50 = asy[rounds / 2], ap99 = asy[rounds * 99 / 100];
    printf("wake-up, publish -> consumer (%d rounds each):\n", rounds);
    printf("  blocking poll       p50 %6.1f us  p99 %7.1f us\n", bp50 / 1e3, bp99 / 1e3);
    printf("  asynchronous poll   p50 %6.1f us  p99 %7.1f us\n", ap50 / 1e3, ap99 / 1e3);
    printf("  async / blocking    p50 %.2fx (goal <= 2x)\n", (double)ap50 / (double)bp50);
    mq_broker_free(b);
    free(p);
    free(blk);
    free(asy);
    return 0;
}
