package org.mq;

/** The library's defaults (its *_init functions), read once: the builders start from them. */
final class Defaults {
    private static final long[] V = NativeMq.defaults();

    static final long MAX_MESSAGE_BYTES = V[0];
    static final long SPIN_NS = V[1];
    static final int PARTITIONS = (int) V[2];
    static final long CAPACITY = V[3];
    static final long MAX_BYTES = V[4];
    static final long ACK_TIMEOUT_MS = V[5];
    static final int RETENTION = (int) V[6];
    static final long MAX_AGE_MS = V[7];
    static final int START = (int) V[8];
    static final long MAX_DELIVERIES = V[9];
    static final int PREFETCH = (int) V[10];
    static final long SESSION_TIMEOUT_MS = V[11];
    static final long SUBSCRIPTION_SESSION_TIMEOUT_MS = V[12];
    static final int SHARE = (int) V[13];
    static final long MAX_ACQUIRED = V[14];

    private Defaults() {}
}
