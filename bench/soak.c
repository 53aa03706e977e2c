/* Soak (docs/RELIABILITY.md; not part of CI): pushes many messages through a 4-partition topic
 * with 2 groups and samples the process's resident memory as it goes. After warm-up the RSS must
 * stay flat: a leak of even a few bytes per message shows up over 10^8 messages.
 *
 *   mq_soak [--messages N] [--samples S] [--csv FILE]   default 100,000,000 messages, 200 samples
 *
 * One publisher thread per partition (keyless round-robin would serialise them), one consumer
 * thread per group and partition polling up to 256 and acking the last. Prints "OK" and exits 0
 * when every group received every message in order and the RSS after warm-up (the first 10% of
 * the messages) grew by less than 8 MiB; writes "messages rss_kib" lines to the CSV file. */
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
#define GROUPS 2

static mq_broker *broker;
static long long per_partition;
static _Atomic long long consumed[GROUPS][PARTITIONS];
static _Atomic int order_errors;

static long rss_kib(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    long pages = 0, resident = 0;
    if (!f) return -1;
    if (fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = -1;
    fclose(f);
    return resident * 4;
}

static void *publisher(void *arg) {
    const int32_t p = (int32_t)(intptr_t)arg;
    char key[16], payload[64];
    /* A key of this partition, found once. */
    for (int k = 0;; k++) {
        int32_t kp;
        snprintf(key, sizeof key, "key-%d", k);
        mq_key_partition(key, strlen(key), PARTITIONS, &kp);
        if (kp == p) break;
    }
    for (long long i = 0; i < per_partition; i++) {
        int n =
            snprintf(payload, sizeof payload, "%lld........................................", i);
        (void)n;
        if (mq_topic_publish(broker, "soak", key, strlen(key), payload, 48, NULL, 0,
                             MQ_WAIT_FOREVER, NULL, NULL, NULL) != MQ_OK) {
            fprintf(stderr, "publish failed: %s\n", mq_last_error());
            exit(1);
        }
    }
    return NULL;
}

struct consumer_arg {
    int group;
    int32_t partition;
};

static void *consumer(void *argp) {
    const struct consumer_arg *a = argp;
    const char *group = a->group ? "g1" : "g0";
    mq_message msgs[256];
    long long expect = 0;
    while (expect < per_partition) {
        size_t n = 0;
        mq_status st = mq_group_poll(broker, "soak", group, a->partition, msgs, sizeof(mq_message),
                                     256, 1000, NULL, &n);
        if (st == MQ_TIMEOUT) continue;
        if (st != MQ_OK) {
            fprintf(stderr, "poll failed: %s\n", mq_last_error());
            exit(1);
        }
        for (size_t i = 0; i < n; i++) {
            if (msgs[i].offset != expect || strtoll(msgs[i].payload, NULL, 10) != expect)
                order_errors++;
            expect++;
        }
        if (mq_group_ack(broker, "soak", group, a->partition, msgs[n - 1].offset) != MQ_OK) {
            fprintf(stderr, "ack failed: %s\n", mq_last_error());
            exit(1);
        }
        consumed[a->group][a->partition] = expect;
    }
    return NULL;
}

static long long total_consumed(void) {
    long long t = 0;
    for (int g = 0; g < GROUPS; g++)
        for (int p = 0; p < PARTITIONS; p++) t += consumed[g][p];
    return t / GROUPS;
}

int main(int argc, char **argv) {
    long long messages = 100000000LL;
    int samples = 200;
    const char *csv = "soak_rss.csv";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--messages") && i + 1 < argc) messages = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--samples") && i + 1 < argc) samples = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--csv") && i + 1 < argc) csv = argv[++i];
        else {
            fprintf(stderr, "usage: %s [--messages N] [--samples S] [--csv FILE]\n", argv[0]);
            return 2;
        }
    }
    per_partition = messages / PARTITIONS;
    messages = per_partition * PARTITIONS;
    if (mq_broker_new(NULL, &broker) != MQ_OK) return 1;
    mq_topic_config cfg;
    mq_topic_config_init(&cfg, sizeof cfg);
    cfg.partitions = PARTITIONS;
    cfg.capacity = 4096;
    if (mq_topic_create(broker, "soak", &cfg) != MQ_OK) return 1;
    mq_group_subscribe(broker, "soak", "g0", NULL);
    mq_group_subscribe(broker, "soak", "g1", NULL);

    FILE *out = fopen(csv, "w");
    if (!out) {
        perror(csv);
        return 1;
    }
    pthread_t pubs[PARTITIONS], cons[GROUPS][PARTITIONS];
    struct consumer_arg args[GROUPS][PARTITIONS];
    for (int g = 0; g < GROUPS; g++)
        for (int p = 0; p < PARTITIONS; p++) {
            args[g][p] = (struct consumer_arg){g, p};
            pthread_create(&cons[g][p], NULL, consumer, &args[g][p]);
        }
    for (int p = 0; p < PARTITIONS; p++)
        pthread_create(&pubs[p], NULL, publisher, (void *)(intptr_t)p);

    /* Sample every messages/samples consumed messages (checked every 10 ms). */
    const long long step = messages / samples > 0 ? messages / samples : 1;
    long long next_sample = 0, warm = messages / 10;
    long rss_warm = -1, rss_max_after = 0;
    struct timespec start, now, tick = {0, 10 * 1000 * 1000};
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (;;) {
        long long done = total_consumed();
        if (done >= next_sample || done >= messages) {
            long rss = rss_kib();
            fprintf(out, "%lld %ld\n", done, rss);
            fflush(out);
            if (done >= warm) {
                if (rss_warm < 0) rss_warm = rss;
                if (rss > rss_max_after) rss_max_after = rss;
            }
            next_sample = done + step;
        }
        if (done >= messages) break;
        nanosleep(&tick, NULL);
    }
    for (int p = 0; p < PARTITIONS; p++) pthread_join(pubs[p], NULL);
    for (int g = 0; g < GROUPS; g++)
        for (int p = 0; p < PARTITIONS; p++) pthread_join(cons[g][p], NULL);
    clock_gettime(CLOCK_MONOTONIC, &now);
    fclose(out);
    mq_broker_free(broker);
    const double secs =
        (double)(now.tv_sec - start.tv_sec) + (double)(now.tv_nsec - start.tv_nsec) / 1e9;
    const long growth = rss_max_after - rss_warm;
    printf(
        "soak: %lld messages x %d groups in %.1f s (%.0f msg/s); RSS after warm-up %ld KiB, max "
        "%ld KiB "
        "(growth %ld KiB); order errors %d\n",
        messages, GROUPS, secs, (double)messages / secs, rss_warm, rss_max_after, growth,
        atomic_load(&order_errors));
    const int ok = order_errors == 0 && growth < 8 * 1024;
    printf("soak: %s\n", ok ? "OK" : "FAILED");
    return ok ? 0 : 1;
}
