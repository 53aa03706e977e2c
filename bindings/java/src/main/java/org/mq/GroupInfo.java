package org.mq;

/**
 * A group's cursor on a partition ({@code mq_group_info}). Times are on the broker clock, in
 * nanoseconds.
 *
 * @param committed every offset below it is acked
 * @param next the next offset to hand out
 * @param lag end minus committed
 * @param inFlight next minus committed
 * @param lost messages dropped before this group acked them
 * @param deadLettered messages this group sent to its dead-letter topic
 * @param nextAgeNanos age of the message at next; -1 if none
 * @param pausedUntilNanos when a delayed nack's pause ends; 0 if not paused
 */
public record GroupInfo(long committed, long next, long lag, long inFlight, long lost,
        long deadLettered, long nextAgeNanos, long pausedUntilNanos) {}
