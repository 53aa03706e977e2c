package org.mq;

import java.lang.ref.Cleaner;

/** The binding's Cleaner: frees native objects whose Java owner became unreachable. */
final class Resources {
    static final Cleaner CLEANER = Cleaner.create(r -> {
        Thread t = new Thread(r, "mq-cleaner");
        t.setDaemon(true);
        return t;
    });

    private Resources() {}
}
