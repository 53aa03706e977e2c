/*
 * The wait-and-wake protocol of one mq partition, for the spin model checker.
 * README.md (this directory) maps every name here to the code's; scripts/check-model.sh runs it.
 *
 * Modelled: the partition lock, its two condition variables (not_full: publishers waiting for
 * room; not_empty: polls waiting for messages), Waiting::wait's loop (closed, the caller's step,
 * cancel, block), the waiter counters announce() and publishers_to_wake() read, and the wakes
 * sent by publish, batch publish, ack, nack (immediate and delayed), lease expiry (a timed wait),
 * unsubscribe, seek, broker close and cancel tokens. Several publishers (one of them a batch),
 * polls of two groups, capacity CAP; with -DMEMBER the second poll is a member poll sleeping on
 * its own Notifier (signalled by announce() through Waitable::watchers). With -DACK_POLL a poll
 * may ack what it got with its next poll (mq_group_ack_poll, mq_member_ack_poll): the ack and
 * the poll's first step in one critical section, the publishers the ack owes (`owed`, the code's
 * Wakeup `freed` / `pending`) sent without the lock before the poll first blocks, or after the
 * poll's unlock. With -DASYNC the second poll is an asynchronous one (mq_group_poll_async:
 * util/async_waits): where a blocking poll would sleep it parks, under the partition lock, keyed
 * by not_empty, and holds no thread; whatever announces pokes that key (the broker-wide parked
 * count read under the partition lock), its cancel token makes it due, close completes it; the
 * completer runs it again. -DASYNC_PUB makes publisher 0 asynchronous too (parked on not_full,
 * poked by publishers_to_wake when room was freed).
 *
 * Checked: at every state where nothing can move any more (spin's `timeout`), no waiter sleeps
 * next to something it could use: a publisher asleep has no room, a poll asleep has no message
 * it may take, neither is closed or cancelled, a poll's group still exists. A process stuck
 * anywhere but a condition-variable wait (a lock, say) is an invalid end state: a deadlock. An
 * invariant on the log and cursors holds at every step.
 *
 * -D flags turn on mutants (check-model.sh requires spin to find each one), BUG_* ones being the
 * code as it was before a fix the model found. See README.md.
 */

#ifndef CAP
#define CAP 1
#endif
#define NPUB 2 /* waiter slots 0..1: publisher 0 (single records), 1 (a batch of 2) */
#define NPOLL 2 /* slots 2..3: a poll of group 0 and one of group 1 (POLL2_GROUP) */
#define NW 4
#define NG 2
#ifndef MSGS
#define MSGS 2 /* single publishes of publisher 0 */
#endif
#ifndef ROUNDS
#define ROUNDS 2 /* polls per poller */
#endif
#ifndef ROUNDS2
#define ROUNDS2 ROUNDS /* polls of the second poller (slot 3) */
#endif
#define rounds(me) (me == 3 -> ROUNDS2 : ROUNDS)
#ifndef POLL2_GROUP
#define POLL2_GROUP 1
#endif
#ifndef ADMIN_OPS
#define ADMIN_OPS 2
#endif
#define FREE 255

mtype = { OK, FULL, CLOSED, CANCELLED, NO_GROUP, REFUSED };

/* ---- the partition (Partition, Log, Cursor), guarded by mu ---- */
byte mu = FREE;            /* Waitable::mu: the holder's slot, or FREE */
byte start, end;           /* Log: [start, end) retained */
bool sub[NG];              /* a cursor of group g exists */
byte committed[NG], next[NG];
bool expired[NG];          /* the clock passed the lease deadline (Cursor::lease_deadline) */
bool paused[NG];           /* a delayed nack holds the group (Cursor::not_before in future) */
byte pollers_waiting, publishers_waiting;
byte slowest;              /* trim's scratch, always 0 between steps */
/* ---- the condition variables: a waiter's bit is set while it sleeps on it ---- */
bool nf[NW];               /* Waitable::not_full */
bool ne[NW];               /* Waitable::not_empty */
/* ---- outside the lock (atomics) ---- */
bool closed;               /* mq_broker::closed_ */
bool cancelled[NW];        /* mq_cancel::triggered of the token each waiter passes */
bool registered[NW];       /* mq_cancel::where set (CancelScope alive) */
/* ---- MEMBER: the member poll of slot 3 sleeps on its own Notifier ---- */
bool watching;             /* the Notifier is in the partition's Waitable::watchers */
bool signalled;            /* Notifier::signalled, guarded by nmu */
bool nsleep;               /* the member sleeps on Notifier::not_empty */
byte nmu = FREE;           /* Notifier::mu */

