package org.mq;

import java.util.List;

/**
 * A member's share of its group: the partitions it owns in a generation.
 *
 * @param generation the group's generation (starts at 1, grows with every rebalance)
 * @param partitions the owned partitions, in increasing order
 */
public record Assignment(long generation, List<Integer> partitions) {
    /** Copies the list. */
    public Assignment {
        partitions = List.copyOf(partitions);
    }
}
