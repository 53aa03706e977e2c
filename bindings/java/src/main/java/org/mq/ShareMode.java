package org.mq;

/**
 * What kind of group {@link GroupOptions.Builder#share(ShareMode)} subscribes
 * ({@code mq_share_mode}, ABI 1.6).
 *
 * @since 1.6
 */
public enum ShareMode {
    /** An ordered group: each partition is handed out in order, under one lease. The default. */
    NONE(0),
    /**
     * A share group (a task queue): any number of polls share a partition; each acquires
     * messages no other poll holds, each under its own lock, settled one by one with
     * {@link Broker#settle(String, String, int, long, long, SettleAction) Broker.settle}.
     */
    ALL(1),
    /**
     * A key-shared group: a share group that keeps per-key order (a message is not acquired
     * while an earlier one with the same key is unsettled; keyless messages are unconstrained).
     */
    KEY(2);

    final int code;

    ShareMode(int code) {
        this.code = code;
    }
}