/* ---- ASYNC: the asynchronous calls (AsyncWaits::State, guarded by its own mutex: atomic) ---- */
bool aparked[NW];          /* Call::parked: in by_key under the key of its side's condvar */
bool adue[NW];             /* Call::due: poked, cancelled or its time came; runs again */
bool aclosing;             /* AsyncWaits::close: every call completes with MQ_CLOSED */
#define async_slot(k) (k == 3 && ASYNC_POLL || k == 0 && ASYNC_PUBLISH)
#if defined(ASYNC) || defined(ASYNC_PUB)
#define ANY_ASYNC 1
#endif
#ifdef ASYNC
#define ASYNC_POLL 1
#else
#define ASYNC_POLL 0
#endif
#ifdef ASYNC_PUB
#define ASYNC_PUBLISH 1
#else
#define ASYNC_PUBLISH 0
#endif

#define cursors (sub[0] + sub[1])
#define has_room (cursors == 0 || end - start < CAP)  /* Partition::has_room */
#define can_take(g) (sub[g] && !paused[g] && next[g] < end)

/* The log and the cursors are consistent at every step (start <= committed <= next <= end,
 * at most CAP retained while a group holds them). */
#define cursor_ok(g) (!sub[g] || start <= committed[g] && committed[g] <= next[g] && next[g] <= end)
#define invariant (start <= end && cursor_ok(0) && cursor_ok(1) && (cursors == 0 || end - start <= CAP))

inline lock(me) { atomic { mu == FREE -> mu = me } }
inline unlock() { assert(invariant); mu = FREE }

/* pthread_cond_broadcast on not_full (nf) or not_empty (ne). */
#define notify_all(cv) d_step { cv[0] = 0; cv[1] = 0; cv[2] = 0; cv[3] = 0 }
/* pthread_cond_signal: wakes one of the sleepers (any), or nobody if none sleeps. */
#define notify_one(cv) \
    atomic { \
        if \
        :: cv[0] -> cv[0] = 0 \
        :: cv[1] -> cv[1] = 0 \
        :: cv[2] -> cv[2] = 0 \
        :: cv[3] -> cv[3] = 0 \
        :: else -> skip \
        fi \
    }

/* Waiting::send: consumers -> notify_all(not_empty); publishers: n x notify_one, or all. */
inline send_consumers(wake) {
    if
    :: wake ->
#ifdef M_CONSUMERS_WAKE_ONE
        notify_one(ne)
#else
        notify_all(ne)
#endif
    :: else -> skip
    fi
}
#define ALL 255
inline send_publishers(n) {
    if
    :: n == ALL -> notify_all(nf)
    :: else ->
        do
        :: n > 0 -> notify_one(nf); n--
        :: else -> break
        od
    fi;
    n = 0
}
/* AsyncWaits::poke(&not_empty) / poke(&not_full) under the partition lock: every call parked
 * on that key becomes due. */
#if defined(M_ASYNC_NO_POKE) || defined(MEMBER)
/* With MEMBER, slot 3 parks on its Notifier's key, which member_signal pokes: nobody parks on
 * the partition's not_empty. */
