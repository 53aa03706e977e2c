package org.mq;

/** Where a new group starts reading ({@code mq_start}). */
public enum StartPosition {
    /** At the end of the log: it sees what is published after it subscribes. The default. */
    LATEST(0),
    /** At the oldest retained message. */
    EARLIEST(1);

    final int code;

    StartPosition(int code) {
        this.code = code;
    }
}
