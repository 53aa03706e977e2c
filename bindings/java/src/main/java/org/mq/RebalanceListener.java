package org.mq;

/**
 * Told after every rebalance of a member's group (its own join included: then before
 * {@link Broker#join} returns), on the thread that caused it (a join, a close, or the call
 * that noticed a timed-out member), with no library lock held. It may call
 * {@link Member#assignment()}; it must not close its own member ({@link MqDeadlockException}).
 * What it throws goes to the member's error hook.
 */
@FunctionalInterface
public interface RebalanceListener {
    /**
     * A rebalance happened.
     *
     * @param member the member this listener was given to
     * @param generation the group's new generation
     */
    void onRebalance(Member member, long generation);
}
