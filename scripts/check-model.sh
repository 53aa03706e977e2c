#!/usr/bin/env bash
# Checks the wait-and-wake protocol model (tests/model/wake.pml, README.md there) with spin.
#
#   scripts/check-model.sh     exhaustive safety search of each configuration below (no waiter
#                              asleep next to room or messages it could use, no deadlock, the
#                              log invariant), then each mutant, which spin must catch
#
# Installs spin (Debian package) if missing. Fails on any error in the model, and on any mutant
# spin does NOT catch (the check cannot pass vacuously). Work files go to build-model/.
set -euo pipefail

cd "$(dirname "$(readlink -f "$0")")/.."
if ! command -v spin > /dev/null; then
    echo "== installing spin"
    sudo_cmd=()
    [ "$(id -u)" -ne 0 ] && sudo_cmd=(sudo)
    if ! "${sudo_cmd[@]}" apt-get install -y spin; then
        "${sudo_cmd[@]}" apt-get update
        "${sudo_cmd[@]}" apt-get install -y spin
    fi
fi
command -v gcc > /dev/null || { echo "check-model.sh needs gcc" >&2; exit 1; }

model=$PWD/tests/model/wake.pml
out=build-model
mkdir -p "$out"

# run <name> <spin -D flags...>: exhaustive safety search; prints the error count (or "incomplete").
run() {
    local name=$1
    shift
    local dir=$out/$name
    rm -rf "$dir"
    mkdir -p "$dir"
    (
        cd "$dir"
        cp "$model" wake.pml  # a counterexample's trail (wake.pml.trail) lands next to it
        spin "$@" -a wake.pml > spin.log
        # COLLAPSE: state compression; MEMLIM: a search that outgrows it is reported incomplete.
        gcc "${PAN_OPT:--O2}" -w -DSAFETY -DCOLLAPSE -DMEMLIM=2000 -o pan pan.c
        start=$(date +%s.%N)
        ./pan -m200000 > pan.log 2>&1 || true
        end=$(date +%s.%N)
        states=$(grep -Eo '[0-9.e+]+ states, stored' pan.log | awk '{print $1}')
        errors=$(grep -Eo 'errors: [0-9]+' pan.log | awk '{print $2}')
        incomplete=0
        grep -q 'reached -DMEMLIM bound\|max search depth too small' pan.log && incomplete=1
        printf '%s %s %s %.1f\n' "${errors:-?}" "$incomplete" "${states:-?}" \
            "$(awk "BEGIN {print $end - $start}")"
    )
}

failed=0
echo "== the model (exhaustive; every configuration must have 0 errors)"
# Each line: a name and its -D flags (see README.md for what each explores).
while read -r name flags; do
    read -r errors incomplete states secs < <(run "$name" $flags)
    printf '   %-18s %-74s states %-10s %5s s  errors %s\n' "$name" "$flags" "$states" "$secs" "$errors"
    if [ "$errors" != 0 ] || [ "$incomplete" != 0 ]; then
        echo "   FAILED: $name (errors $errors, incomplete $incomplete): see $out/$name/pan.log;" \
            "replay with: cd $out/$name && spin -t -p $flags wake.pml" >&2
        failed=1
    fi
done << 'LIST'
two-groups        -DACK_POLL -DCAP=1 -DMSGS=1 -DROUNDS=2 -DADMIN_OPS=1
one-group         -DACK_POLL -DCAP=1 -DMSGS=1 -DROUNDS=2 -DADMIN_OPS=1 -DPOLL2_GROUP=0
capacity-2        -DCAP=2 -DMSGS=2 -DROUNDS=1 -DADMIN_OPS=1
two-admin-ops     -DCAP=1 -DMSGS=1 -DROUNDS=1 -DADMIN_OPS=2
member            -DMEMBER -DCAP=1 -DMSGS=1 -DROUNDS=1 -DADMIN_OPS=1
member-one-group  -DMEMBER -DCAP=1 -DMSGS=1 -DROUNDS=1 -DADMIN_OPS=1 -DPOLL2_GROUP=0
member-ack-poll   -DMEMBER -DACK_POLL -DCAP=1 -DMSGS=1 -DROUNDS=1 -DROUNDS2=2 -DADMIN_OPS=1
async             -DASYNC -DCAP=1 -DMSGS=1 -DROUNDS=1 -DADMIN_OPS=1
async-one-group   -DASYNC -DCAP=1 -DMSGS=1 -DROUNDS=1 -DADMIN_OPS=1 -DPOLL2_GROUP=0
async-ack-poll    -DASYNC -DACK_POLL -DCAP=1 -DMSGS=1 -DROUNDS=1 -DROUNDS2=2 -DADMIN_OPS=1
async-publisher   -DASYNC -DASYNC_PUB -DCAP=1 -DMSGS=1 -DROUNDS=2 -DADMIN_OPS=1
async-member      -DMEMBER -DASYNC -DCAP=1 -DMSGS=1 -DROUNDS=1 -DADMIN_OPS=1
async-member-one  -DMEMBER -DASYNC -DCAP=1 -DMSGS=1 -DROUNDS=1 -DADMIN_OPS=1 -DPOLL2_GROUP=0
LIST

