package org.mq;

/**
 * {@code MQ_ERR_FENCED}: the member does not own that partition in the group's current
 * generation, or was removed for its session timeout; nothing was done.
 */
public class MqFencedException extends MqException {
    private static final long serialVersionUID = 1L;

    MqFencedException(String message) {
        super(Status.FENCED, message);
    }
}
