package org.mq;

/**
 * {@code MQ_ERR_UNSUPPORTED} (ABI 1.2): the call or option has no meaning on this broker's
 * backend (e.g. push subscriptions or members on a Kafka cluster, or a manual clock there), or
 * the library was built without that backend (this binding's own build has no Kafka backend:
 * the message says how to rebuild); nothing was done.
 */
public class MqUnsupportedException extends MqException {
    private static final long serialVersionUID = 1L;

    MqUnsupportedException(String message) {
        super(Status.UNSUPPORTED, message);
    }
}
