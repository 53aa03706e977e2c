package org.mq;

/**
 * {@code MQ_ERR_OWNED}: a partition is owned by another live subscription of the group, or
 * members and an explicit partition list would share the group.
 */
public class MqOwnedException extends MqException {
    private static final long serialVersionUID = 1L;

    MqOwnedException(String message) {
        super(Status.OWNED, message);
    }
}
