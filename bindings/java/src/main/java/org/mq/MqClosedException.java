package org.mq;

/**
 * {@code MQ_CLOSED}: the broker is closed, or was closed while the call waited.
 */
public class MqClosedException extends MqException {
    private static final long serialVersionUID = 1L;

    MqClosedException(String message, BatchResult partialBatch) {
        super(Status.CLOSED, message, partialBatch);
    }
}