#define poke_polls() skip
#else
#define poke_polls() atomic { if :: aparked[3] -> aparked[3] = 0; adue[3] = 1 :: else fi }
#endif
#ifdef M_ASYNC_PUB_NO_POKE
#define poke_publishers() skip
#else
#define poke_publishers() atomic { if :: aparked[0] -> aparked[0] = 0; adue[0] = 1 :: else fi }
#endif
/* Waitable::signal_watchers, called by announce() under the partition lock: Notifier::signal
 * (its lock, signalled = true, notify_all) for each watching member poll; announce() also pokes
 * the parked asynchronous polls. */
#if defined(MEMBER) && defined(ASYNC)
/* Notifier::signal: also pokes the asynchronous member poll parked on the Notifier's key. */
#ifdef M_ASYNC_MEMBER_NO_POKE
#define member_signal() atomic { nmu == FREE -> signalled = 1; nsleep = 0 }
#else
#define member_signal() \
    atomic { nmu == FREE -> signalled = 1; nsleep = 0; if :: aparked[3] -> aparked[3] = 0; adue[3] = 1 :: else fi }
#endif
#define signal_watchers() if :: watching -> member_signal() :: else fi
#elif defined(ASYNC) || defined(ASYNC_PUB)
#define signal_watchers() poke_polls()
#elif defined(MEMBER)
#ifdef M_NO_SIGNAL_WATCHERS
#define signal_watchers() skip
#else
#define signal_watchers() if :: watching -> atomic { nmu == FREE -> signalled = 1; nsleep = 0 } :: else fi
#endif
#else
#define signal_watchers() skip
#endif

/* Waiting::publishers_to_wake (under the lock). */
inline publishers_to_wake(freed, n) {
#ifdef ANY_ASYNC
    if :: freed > 0 -> poke_publishers() :: else fi;
#endif
    if
    :: publishers_waiting == 0 || freed == 0 -> n = 0
    :: publishers_waiting > 0 && freed >= publishers_waiting -> n = ALL
    :: publishers_waiting > 0 && freed > 0 && freed < publishers_waiting -> n = freed
    fi
}
/* Partition::trim: to the slowest committed (everything without groups). */
inline trim(freed) {
    d_step {
        slowest = end;
        if :: sub[0] && committed[0] < slowest -> slowest = committed[0] :: else fi;
        if :: sub[1] && committed[1] < slowest -> slowest = committed[1] :: else fi;
        freed = slowest - start;
        start = slowest;
        slowest = 0
    }
}
/* Partition::commit_ack's check (with the closed and group checks before it): offset o is in
 * flight for group g. Else the ack is refused: MQ_CLOSED, MQ_ERR_NO_GROUP, MQ_ERR_NOT_IN_FLIGHT. */
#define ack_ok(g, o) (!closed && sub[g] && o >= committed[g] && o < next[g])
/* Under the lock, once ack_ok(g, o): Partition::commit_ack, then trim_and_wake(false): n
 * publishers to wake once the lock is released. */
inline commit_ack(g, o, freed, n) {
    committed[g] = o + 1;
    if :: next[g] == committed[g] -> expired[g] = 0 :: else fi;
    trim(freed);
    publishers_to_wake(freed, n);
    freed = 0
}

/* Waitable::wake_all, called by close and by a cancel trigger: under the lock. */
inline wake_all(me, nolock) {
    if :: !nolock -> lock(me) :: else fi;
    notify_all(nf);
    notify_all(ne);
#ifdef ANY_ASYNC
    poke_publishers();  /* Waitable::wake_all pokes both keys */
    poke_polls();
#endif
    if :: !nolock -> signal_watchers(); unlock() :: else fi
}

/* Waiting::park, for an asynchronous call where the blocking one would sleep: under the
 * partition lock, AsyncWaits::park refuses if closing (the call ends MQ_CLOSED, the lock still
 * held), else parks the call unless it was made due during its run (then it runs again at
 * once); the run returns MQ_PENDING and unlocks. The completer runs it again once it is due
 * (poked, cancelled, closing) or its time came: the lock again, and the loop's next round. */
