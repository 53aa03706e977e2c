package org.mq;

/**
 * {@code MQ_ERR_NO_TOPIC}: no topic of that name.
 */
public class MqNoSuchTopicException extends MqException {
    private static final long serialVersionUID = 1L;

    MqNoSuchTopicException(String message) {
        super(Status.NO_TOPIC, message);
    }
}
