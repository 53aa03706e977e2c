package org.mq;

/**
 * Where a published message went.
 *
 * @param partition the partition (chosen by the key, or round-robin without one)
 * @param offset its offset in that partition; -1 for a batch record that was not published
 */
public record PublishResult(int partition, long offset) {
    /** Whether the record was appended (a batch that stopped part-way leaves some unpublished). */
    public boolean published() {
        return offset >= 0;
    }
}