inline park(me, st, timed) {
#ifdef M_ASYNC_PARK_AFTER_UNLOCK
    atomic { unlock(); registered[me] = 0 };
#endif
    atomic {
        if
        :: aclosing -> st = CLOSED
        :: else ->
            if :: !adue[me] -> aparked[me] = 1 :: else fi;
#ifndef M_ASYNC_PARK_AFTER_UNLOCK
            unlock(); registered[me] = 0
#else
            skip
#endif
        fi
    }
#ifdef M_ASYNC_PARK_AFTER_UNLOCK
    if :: st == CLOSED -> lock(me) :: else fi
#endif
}

/* Waiting::wait, publisher side: returns st with the lock held. */
inline publisher_wait(me, st) {
    do
    :: d_step {  /* closed? the step (Partition::room_for), the token: one read of each */
            if
            :: closed -> st = CLOSED
            :: else -> if :: has_room -> st = OK :: cancelled[me] -> st = CANCELLED :: else -> st = FULL fi
            fi
        }
        if
        :: st != FULL -> break
        :: else ->
            if
            :: async_slot(me) ->
                park(me, st, 0);
                if :: st == CLOSED -> break :: else fi;
end_pub_parked: atomic {
                    (adue[me] || aclosing) && mu == FREE ->
                    mu = me; registered[me] = 1; aparked[me] = 0; adue[me] = 0
                }
            :: else ->
                /* Waiting::block: counted, then asleep with the lock released */
                atomic { publishers_waiting++; nf[me] = 1; unlock() }
end_pub_asleep: atomic { !nf[me] && mu == FREE -> mu = me; publishers_waiting-- }
            fi
        fi
    od
}

/* Partition::append, then announce(): true if a poll must be woken. */
inline append_and_announce(wake) {
    atomic {
        if
        :: cursors == 0 -> start++; end++  /* rule 8: trimmed as appended (Log::pass) */
        :: else -> end++
        fi;
        wake = pollers_waiting > 0
    };
    signal_watchers()
}

/* Publisher 0: MSGS single publishes (Partition::publish), waiting forever. */
proctype Publisher(byte me) {
    byte i = 0;
    mtype st;
    bool wake;
    do
    :: i < MSGS ->
        atomic { mu == FREE -> mu = me; registered[me] = 1 }  /* CancelScope, then the lock */
        publisher_wait(me, st);
        if
        :: st == OK -> append_and_announce(wake)
        :: else -> skip
        fi;
        atomic { unlock(); registered[me] = 0 }
        send_consumers(wake);
        wake = 0;
        if :: st != OK -> break :: else -> i++ fi
    :: else -> break
    od
}

/* Publisher 1: one batch of 2 records (Partition::publish_many): appends what fits, wakes the
 * consumers of what it appended before waiting for more room, announces the rest at the end. */
proctype BatchPublisher(byte me) {
    byte i = 0, unannounced = 0;
    mtype st = OK;
    bool wake;
    atomic { mu == FREE -> mu = me; registered[me] = 1 }  /* CancelScope, then the lock */
    do
    :: i < 2 ->
        if
        :: has_room -> skip
        :: else ->
            if
            :: unannounced > 0 ->
#ifndef M_NO_BATCH_WAKE
                wake = pollers_waiting > 0;  /* wake_consumers(): sent under the lock */
                signal_watchers();
                send_consumers(wake);
                wake = 0;
#endif
                unannounced = 0
            :: else -> skip
            fi;
            publisher_wait(me, st)
        fi;
        if
        :: st != OK -> break
        :: else -> append_and_announce(wake); wake = 0; unannounced++; i++
        fi
    :: else -> break
    od;
    if
    :: unannounced > 0 -> wake = pollers_waiting > 0; signal_watchers()
    :: else
    fi;
    atomic { unlock(); registered[me] = 0 }
    send_consumers(wake)
}

/* What a poll does with what it got (uses the caller's off, got, freed, n, wake, round,
 * carry: 1 + the offset its next poll acks, 0 if none). */
