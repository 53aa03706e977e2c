package org.mq;

/**
 * A failed call into mq: the library's {@link Status} and its detail message, read on the
 * thread and in the native call that failed. Unchecked, like the Kafka clients' exceptions;
 * each status a caller may want to handle has its own subclass (listed at {@link Status}).
 *
 * <p>Full and interrupted publishes are exceptions ({@link MqFullException},
 * {@link MqInterruptedException}): a publish that did not happen must not be mistaken for one
 * that did by code that ignores a return value. A poll that finds nothing within its wait is
 * not: it returns an empty list, as {@code Consumer.poll} and {@code BlockingQueue.poll} do
 * for the normal outcome of waiting.
 */
public class MqException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final Status status;
    private final transient BatchResult partialBatch;

    MqException(Status status, String message) {
        this(status, message, null);
    }

    MqException(Status status, String message, BatchResult partialBatch) {
        super(message);
        this.status = status;
        this.partialBatch = partialBatch;
    }

    /** The library's status for this failure. */
    public Status status() {
        return status;
    }

    /**
     * For a {@link Broker#publishBatch batch publish} that stopped part-way (full, closed or
     * interrupted): what was published before it stopped. {@code null} otherwise.
     */
    public BatchResult partialBatch() {
        return partialBatch;
    }

    @Override
    public String toString() {
        return getClass().getName() + ": " + status.constantName() + ": " + getMessage();
    }

    /**
     * Text from the native library, which should be UTF-8 (names, messages): malformed bytes
     * become U+FFFD (called by the native code, which must never hand the JVM's modified UTF-8
     * arbitrary bytes).
     */
    static String fromNative(byte[] utf8) {
        return new String(utf8, java.nio.charset.StandardCharsets.UTF_8);
    }

    /** The exception for a status (called by the native code, and by the binding). */
    static MqException create(int code, String message) {
        return create(Status.of(code), message, null);
    }

    static MqException create(Status status, String message, BatchResult partial) {
        switch (status) {
            case FULL: return new MqFullException(message, partial);
            case CLOSED: return new MqClosedException(message, partial);
            case CANCELLED: return new MqInterruptedException(message, partial);
            case REBALANCED: return new MqRebalancedException(message);
            case INVALID: return new MqInvalidArgumentException(message);
            case NO_TOPIC: return new MqNoSuchTopicException(message);
            case NO_GROUP: return new MqNoSuchGroupException(message);
            case EXISTS: return new MqAlreadyExistsException(message);
            case PARTITION: return new MqNoSuchPartitionException(message);
            case TOO_LARGE: return new MqTooLargeException(message);
            case NOT_IN_FLIGHT: return new MqNotInFlightException(message);
            case OWNED: return new MqOwnedException(message);
            case DEADLOCK: return new MqDeadlockException(message);
            case NO_MEMORY: return new MqNoMemoryException(message);
            case INTERNAL: return new MqInternalException(message);
            case OUT_OF_RANGE: return new MqOffsetOutOfRangeException(message);
            case FENCED: return new MqFencedException(message);
            case UNSUPPORTED: return new MqUnsupportedException(message);
            case BACKEND: return new MqBackendException(message);
            default: return new MqException(status, message, partial);
        }
    }

    /** Same exception with the batch's partial result attached. */
    MqException withPartialBatch(BatchResult partial) {
        return create(status, getMessage(), partial);
    }
}
