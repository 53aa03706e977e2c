package org.mq;

/**
 * A group's cursor on a partition ({@code mq_group_info}). Times are on the broker clock, in
 * nanoseconds. For a share group (ABI 1.6) {@code committed} is the oldest unsettled offset,
 * {@code next} the first offset no poll has looked at and {@code inFlight} next minus committed;
 * the share-group fields are 0 (or -1) for an ordered group.
 *
 * @param committed every offset below it is acked
 * @param next the next offset to hand out
 * @param lag end minus committed
 * @param inFlight next minus committed
 * @param lost messages dropped before this group acked them
 * @param deadLettered messages this group sent to its dead-letter topic
 * @param nextAgeNanos age of the message at next; -1 if none
 * @param pausedUntilNanos when a delayed nack's pause ends; 0 if not paused
 * @param acquired share groups: messages acquired and not settled (their locks still run)
 *     (since 1.6)
 * @param available share groups: messages a poll could acquire now (since 1.6)
 * @param delayed share groups: messages not handed out before a later time (a delayed publish,
 *     a release with a delay) (since 1.6)
 * @param rejected share groups: messages settled with {@link SettleAction#REJECT} (since 1.6)
 * @param oldestUnsettledAgeNanos share groups: age of the oldest unsettled message; -1 if none
 *     (since 1.6)
 * @param deliveredOnce share groups: unsettled messages handed out once (since 1.6)
 * @param deliveredTwice ... twice (since 1.6)
 * @param deliveredThrice ... three times (since 1.6)
 * @param deliveredMore ... four times or more (since 1.6)
 */
public record GroupInfo(long committed, long next, long lag, long inFlight, long lost,
        long deadLettered, long nextAgeNanos, long pausedUntilNanos, long acquired, long available,
        long delayed, long rejected, long oldestUnsettledAgeNanos, long deliveredOnce,
        long deliveredTwice, long deliveredThrice, long deliveredMore) {

    /**
     * The fields before ABI 1.6 (the share-group ones as an ordered group has them: 0, and -1
     * for the oldest unsettled age).
     */
    public GroupInfo(long committed, long next, long lag, long inFlight, long lost, long deadLettered,
            long nextAgeNanos, long pausedUntilNanos) {
        this(committed, next, lag, inFlight, lost, deadLettered, nextAgeNanos, pausedUntilNanos, 0, 0, 0, 0, -1,
                0, 0, 0, 0);
    }
}
