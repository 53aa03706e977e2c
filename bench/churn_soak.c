/* Churn soak (docs/RELIABILITY.md; not part of CI): what a long-lived service does all day, with
 * traffic flowing, sampling the process's resident memory. After warm-up the RSS must stay flat:
 * groups, snapshots and topics that go must be reclaimed (mq.h, "Churn does not grow memory").
 *
 *   mq_churn_soak [--cycles N] [--samples S] [--csv FILE]   default 1,000,000 cycles, 200 samples
 *
 * One cycle is one of each: a group subscribe/unsubscribe, a member join/leave, a push
 * subscription open/close and a topic create/delete (the topic gets a group and a message
 * first), all on the churning thread. Meanwhile one publisher and one consumer per partition keep
 * messages flowing through a steady 4-partition topic, and two idle consumers sit in forever polls
 * on a topic nobody publishes to (a server's idle clients: asleep, they must hold back no
 * reclamation; the broker's close ends them). Group names cycle through 64 values and
 * topic names through 1,000,000, so the topic table also fills with deleted names. Prints "OK"
 * and exits 0 when every call succeeded and the RSS after warm-up (the first 10% of the cycles)
 * grew by less than 8 MiB; writes "cycles rss_kib" lines to the CSV file. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mq.h"

#define PARTITIONS 4

static mq_broker *broker;
static atomic_int stop;
static atomic_llong flowed;

static long rss_kib(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    long pages = 0, resident = 0;
    if (!f) return -1;
    if (fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = -1;
    fclose(f);
    return resident * 4;
}

static void check(mq_status st, const char *what) {
    if (st != MQ_OK) {
        fprintf(stderr, "churn soak: %s failed: %s (%s)\n", what, mq_status_name(st),
                mq_last_error());
        exit(1);
    }
}

static void *publisher(void *arg) {
    (void)arg;
    char payload[48] = "steady traffic.................................";
    while (!atomic_load(&stop)) {
        mq_status st = mq_topic_publish(broker, "steady", NULL, 0, payload, sizeof payload, NULL, 0,
                                        10, NULL, NULL, NULL);
        if (st != MQ_OK && st != MQ_FULL) check(st, "steady publish");
    }
    return NULL;
}

static void *consumer(void *arg) {
    const int32_t p = (int32_t)(intptr_t)arg;
    mq_message m[64];
    while (!atomic_load(&stop)) {
        size_t n = 0;
        mq_status st =
            mq_group_poll(broker, "steady", "reader", p, m, sizeof m[0], 64, 10, NULL, &n);
        if (st == MQ_TIMEOUT) continue;
        check(st, "steady poll");
        check(mq_group_ack(broker, "steady", "reader", p, m[n - 1].offset), "steady ack");
        atomic_fetch_add(&flowed, (long long)n);
    }
    return NULL;
}

#define IDLE 2

static void *idle_consumer(void *arg) {
    (void)arg;
    mq_message m[1];
    size_t n = 0;
    const mq_status st =
        mq_group_poll(broker, "idle", "idle", 0, m, sizeof m[0], 1, MQ_WAIT_FOREVER, NULL, &n);
    if (st != MQ_CLOSED) check(st, "idle poll (only the close may end it)");
    return NULL;
}

static int ack_handler(void *user, const mq_message *msg) {
    (void)user;
    (void)msg;
    return 0;
}

static void cycle(long long i) {
    char group[32], topic[32];
    snprintf(group, sizeof group, "g%lld", i % 64);
    check(mq_group_subscribe(broker, "churn", group, NULL), "subscribe");
    check(mq_group_unsubscribe(broker, "churn", group), "unsubscribe");

    mq_member *m = NULL;
    check(mq_member_join(broker, "churn", "members", NULL, &m), "member join");
    check(mq_member_close(m), "member close");
    check(mq_group_unsubscribe(broker, "churn", "members"), "members unsubscribe");

    mq_subscription *s = NULL;
    check(mq_subscription_open(broker, "churn", "push", NULL, ack_handler, NULL, NULL, &s),
          "subscription open");
    check(mq_subscription_close(s), "subscription close");
    check(mq_group_unsubscribe(broker, "churn", "push"), "push unsubscribe");

    snprintf(topic, sizeof topic, "t%lld", i % 1000000);
    mq_topic_config c;
    mq_topic_config_init(&c, sizeof c);
    c.partitions = 2;
    c.capacity = 16;
    check(mq_topic_create(broker, topic, &c), "topic create");
    check(mq_group_subscribe(broker, topic, "g", NULL), "subscribe on the new topic");
    check(mq_topic_publish(broker, topic, NULL, 0, "m", 1, NULL, 0, 0, NULL, NULL, NULL),
          "publish on the new topic");
    check(mq_topic_delete(broker, topic), "topic delete");
}

int main(int argc, char **argv) {
    long long cycles = 1000000;
    int samples = 200;
    const char *csv = "churn_rss.csv";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--cycles") && i + 1 < argc) cycles = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--samples") && i + 1 < argc) samples = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--csv") && i + 1 < argc) csv = argv[++i];
        else {
            fprintf(stderr, "usage: %s [--cycles N] [--samples S] [--csv FILE]\n", argv[0]);
            return 2;
        }
    }
    if (cycles < 10 || samples < 1) {
        fprintf(stderr, "churn soak: --cycles must be at least 10 and --samples at least 1\n");
        return 2;
    }
    FILE *out = fopen(csv, "w");
    if (!out) {
        perror(csv);
        return 2;
    }
    check(mq_broker_new(NULL, &broker), "broker");
    mq_topic_config c;
    mq_topic_config_init(&c, sizeof c);
    c.partitions = PARTITIONS;
    c.capacity = 4096;
    check(mq_topic_create(broker, "steady", &c), "steady topic");
    check(mq_group_subscribe(broker, "steady", "reader", NULL), "steady group");
    check(mq_topic_create(broker, "churn", NULL), "churn topic");
    check(mq_topic_create(broker, "idle", NULL), "idle topic");
    check(mq_group_subscribe(broker, "idle", "idle", NULL), "idle group");

    pthread_t pub, cons[PARTITIONS], idle[IDLE];
    for (int i = 0; i < IDLE; i++) pthread_create(&idle[i], NULL, idle_consumer, NULL);
    pthread_create(&pub, NULL, publisher, NULL);
    for (int p = 0; p < PARTITIONS; p++)
        pthread_create(&cons[p], NULL, consumer, (void *)(intptr_t)p);

    const long long step = cycles / samples > 0 ? cycles / samples : 1, warm = cycles / 10;
    long rss_warm = -1, rss_max_after = 0, rss_end = 0;
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (long long i = 0; i < cycles; i++) {
        cycle(i);
        if (i % step == 0 || i == cycles - 1) {
            const long rss = rss_kib();
            fprintf(out, "%lld %ld\n", i + 1, rss);
            fflush(out);
            if (i >= warm) {
                if (rss_warm < 0) rss_warm = rss;
                if (rss > rss_max_after) rss_max_after = rss;
            }
            rss_end = rss;
        }
    }
    atomic_store(&stop, 1);
    pthread_join(pub, NULL);
    for (int p = 0; p < PARTITIONS; p++) pthread_join(cons[p], NULL);
    clock_gettime(CLOCK_MONOTONIC, &now);
    fclose(out);
    check(mq_broker_close(broker), "close");
    for (int i = 0; i < IDLE; i++) pthread_join(idle[i], NULL);
    mq_broker_free(broker);
    const double secs =
        (double)(now.tv_sec - start.tv_sec) + (double)(now.tv_nsec - start.tv_nsec) / 1e9;
    const long growth = rss_max_after - rss_warm;
    printf(
        "churn soak: %lld cycles in %.1f s (%.0f cycles/s), %lld messages flowed; RSS at warm-up "
        "%ld KiB, at the end %ld KiB, max after warm-up %ld KiB (growth %ld KiB)\n",
        cycles, secs, (double)cycles / secs, atomic_load(&flowed), rss_warm, rss_end, rss_max_after,
        growth);
    const int ok = growth < 8 * 1024;
    printf("churn soak: %s\n", ok ? "OK" : "FAILED");
    return ok ? 0 : 1;
}
