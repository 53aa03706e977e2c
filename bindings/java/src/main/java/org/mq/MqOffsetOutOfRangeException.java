package org.mq;

/**
 * {@code MQ_ERR_OUT_OF_RANGE}: a seek to an offset outside the retained log (the message names
 * the range).
 */
public class MqOffsetOutOfRangeException extends MqException {
    private static final long serialVersionUID = 1L;

    MqOffsetOutOfRangeException(String message) {
        super(Status.OUT_OF_RANGE, message);
    }
}
