package org.mq;

/**
 * The statuses of the C API ({@code mq_status}), with their constant values and names. Every
 * {@link MqException} carries one.
 */
public enum Status {
    /** Success (never carried by an exception). */
    OK(0, "MQ_OK"),
    /** A poll found nothing within its wait (a poll returns an empty list instead). */
    TIMEOUT(1, "MQ_TIMEOUT"),
    /** A publish found the partition still full when its wait ended: {@link MqFullException}. */
    FULL(2, "MQ_FULL"),
    /** The broker is closed: {@link MqClosedException}. */
    CLOSED(3, "MQ_CLOSED"),
    /** The waiting thread was interrupted: {@link MqInterruptedException}. */
    CANCELLED(4, "MQ_CANCELLED"),
    /** A member's group rebalanced since it last fetched its assignment: {@link MqRebalancedException}. */
    REBALANCED(5, "MQ_REBALANCED"),
    /**
     * Not a failure (ABI 1.4): an asynchronous C call will report through its callback. No
     * exception carries it.
     */
    PENDING(6, "MQ_PENDING"),
    /** A bad argument (null, illegal name, bad value or config): {@link MqInvalidArgumentException}. */
    INVALID(10, "MQ_ERR_INVALID"),
    /** No topic of that name: {@link MqNoSuchTopicException}. */
    NO_TOPIC(11, "MQ_ERR_NO_TOPIC"),
    /** No such group on that topic: {@link MqNoSuchGroupException}. */
    NO_GROUP(12, "MQ_ERR_NO_GROUP"),
    /** The topic, group or member id already exists: {@link MqAlreadyExistsException}. */
    EXISTS(13, "MQ_ERR_EXISTS"),
    /** Partition number out of range: {@link MqNoSuchPartitionException}. */
    PARTITION(14, "MQ_ERR_PARTITION"),
    /** Message larger than the broker maximum or the byte budget: {@link MqTooLargeException}. */
    TOO_LARGE(15, "MQ_ERR_TOO_LARGE"),
    /** Ack of an offset that is not in flight: {@link MqNotInFlightException}. */
    NOT_IN_FLIGHT(16, "MQ_ERR_NOT_IN_FLIGHT"),
    /** A partition is owned by another subscription or the group's members: {@link MqOwnedException}. */
    OWNED(17, "MQ_ERR_OWNED"),
    /** A close from inside the object's own callback: {@link MqDeadlockException}. */
    DEADLOCK(18, "MQ_ERR_DEADLOCK"),
    /** The native library could not allocate: {@link MqNoMemoryException}. */
    NO_MEMORY(19, "MQ_ERR_NO_MEMORY"),
    /** A bug in mq or in this binding: {@link MqInternalException}. */
    INTERNAL(20, "MQ_ERR_INTERNAL"),
    /** Seek outside the retained log: {@link MqOffsetOutOfRangeException}. */
    OUT_OF_RANGE(21, "MQ_ERR_OUT_OF_RANGE"),
    /** The member does not own that partition (or was removed): {@link MqFencedException}. */
    FENCED(22, "MQ_ERR_FENCED"),
    /**
     * The call or option has no meaning on this broker's backend, or the library was built
     * without it (ABI 1.2): {@link MqUnsupportedException}.
     */
    UNSUPPORTED(23, "MQ_ERR_UNSUPPORTED"),
    /** The Kafka cluster refused the request or did not answer in time (ABI 1.2): {@link MqBackendException}. */
    BACKEND(24, "MQ_ERR_BACKEND"),
    /** A value this binding does not know (from a newer library). */
    UNKNOWN(-1, "MQ_UNKNOWN_STATUS");

    private static final Status[] BY_CODE = byCode();

    private static Status[] byCode() {
        int max = 0;
        for (Status s : values()) {
            max = Math.max(max, s.code);
        }
        Status[] table = new Status[max + 1];
        for (Status s : values()) {
            if (s.code >= 0) {
                table[s.code] = s;
            }
        }
        return table;
    }

    private final int code;
    private final String constantName;

    Status(int code, String constantName) {
        this.code = code;
        this.constantName = constantName;
    }

    /** The C value, e.g. 2 for {@code MQ_FULL}. */
    public int code() {
        return code;
    }

    /** The C constant's name, e.g. {@code "MQ_FULL"} (what {@code mq_status_name} returns). */
    public String constantName() {
        return constantName;
    }

    /** The status of a C value; {@link #UNKNOWN} for values this binding does not know. */
    public static Status of(int code) {
        Status s = code >= 0 && code < BY_CODE.length ? BY_CODE[code] : null;
        return s != null ? s : UNKNOWN;
    }
}
