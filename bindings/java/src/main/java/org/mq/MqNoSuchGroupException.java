package org.mq;

/**
 * {@code MQ_ERR_NO_GROUP}: no such group on that topic.
 */
public class MqNoSuchGroupException extends MqException {
    private static final long serialVersionUID = 1L;

    MqNoSuchGroupException(String message) {
        super(Status.NO_GROUP, message);
    }
}
