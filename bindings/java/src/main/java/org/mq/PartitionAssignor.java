package org.mq;

import java.util.List;

/**
 * An assignment strategy for a group's members. Called with the group's membership lock held,
 * from whichever thread caused the rebalance: it must be fast and pure and must not call into
 * mq. If it throws (the exception goes to the member's error hook), or leaves a partition out,
 * or names an index out of range, that partition stays unowned until the next rebalance.
 */
@FunctionalInterface
public interface PartitionAssignor {
    /**
     * Divides the partitions.
     *
     * @param partitions the topic's partition count
     * @param memberIds the members, in join order
     * @return for each partition p, the index in {@code memberIds} of its owner
     */
    int[] assign(int partitions, List<String> memberIds);
}
