package org.mq;

/**
 * Where a dead-lettered message came from (see {@link GroupOptions.Builder#maxDeliveries}).
 * The same facts travel as the message's {@code mq.dead_letter.*} headers.
 *
 * @param topic the topic it was published to
 * @param group the group that gave up on it
 * @param partition its partition in that topic
 * @param offset its offset in that partition
 * @param deliveryCount how many times that group had been handed it
 */
public record DeadLetter(String topic, String group, int partition, long offset, int deliveryCount) {}
