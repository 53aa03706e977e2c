package org.mq;

/**
 * Handles the messages of a push {@link Subscription}, one at a time per partition, in
 * partition order, on a library thread (one per owned partition).
 *
 * <p>Returning normally acks the message; throwing nacks it (it and the rest of its batch are
 * delivered again, at once or after {@link HandlerContext#nackDelay}), and the exception goes to
 * the subscription's {@link SubscribeOptions.Builder#onHandlerError error hook}: it is never
 * lost and never reaches the library. {@link HandlerContext#nack()} nacks without an exception.
 * Handlers must be idempotent: delivery is at-least-once.
 *
 * <p>A handler may call anything in this package except {@link Subscription#close()} of its
 * own subscription (which throws {@link MqDeadlockException}).
 */
@FunctionalInterface
public interface MessageHandler {
    /**
     * Handles one message.
     *
     * @param message the message (its arrays are copies: keep them as long as needed)
     * @param context this call's lease extension, nack and nack delay
     * @throws Exception to nack the message
     */
    void handle(Message message, HandlerContext context) throws Exception;
}