inline after_poll(me, g) {
        if
        :: got ->  /* Partition::ack: commit, trim, wake one publisher per freed slot */
            lock(me);
            d_step {
                if
                :: ack_ok(g, off) -> commit_ack(g, off, freed, n)
                :: else -> skip  /* refused */
                fi
            }
            unlock();
            send_publishers(n)
        :: got ->  /* Partition::nack, at once or delayed: rewind, wake the polls */
            lock(me);
            wake = 0;
            atomic {
                if
                :: !closed && sub[g] && next[g] > committed[g] ->
                    next[g] = committed[g]; expired[g] = 0;
                    if :: paused[g] = 1 :: skip fi;  /* a delayed nack pauses the group */
#ifndef M_NACK_NO_WAKE
                    wake = pollers_waiting > 0; n = 1  /* announce() */
#endif
                :: else -> skip
                fi
            }
            if :: n -> signal_watchers(); n = 0 :: else fi;
            unlock();
            send_consumers(wake);
            wake = 0
        :: got -> skip  /* kept: the lease will run out */
#ifdef ACK_POLL
        :: got && round < rounds(me) -> carry = off + 1  /* acked by the next poll: an ack+poll */
#endif
        fi;
        off = 0; got = 0
}

/* A poll of group g, rounds(me) times (Partition::poll with max 1, waiting forever); what it
 * gets it acks, nacks (at once or delayed), or keeps until its lease runs out. With -DACK_POLL it
 * may also ack it with its next poll (mq_group_ack_poll: Partition::poll with `ack`): the ack, its
 * trim and the step in one critical section, the publishers it owes (`owed`) sent without the
 * lock before the poll first blocks, or after the poll's unlock if it does not block. */
proctype Poller(byte me; byte g) {
    byte round = 0, off;
    mtype st;
    bool got, timed_lease, timed_pause, wake;
    byte freed, n, owed, carry;
    do
    :: round < rounds(me) ->
        round++;
        got = 0;
        /* CancelScope, then the lock; then an ack+poll's ack, its wake owed (Wakeup freed). One
         * step: taking the lock commutes with whatever the others do until the ack. */
        atomic {
            mu == FREE -> mu = me; registered[me] = 1;
            if
            :: carry ->
                if
                :: ack_ok(g, carry - 1) -> commit_ack(g, carry - 1, freed, owed)
                :: else -> st = REFUSED  /* the call returns: no poll, no wait */
                fi;
                carry = 0
            :: else
            fi;
            if :: st == REFUSED -> goto polled :: else fi
        }
        do  /* Waiting::wait, consumer side */
        :: /* closed? the step (under the lock): find the cursor, Cursor::expire_lease, hand
            * out, or note when the state changes by itself (change_in_ns); the token */
            d_step {
                if
                :: closed -> st = CLOSED
                :: !closed && !sub[g] -> st = NO_GROUP
                :: !closed && sub[g] ->
                    if
                    :: expired[g] && next[g] > committed[g] -> next[g] = committed[g]; expired[g] = 0
                    :: else
                    fi;
                    if
                    :: can_take(g) -> off = next[g]; next[g]++; expired[g] = 0; got = 1; st = OK
                    :: else ->
                        timed_lease = next[g] > committed[g]; timed_pause = paused[g];
                        if :: cancelled[me] -> st = CANCELLED :: else -> st = FULL fi
                    fi
                fi
            }
            if
            :: st != FULL -> timed_lease = 0; timed_pause = 0; break
#ifndef M_ACK_POLL_NO_PENDING_WAKE
            :: st == FULL && owed > 0 ->  /* `pending` owed: sent without the lock, look again */
                timed_lease = 0; timed_pause = 0;
                unlock();
                send_publishers(owed);
                lock(me)
#endif
            :: else ->
                if
                :: async_slot(me) ->  /* parked; its timer is the lease's or the pause's end */
                    park(me, st, timed_lease || timed_pause);
                    if :: st == CLOSED -> timed_lease = 0; timed_pause = 0; break :: else fi;
end_poll_parked:    atomic {
                        ((adue[me] || aclosing || timed_lease && expired[g] ||
                          timed_pause && !paused[g]) && mu == FREE) ->
                        mu = me; registered[me] = 1; aparked[me] = 0; adue[me] = 0;
                        timed_lease = 0; timed_pause = 0
                    }
                :: else ->
                    atomic { pollers_waiting++; ne[me] = 1; unlock() }
end_poll_asleep:    atomic {
                        ((!ne[me] || timed_lease && expired[g] || timed_pause && !paused[g]) &&
                         mu == FREE) ->
                        mu = me; ne[me] = 0; pollers_waiting--; timed_lease = 0; timed_pause = 0
                    }
                fi
            fi
        od;
polled:
        if
        :: atomic { owed == 0 -> unlock(); registered[me] = 0 }
        :: owed > 0 ->  /* Partition::poll: unlock, send what is still owed; then ~CancelScope */
            unlock();
#ifdef M_ACK_POLL_NO_WAKE_ON_RETURN
            owed = 0;
#else
            send_publishers(owed);
#endif
            registered[me] = 0
        fi;
        if
        :: st != OK -> break
        :: else -> skip
        fi;
        after_poll(me, g)
    :: else -> break
    od
}

