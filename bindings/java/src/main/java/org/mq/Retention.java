package org.mq;

/** What a topic does when a partition is full ({@code mq_retention}). */
public enum Retention {
    /** The slowest group holds messages; publishers wait (back-pressure). The default. */
    UNTIL_ACKED(0),
    /**
     * Publishers never wait: the oldest messages are dropped to keep the newest
     * {@code capacity} (and {@code maxBytes}); a group that falls behind skips forward and is
     * told how many it lost ({@link Message#lost()}).
     */
    BOUNDED(1);

    final int code;

    Retention(int code) {
        this.code = code;
    }

    static Retention of(long code) {
        for (Retention r : values()) {
            if (r.code == code) {
                return r;
            }
        }
        throw new MqInternalException("unknown retention " + code + " from the library");
    }
}
