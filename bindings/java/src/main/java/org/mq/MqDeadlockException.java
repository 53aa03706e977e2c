package org.mq;

/**
 * {@code MQ_ERR_DEADLOCK}: a subscription closed from inside its own handler, or a member from
 * inside its own rebalance listener. Nothing happened; close it from another thread.
 */
public class MqDeadlockException extends MqException {
    private static final long serialVersionUID = 1L;

    MqDeadlockException(String message) {
        super(Status.DEADLOCK, message);
    }
}
