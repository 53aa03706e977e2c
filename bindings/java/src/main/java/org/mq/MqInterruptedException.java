package org.mq;

/**
 * {@code MQ_CANCELLED}: the calling thread was interrupted while the call waited. The thread's
 * interrupt flag stays set, so code further up sees the interrupt too (as with
 * {@code BlockingQueue}, whose waits end on an interrupt).
 */
public class MqInterruptedException extends MqException {
    private static final long serialVersionUID = 1L;

    MqInterruptedException(String message, BatchResult partialBatch) {
        super(Status.CANCELLED, message, partialBatch);
    }
}
