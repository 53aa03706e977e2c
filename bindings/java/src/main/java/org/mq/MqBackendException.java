package org.mq;

/**
 * {@code MQ_ERR_BACKEND} (ABI 1.2): the Kafka cluster refused the request or did not answer in
 * time; the message carries the cluster's words.
 */
public class MqBackendException extends MqException {
    private static final long serialVersionUID = 1L;

    MqBackendException(String message) {
        super(Status.BACKEND, message);
    }
}
