package org.mq;

/**
 * {@code MQ_ERR_INVALID}: a bad argument: null, an illegal name, a bad value or config, or a
 * call that must come from inside a push handler made elsewhere.
 */
public class MqInvalidArgumentException extends MqException {
    private static final long serialVersionUID = 1L;

    MqInvalidArgumentException(String message) {
        super(Status.INVALID, message);
    }
}
