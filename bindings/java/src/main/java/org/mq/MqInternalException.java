package org.mq;

/**
 * {@code MQ_ERR_INTERNAL}: a bug in mq or in this binding; the message says where.
 */
public class MqInternalException extends MqException {
    private static final long serialVersionUID = 1L;

    MqInternalException(String message) {
        super(Status.INTERNAL, message);
    }
}
