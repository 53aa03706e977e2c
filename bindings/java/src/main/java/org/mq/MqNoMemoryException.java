package org.mq;

/**
 * {@code MQ_ERR_NO_MEMORY}: the native library could not allocate; nothing changed.
 */
public class MqNoMemoryException extends MqException {
    private static final long serialVersionUID = 1L;

    MqNoMemoryException(String message) {
        super(Status.NO_MEMORY, message);
    }
}
