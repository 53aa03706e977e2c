package org.mq;

/**
 * How {@link Broker#settle(String, String, int, long, long, SettleAction) Broker.settle}
 * settles a message a share group acquired ({@code mq_settle}, ABI 1.6).
 *
 * @since 1.6
 */
public enum SettleAction {
    /** Done: the message is never handed out again. */
    ACCEPT(0),
    /** Hand it out again: at once, or after the settle call's delay. */
    RELEASE(1),
    /**
     * Never again: to the group's dead-letter topic if it has one (with the same origin headers
     * as {@link GroupOptions.Builder#maxDeliveries(long) maxDeliveries}), else dropped; counted
     * in {@link GroupInfo#rejected()}.
     */
    REJECT(2),
    /** Keep it: its lock starts over (the topic's ack timeout). */
    RENEW(3);

    final int code;

    SettleAction(int code) {
        this.code = code;
    }
}
