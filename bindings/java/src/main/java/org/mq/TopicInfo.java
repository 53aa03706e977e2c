package org.mq;

import java.time.Duration;

/**
 * A topic's configuration, as the library holds it ({@code mq_topic_info}).
 *
 * @param partitions the number of partitions
 * @param capacity messages retained per partition
 * @param maxBytes key, value and header bytes retained per partition; 0 = no budget
 * @param ackTimeout the lease length
 * @param retention what a full partition does
 * @param maxAge messages older than this are trimmed; {@link Duration#ZERO} = no limit
 */
public record TopicInfo(int partitions, long capacity, long maxBytes, Duration ackTimeout,
        Retention retention, Duration maxAge) {}
