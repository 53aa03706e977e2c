package org.mq;

import java.lang.ref.WeakReference;
import java.util.Arrays;
import java.util.List;

/** The Java ends of a member's callbacks (SWIG directors). Nothing escapes into the library. */
final class MemberSinks {
    private MemberSinks() {}

    static void report(Thread.UncaughtExceptionHandler hook, Throwable t) {
        try {
            Thread self = Thread.currentThread();
            (hook != null ? hook : self.getUncaughtExceptionHandler()).uncaughtException(self, t);
        } catch (Throwable ignored) {
            // The hook failed too: nothing more to do without crossing into the library.
        }
    }

    /** Calls the RebalanceListener with the Member (weakly held: a dropped member is collected). */
    static final class Listener extends NativeRebalanceSink {
        private final MemberState state;
        private final WeakReference<Member> member;
        private final RebalanceListener listener;
        private final Thread.UncaughtExceptionHandler hook;

        Listener(MemberState state, Member member, RebalanceListener listener,
                Thread.UncaughtExceptionHandler hook) {
            this.state = state;
            this.member = new WeakReference<>(member);
            this.listener = listener;
            this.hook = hook;
        }

        @Override
        public void onRebalance(long generation) {
            PerThread pt = null;
            Object previous = null;
            try {
                pt = PerThread.get();
                previous = pt.callbackOf;
                pt.callbackOf = state;
                Member m = member.get();
                if (m != null) {
                    listener.onRebalance(m, generation);
                }
            } catch (Throwable t) {
                report(hook, t);
            } finally {
                if (pt != null) {
                    pt.callbackOf = previous;
                }
            }
        }
    }

    /** Calls the PartitionAssignor; its answer travels back as "owner,owner,...". */
    static final class Assignor extends NativeAssignorSink {
        private final PartitionAssignor assignor;
        private final Thread.UncaughtExceptionHandler hook;

        Assignor(PartitionAssignor assignor, Thread.UncaughtExceptionHandler hook) {
            this.assignor = assignor;
            this.hook = hook;
        }

        @Override
        public String assign(int partitions, String memberIds) {
            try {
                List<String> ids = memberIds.isEmpty() ? List.of()
                        : Arrays.asList(memberIds.substring(0, memberIds.length() - 1).split("\n", -1));
                int[] owners = assignor.assign(partitions, List.copyOf(ids));
                StringBuilder sb = new StringBuilder(owners == null ? 0 : owners.length * 3);
                for (int p = 0; owners != null && p < owners.length && p < partitions; p++) {
                    if (p > 0) {
                        sb.append(',');
                    }
                    sb.append(owners[p]);
                }
                return sb.toString();
            } catch (Throwable t) {
                report(hook, t);
                return "";
            }
        }
    }
}
