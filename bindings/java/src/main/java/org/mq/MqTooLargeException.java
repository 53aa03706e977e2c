package org.mq;

/**
 * {@code MQ_ERR_TOO_LARGE}: the message (key, value and headers) is larger than the broker's
 * maximum or the topic's byte budget.
 */
public class MqTooLargeException extends MqException {
    private static final long serialVersionUID = 1L;

    MqTooLargeException(String message) {
        super(Status.TOO_LARGE, message);
    }
}
