/* A program built out of tree against an installed mq (pkg-config or find_package): one round
 * trip through the C ABI, and the runtime version must match the installed header. */
#include <mq.h>
#include <stdio.h>
#include <string.h>

#define CHECK(call)                                                                        \
    do {                                                                                   \
        mq_status check_status_ = (call);                                                  \
        if (check_status_ != MQ_OK) {                                                      \
            fprintf(stderr, "FAIL: %s -> %s (%s)\n", #call, mq_status_name(check_status_), \
                    mq_last_error());                                                      \
            return 1;                                                                      \
        }                                                                                  \
    } while (0)

#define EXPECT(cond)                              \
    do {                                          \
        if (!(cond)) {                            \
            fprintf(stderr, "FAIL: %s\n", #cond); \
            return 1;                             \
        }                                         \
    } while (0)

static int round_trip(mq_broker *b) {
    static const char key[] = "order-17";
    static const char payload[] = "hello from an installed mq";
    const size_t key_len = sizeof key - 1;

    mq_topic_config cfg;
    mq_topic_config_init(&cfg, sizeof cfg);
    cfg.partitions = 3;
    CHECK(mq_topic_create(b, "orders", &cfg));
    CHECK(mq_group_subscribe(b, "orders", "billing", NULL));

    int32_t partition = -1;
    int64_t offset = -1;
    CHECK(mq_topic_publish(b, "orders", key, key_len, payload, sizeof payload, NULL, 0, MQ_NO_WAIT,
                           NULL, &partition, &offset));
    int32_t expected_partition = -1;
    CHECK(mq_key_partition(key, key_len, cfg.partitions, &expected_partition));
    EXPECT(partition == expected_partition);
    EXPECT(offset == 0);

    mq_message msgs[4];
    size_t count = 0;
    CHECK(mq_group_poll(b, "orders", "billing", partition, msgs, sizeof(mq_message), 4, 1000, NULL,
                        &count));
    EXPECT(count == 1);
    EXPECT(msgs[0].partition == partition && msgs[0].offset == offset);
    EXPECT(msgs[0].delivery_count == 1);
    EXPECT(msgs[0].key_len == key_len && memcmp(msgs[0].key, key, key_len) == 0);
    EXPECT(msgs[0].payload_len == sizeof payload &&
           memcmp(msgs[0].payload, payload, sizeof payload) == 0);
    CHECK(mq_group_ack(b, "orders", "billing", partition, msgs[0].offset));

    mq_group_info group;
    CHECK(mq_group_get_info(b, "orders", "billing", partition, &group, sizeof group));
    EXPECT(group.committed == offset + 1 && group.next == offset + 1);
    EXPECT(group.in_flight == 0 && group.lag == 0);
    return 0;
}

int main(void) {
    if (mq_version_number() != MQ_VERSION_NUMBER ||
        strcmp(mq_version_string(), MQ_VERSION_STRING) != 0) {
        fprintf(stderr, "FAIL: library %d (%s), header %d (%s)\n", mq_version_number(),
                mq_version_string(), MQ_VERSION_NUMBER, MQ_VERSION_STRING);
        return 1;
    }
    mq_broker *b = NULL;
    CHECK(mq_broker_new(NULL, &b));
    int rc = round_trip(b);
    mq_broker_free(b);
    if (rc == 0) {
        printf("ok: round trip through mq %s\n", mq_version_string());
    }
    return rc;
}
