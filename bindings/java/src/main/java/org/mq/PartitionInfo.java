package org.mq;

/**
 * The state of a partition ({@code mq_partition_info}). Times are on the broker clock, in
 * nanoseconds.
 *
 * @param start the oldest retained offset
 * @param end the next offset to be published
 * @param backlog end minus the slowest group's committed offset (0 with no groups)
 * @param capacity messages retained at most
 * @param retainedBytes key, value and header bytes retained
 * @param maxBytes the byte budget, 0 = none
 * @param producerWaits publishes that found the partition full and started waiting
 * @param maxBacklog the largest backlog seen
 * @param dropped messages trimmed before every group acked them
 * @param oldestTimestampNanos timestamp of the message at start; -1 when the log is empty
 * @param oldestAgeNanos broker clock now minus oldestTimestampNanos; -1 when empty
 */
public record PartitionInfo(long start, long end, long backlog, long capacity, long retainedBytes,
        long maxBytes, long producerWaits, long maxBacklog, long dropped, long oldestTimestampNanos,
        long oldestAgeNanos) {}