#ifdef MEMBER
/* The member poll of slot 3 (mq_member::poll on its one partition, waiting forever): looks
 * without waiting, then watches the partition (Waitable::watchers) and looks again, then sleeps
 * on its Notifier until signalled, cancelled, closed, or its timer (next_change) fires. With
 * -DACK_POLL it may ack what it got with its next poll (mq_member_ack_poll): on its one
 * partition the ack rides with the first look (Partition::poll with `ack` and no wait), in the
 * look's critical section; the publishers it owes are sent after the look's unlock. */
proctype MemberPoller(byte me; byte g) {
    byte round = 0, off;
    mtype st;
    bool got, timed_lease, timed_pause, wake, fired;
    byte freed, n, owed, carry;
    do
    :: round < rounds(me) ->
        round++;
        got = 0;
        registered[me] = 1;  /* CancelScope on the Notifier */
        do
        :: /* before the checks: a signal from here on is kept */
#ifndef M_SIGNAL_RESET_LATE
            if :: watching -> atomic { nmu == FREE -> signalled = 0 } :: else fi;
#endif
            /* check(): closed; then poll_group with no wait: the same step as a poll's */
            lock(me);
            d_step {
#ifdef ACK_POLL
                if
                :: carry ->  /* the ack first, its wake owed (Wakeup freed) */
                    if
                    :: ack_ok(g, carry - 1) -> commit_ack(g, carry - 1, freed, owed)
                    :: else -> st = REFUSED
                    fi;
                    carry = 0
                :: else
                fi;
#endif
                if
                :: st == REFUSED -> skip  /* the call returns: no poll */
                :: st != REFUSED && closed -> st = CLOSED
                :: st != REFUSED && !closed && !sub[g] -> st = NO_GROUP
                :: st != REFUSED && !closed && sub[g] ->
                    if
                    :: expired[g] && next[g] > committed[g] -> next[g] = committed[g]; expired[g] = 0
                    :: else
                    fi;
                    if
                    :: can_take(g) -> off = next[g]; next[g]++; expired[g] = 0; got = 1; st = OK
                    :: else ->  /* next_change */
                        timed_lease = next[g] > committed[g]; timed_pause = paused[g];
                        if :: cancelled[me] -> st = CANCELLED :: else -> st = FULL fi
                    fi
                fi
            }
            unlock();
#ifdef ACK_POLL
            /* Partition::poll: a look does not wait (Waiting::wait returns at wait.over() before
             * `pending`), so what it owes goes after its unlock */
#ifdef M_ACK_POLL_NO_WAKE_ON_RETURN
            owed = 0;
#else
            if :: owed > 0 -> send_publishers(owed) :: else fi;
#endif
#endif
#ifdef M_SIGNAL_RESET_LATE
            if :: watching -> atomic { nmu == FREE -> signalled = 0 } :: else fi;
#endif
            if
            :: st != FULL -> timed_lease = 0; timed_pause = 0; break
            :: st == FULL && !watching -> lock(me); watching = 1; unlock()  /* look once more */
            :: st == FULL && watching ->
                atomic { nmu == FREE -> nmu = me };
#ifdef ASYNC
                /* mq_member::park, under the Notifier's lock: parked on its key (the watch
                 * kept for the next run) unless signalled or closed; AsyncWaits::park refuses
                 * when closing and does not park a call made due during its run. The completer
                 * runs it again once due, closing, or its timer (next_change) fired. */
                if
                :: !signalled && !closed ->
                    atomic {
                        if
                        :: aclosing -> st = CLOSED
                        :: else -> if :: !adue[me] -> aparked[me] = 1 :: else fi
                        fi;
                        nmu = FREE
                    };
                    if :: st == CLOSED -> timed_lease = 0; timed_pause = 0; break :: else fi;
end_member_parked:  atomic {
                        adue[me] || aclosing || timed_lease && expired[g] || timed_pause && !paused[g] ->
                        aparked[me] = 0; adue[me] = 0; timed_lease = 0; timed_pause = 0
                    }
                :: else -> nmu = FREE; timed_lease = 0; timed_pause = 0
                fi
#else
                do
                :: !signalled && !cancelled[me] && !closed ->
                    atomic { nsleep = 1; nmu = FREE }
end_member_asleep:  atomic {
                        ((!nsleep || timed_lease && expired[g] || timed_pause && !paused[g]) &&
                         nmu == FREE) ->
                        nmu = me; fired = nsleep; nsleep = 0
                    }
                    if :: fired -> fired = 0; break :: else fi
                :: else -> break
                od;
                nmu = FREE; timed_lease = 0; timed_pause = 0
#endif
            fi
        od;
        lock(me); watching = 0; unlock();  /* Watching's destructor: unwatch */
        registered[me] = 0;
        if
        :: st != OK -> break
        :: else -> skip
        fi;
        after_poll(me, g)
    :: else -> break
    od
}
#endif

