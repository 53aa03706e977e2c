package org.mq;

/**
 * {@code MQ_FULL}: a publish found the partition still full (backlog at capacity, or the byte
 * budget would be exceeded) when its wait ended; nothing was appended.
 */
public class MqFullException extends MqException {
    private static final long serialVersionUID = 1L;

    MqFullException(String message, BatchResult partialBatch) {
        super(Status.FULL, message, partialBatch);
    }
}
