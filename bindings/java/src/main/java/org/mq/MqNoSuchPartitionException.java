package org.mq;

/**
 * {@code MQ_ERR_PARTITION}: the partition number is out of range for the topic.
 */
public class MqNoSuchPartitionException extends MqException {
    private static final long serialVersionUID = 1L;

    MqNoSuchPartitionException(String message) {
        super(Status.PARTITION, message);
    }
}
