package org.mq;

import java.util.List;

/**
 * The outcome of {@link Broker#publishBatch}: for each record, in input order, where it went.
 * When the batch stopped part-way (see {@link MqException#partialBatch()}), the published
 * records of each partition are a prefix of that partition's records and the others have
 * offset -1.
 *
 * @param published how many records were appended
 * @param results one per input record
 */
public record BatchResult(int published, List<PublishResult> results) {
    /** Copies the list. */
    public BatchResult {
        results = List.copyOf(results);
    }
}
