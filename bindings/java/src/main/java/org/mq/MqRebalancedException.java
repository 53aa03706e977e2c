package org.mq;

/**
 * {@code MQ_REBALANCED}: the member's group rebalanced since it last fetched its assignment;
 * nothing was done. Call {@link Member#assignment()} and carry on.
 */
public class MqRebalancedException extends MqException {
    private static final long serialVersionUID = 1L;

    MqRebalancedException(String message) {
        super(Status.REBALANCED, message);
    }
}
