package org.mq;

/**
 * What a push subscription's error hook receives when a handler threw: which message it was
 * handling, with the handler's exception as the cause. The message was nacked.
 */
public final class HandlerException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final String topic;
    private final String group;
    private final int partition;
    private final long offset;

    HandlerException(String topic, String group, int partition, long offset, Throwable cause) {
        super("the handler of group " + group + " threw on " + topic + "/" + partition + "@" + offset
                + "; the message was nacked", cause);
        this.topic = topic;
        this.group = group;
        this.partition = partition;
        this.offset = offset;
    }

    /** The subscription's topic. */
    public String topic() {
        return topic;
    }

    /** The subscription's group. */
    public String group() {
        return group;
    }

    /** The message's partition. */
    public int partition() {
        return partition;
    }

    /** The message's offset. */
    public long offset() {
        return offset;
    }
}