/* Time passing: a lease runs out, a delayed nack's pause ends. */
active proctype Clock() {
end_clock:
    do
    :: atomic { next[0] > committed[0] && !expired[0] -> expired[0] = 1 }
    :: atomic { next[1] > committed[1] && !expired[1] -> expired[1] = 1 }
    :: atomic { paused[0] -> paused[0] = 0 }
    :: atomic { paused[1] -> paused[1] = 0 }
    od
}

/* Whatever else a process may do meanwhile, up to ADMIN_OPS times: unsubscribe a group, seek a
 * group to the end, close the broker, trigger a waiter's cancel token. */
active proctype Admin() {
    byte ops = 0, g, k, freed, n;
    bool wake;
end_admin:
    do
    :: ops < ADMIN_OPS ->
        ops++;
        if
        :: /* Partition::remove_group: trim_and_wake(true) */
            if :: g = 0 :: g = 1 fi;
            lock(5);
            d_step {
                if
                :: sub[g] ->
                    sub[g] = 0; committed[g] = 0; next[g] = 0; expired[g] = 0; paused[g] = 0;
                    wake = pollers_waiting > 0;
                    trim(freed);
                    publishers_to_wake(freed, n);
#ifndef BUG_LAST_GROUP_WAKES_FREED
                    /* without cursors every publisher has room (rule 8): wake them all */
                    if :: cursors == 0 && publishers_waiting > 0 -> n = ALL :: else fi;
#endif
                    freed = 0; k = 1
                :: else -> skip
                fi
            }
            if :: k -> signal_watchers(); k = 0 :: else fi;  /* announce() */
            unlock();
            send_consumers(wake);
            send_publishers(n);
            wake = 0; g = 0
        :: /* Partition::seek to the end: committed = next = end; trim_and_wake(true) */
            if :: g = 0 :: g = 1 fi;
            lock(5);
            d_step {
                if
                :: !closed && sub[g] ->
                    committed[g] = end; next[g] = end; expired[g] = 0; paused[g] = 0;
                    wake = pollers_waiting > 0;
                    trim(freed);
                    publishers_to_wake(freed, n);
                    freed = 0; k = 1
                :: else -> skip
                fi
            }
            if :: k -> signal_watchers(); k = 0 :: else fi;  /* announce() */
            unlock();
            send_consumers(wake);
            send_publishers(n);
            wake = 0; g = 0
        :: /* mq_broker::close: the flag, then each partition's wake_all */
            closed = 1;
#ifdef M_CLOSE_NO_LOCK
            wake_all(5, 1)
#else
            wake_all(5, 0)
#endif
#ifdef MEMBER
            ;  /* Topic::wake_members: every member's Notifier::signal */
#ifdef ASYNC
            member_signal()
#else
            atomic { nmu == FREE -> signalled = 1; nsleep = 0 }
#endif
#endif
#ifdef ANY_ASYNC
            ;  /* AsyncWaits::close: parked and due calls complete with MQ_CLOSED */
            aclosing = 1
#endif
        :: /* mq_cancel::trigger on waiter k's token: the flag, then where->wake_all() */
            if :: k = 0 :: k = 1 :: k = 2 :: k = 3 fi;
            cancelled[k] = 1;
            if
#ifdef MEMBER
            :: registered[k] && k == 3 ->  /* where: the member's Notifier; its wake_all */
                atomic { nmu == FREE -> nsleep = 0 }
            :: registered[k] && k != 3 ->
#else
            :: registered[k] ->
#endif
#ifdef M_CANCEL_NO_LOCK
                wake_all(5, 1)
#else
                wake_all(5, 0)
#endif
            :: else -> skip
            fi;
            /* the token's asynchronous call (mq_cancel::async): AsyncWake::wake, made due */
#ifdef ANY_ASYNC
            atomic { if :: async_slot(k) -> aparked[k] = 0; adue[k] = 1 :: else fi };
#endif
            k = 0
        fi
    :: else -> break
    od
}

