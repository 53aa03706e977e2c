package org.mq;

/**
 * {@code MQ_ERR_NOT_IN_FLIGHT}: an ack of an offset that is not in flight for the group (the
 * message names the in-flight range), or a lease extension with nothing in flight.
 */
public class MqNotInFlightException extends MqException {
    private static final long serialVersionUID = 1L;

    MqNotInFlightException(String message) {
        super(Status.NOT_IN_FLIGHT, message);
    }
}
