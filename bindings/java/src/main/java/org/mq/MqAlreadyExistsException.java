package org.mq;

/**
 * {@code MQ_ERR_EXISTS}: the topic, group or member id already exists.
 */
public class MqAlreadyExistsException extends MqException {
    private static final long serialVersionUID = 1L;

    MqAlreadyExistsException(String message) {
        super(Status.EXISTS, message);
    }
}
