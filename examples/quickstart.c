/* mq quick start: publish, poll and ack by hand, then let a push subscription do the loop. */
#define _POSIX_C_SOURCE 200809L
#include <mq.h>

#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Every mq call returns a status; the detail of a failure is in mq_last_error(). */
#define CHECK(call)                                                                             \
    do {                                                                                        \
        mq_status s_ = (call);                                                                  \
        if (s_ != MQ_OK) {                                                                      \
            fprintf(stderr, "%s failed: %s: %s\n", #call, mq_status_name(s_), mq_last_error()); \
            exit(1);                                                                            \
        }                                                                                       \
    } while (0)

typedef struct inbox {
    sem_t handled; /* posted once per message, so main can wait for the handler */
} inbox;

/* Runs on a library thread. Returning 0 acks the message; nonzero nacks it (redelivery). */
static int on_message(void *user, const mq_message *m) {
    inbox *in = user;
    printf("push: partition %d offset %lld: %.*s\n", m->partition, (long long)m->offset,
           (int)m->payload_len, (const char *)m->payload);
    sem_post(&in->handled);
    return 0;
}

/* Called exactly once, when the handler can no longer run. */
static void free_inbox(void *user) {
    inbox *in = user;
    sem_destroy(&in->handled);
    free(in);
}

int main(void) {
    mq_broker *b = NULL;
    CHECK(mq_broker_new(NULL, &b));

    mq_topic_config cfg;
    mq_topic_config_init(&cfg, sizeof cfg);
    cfg.partitions = 2;
    CHECK(mq_topic_create(b, "orders", &cfg));
    CHECK(mq_group_subscribe(b, "orders", "billing", NULL)); /* sees what is published next */

    /* Pull: publish (the key picks the partition), poll, ack. */
    int32_t partition;
    int64_t offset;
    CHECK(mq_publish(b, "orders", "user-a", strlen("user-a"), "o-1", strlen("o-1"), NULL, 0,
                     MQ_WAIT_FOREVER, NULL, &partition, &offset));
    mq_message msgs[10];
    size_t n = 0;
    CHECK(mq_poll(b, "orders", "billing", partition, msgs, sizeof(mq_message), 10, 1000, NULL, &n));
    for (size_t i = 0; i < n; ++i) /* views into the log: valid until acked */
        printf("pull: partition %d offset %lld: %.*s\n", msgs[i].partition,
               (long long)msgs[i].offset, (int)msgs[i].payload_len, (const char *)msgs[i].payload);
    CHECK(mq_ack(b, "orders", "billing", partition, msgs[n - 1].offset)); /* cumulative */

    /* Push: the library polls, calls the handler and acks, one thread per partition. */
    inbox *in = malloc(sizeof *in);
    if (!in || sem_init(&in->handled, 0, 0) != 0) return 1;
    mq_subscription *sub = NULL;
    CHECK(mq_subscribe(b, "orders", "email", NULL, on_message, in, free_inbox, &sub));
    CHECK(mq_publish(b, "orders", "user-b", strlen("user-b"), "o-2", strlen("o-2"), NULL, 0,
                     MQ_WAIT_FOREVER, NULL, NULL, NULL));
    sem_wait(&in->handled);
    CHECK(mq_subscription_close(sub)); /* waits for the handler, then calls free_inbox */

    mq_broker_free(b);
    return 0;
}