/* Nothing can move: every sleeper must have a reason to sleep. */
#define pub_ok(p) (!nf[p] || !closed && !cancelled[p] && !has_room)
#define poll_ok(c, g) (!ne[c] || !closed && !cancelled[c] && sub[g] && !can_take(g))
/* A parked asynchronous call has nothing to run for: nothing it could use, not cancelled, not
 * closing (a due one is not stuck: the completer runs it). */
#define apoll_ok(c, g) (!aparked[c] || !aclosing && !closed && !cancelled[c] && sub[g] && !can_take(g))
#define apub_ok(p) (!aparked[p] || !aclosing && !closed && !cancelled[p] && !has_room)
#define async_ok (apoll_ok(3, POLL2_GROUP) && apub_ok(0))
#ifdef MEMBER
#define member_ok(c, g) (!nsleep || !closed && !cancelled[c] && sub[g] && !can_take(g))
#define stable_ok (mu == FREE && nmu == FREE && pub_ok(0) && pub_ok(1) && poll_ok(2, 0) && member_ok(3, POLL2_GROUP) && async_ok)
#else
#define stable_ok (mu == FREE && pub_ok(0) && pub_ok(1) && poll_ok(2, 0) && poll_ok(3, POLL2_GROUP) && async_ok)
#endif

active proctype Watchdog() {
end_watch:
    timeout -> assert(stable_ok && invariant)
}

init {
    atomic {
        sub[0] = 1;
        sub[1] = 1;
        run Publisher(0);
        run BatchPublisher(1);
        run Poller(2, 0);
#ifdef MEMBER
        run MemberPoller(3, POLL2_GROUP)
#else
        run Poller(3, POLL2_GROUP)
#endif
    }
}
