package org.mq;

import java.util.AbstractList;
import java.util.Arrays;
import java.util.List;
import java.util.RandomAccess;

/**
 * The outcome of {@link Broker#publishBatch}: for each record, in input order, where it went.
 * When the batch stopped part-way (see {@link MqException#partialBatch()}), the published
 * records of each partition are a prefix of that partition's records and the others have
 * offset -1. Immutable.
 */
public final class BatchResult {
    private final int published;
    private final long[] places;  // partition, offset per record

    BatchResult(int published, long[] places) {
        this.published = published;
        this.places = places;
    }

    /** How many records were appended. */
    public int published() {
        return published;
    }

    /** How many records the batch had. */
    public int size() {
        return places.length / 2;
    }

    /** Where record {@code i} went (offset -1 if it was not published). */
    public PublishResult result(int i) {
        if (i < 0 || i >= size()) {
            throw new IndexOutOfBoundsException("record " + i + " of a batch of " + size());
        }
        return new PublishResult((int) places[2 * i], places[2 * i + 1]);
    }

    /** One result per input record, in order (a view: the results are made as they are read). */
    public List<PublishResult> results() {
        return new Results();
    }

    private final class Results extends AbstractList<PublishResult> implements RandomAccess {
        @Override
        public PublishResult get(int i) {
            return result(i);
        }

        @Override
        public int size() {
            return BatchResult.this.size();
        }
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof BatchResult && published == ((BatchResult) o).published
                && Arrays.equals(places, ((BatchResult) o).places);
    }

    @Override
    public int hashCode() {
        return 31 * published + Arrays.hashCode(places);
    }

    @Override
    public String toString() {
        return "BatchResult[published=" + published + ", results=" + results() + "]";
    }
}