echo "== mutants (each must be caught: errors > 0)"
# A mutant's counterexample comes within a few thousand states: no need to optimise its checker.
while read -r name flags; do
    read -r errors incomplete states secs < <(PAN_OPT=-O0 run "$name" $flags)
    printf '   %-26s %-82s errors %s\n' "$name" "$flags" "$errors"
    if [ "$errors" = 0 ] || [ "$errors" = "?" ]; then
        echo "   FAILED: mutant $name NOT caught: the model no longer checks what it claims" >&2
        failed=1
    fi
done << 'LIST'
no-batch-wake             -DM_NO_BATCH_WAKE -DMSGS=1 -DROUNDS=1 -DADMIN_OPS=0
consumers-wake-one        -DM_CONSUMERS_WAKE_ONE -DMSGS=1 -DROUNDS=1 -DADMIN_OPS=0
close-without-lock        -DM_CLOSE_NO_LOCK -DMSGS=1 -DROUNDS=1 -DADMIN_OPS=1
cancel-without-lock       -DM_CANCEL_NO_LOCK -DMSGS=1 -DROUNDS=1 -DADMIN_OPS=1
nack-without-wake         -DM_NACK_NO_WAKE -DMSGS=1 -DROUNDS=1 -DADMIN_OPS=0 -DPOLL2_GROUP=0
last-group-wakes-freed    -DBUG_LAST_GROUP_WAKES_FREED -DMSGS=1 -DROUNDS=1 -DADMIN_OPS=2
no-signal-watchers        -DMEMBER -DM_NO_SIGNAL_WATCHERS -DMSGS=1 -DROUNDS=1 -DADMIN_OPS=0
signal-reset-late         -DMEMBER -DM_SIGNAL_RESET_LATE -DMSGS=1 -DROUNDS=1 -DADMIN_OPS=0
ack-poll-no-pending-wake  -DACK_POLL -DM_ACK_POLL_NO_PENDING_WAKE -DMSGS=1 -DROUNDS=2 -DADMIN_OPS=0
ack-poll-no-return-wake   -DACK_POLL -DM_ACK_POLL_NO_WAKE_ON_RETURN -DMSGS=1 -DROUNDS=2 -DROUNDS2=1 -DADMIN_OPS=1
member-ack-poll-no-wake   -DMEMBER -DACK_POLL -DM_ACK_POLL_NO_WAKE_ON_RETURN -DMSGS=1 -DROUNDS=1 -DROUNDS2=2 -DADMIN_OPS=0
async-no-poke             -DASYNC -DM_ASYNC_NO_POKE -DMSGS=1 -DROUNDS=1 -DADMIN_OPS=0
async-park-after-unlock   -DASYNC -DM_ASYNC_PARK_AFTER_UNLOCK -DMSGS=1 -DROUNDS=1 -DADMIN_OPS=0
async-pub-no-poke         -DASYNC -DASYNC_PUB -DM_ASYNC_PUB_NO_POKE -DMSGS=1 -DROUNDS=2 -DADMIN_OPS=0
async-member-no-poke      -DMEMBER -DASYNC -DM_ASYNC_MEMBER_NO_POKE -DMSGS=1 -DROUNDS=1 -DADMIN_OPS=0
LIST

if [ "$failed" != 0 ]; then
    echo "== model check FAILED" >&2
    exit 1
fi
echo "== model check passed"
