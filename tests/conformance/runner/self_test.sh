#!/bin/sh
# The runner's checks of its testee and of the expected-failures list.
#   self_test.sh RUNNER C_TESTEE CONFORMANCE_DIR
runner=$1 testee=$2 dir=$3
fake="sh $dir/runner/fake_testee.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0

# expect EXIT_STATUS TEXT RUNNER_ARGS...: the runner must exit so and print TEXT.
expect() {
    want=$1 text=$2
    shift 2
    out=$("$runner" "$@" 2>&1)
    rc=$?
    if [ "$rc" -ne "$want" ] || ! printf '%s\n' "$out" | grep -qF -- "$text"; then
        echo "WRONG: mq_conformance $* exited $rc (expected $want, with '$text'):"
        printf '%s\n' "$out" | sed 's/^/    /'
        failures=$((failures + 1))
    fi
}

printf 'broker_new\ntopic_create t\nsubscribe t g\n' >"$tmp/setup"
scenario() { # scenario NAME LINES...: writes $tmp/NAME.mqs after the setup
    name=$1
    shift
    { cat "$tmp/setup"; printf '%s\n' "$@"; } >"$tmp/$name.mqs"
}

# A testee that dies mid-scenario fails the line it was running: this one gets three requests
# (hello, broker_new, topic_create) and then its input ends.
three="sh -c 'for i in 1 2 3; do read -r l; echo \"\$l\"; done | $testee'"
expect 1 "push_step.mqs:5: subscription_open" --testee "$three" "$dir/push_step.mqs"
# (Whether the runner then meets its closed input or its closed output is a race: both say so.)
expect 1 "(exit status 0)" --testee "$three" "$dir/push_step.mqs"
# One that hangs is killed after the wait limit.
expect 1 "did not answer 'broker_new' in time" --wait-limit-ms 300 \
    --testee "sh -c 'read l; echo MQ_OK protocol=1; exec sleep 60'" "$dir/push_step.mqs"
# One that is not a testee at all.
expect 1 "testee sent 'hello' where a status was due" --testee "sh -c 'read l; echo hello; read l'" "$dir/push_step.mqs"
expect 1 "exit status 127" --testee "/nonexistent/testee" "$dir/push_step.mqs"
# Replies a correct testee never sends.
scenario lies 'subscription_open s t g'
expect 1 "released 1 times after mq_subscription_open returned MQ_OK, not 0" --testee "$fake frees" "$tmp/lies.mqs"
scenario lies 'member_join m t g' 'rebalances m -> 1'
expect 1 "on_rebalance was given the handle of 'other', not of 'm'" --testee "$fake handle" "$tmp/lies.mqs"
scenario lies 'poll t g 0'
expect 1 "testee reported count=2 with 1 messages" --testee "$fake count" "$tmp/lies.mqs"
expect 1 "testee sent 'what' where a status was due" --testee "$fake garbage" "$tmp/lies.mqs"
expect 1 "testee: no polls here" --testee "$fake refuse" "$tmp/lies.mqs"
expect 1 "is not percent-encoded" --testee "$fake badcode" "$tmp/lies.mqs"
scenario lies 'poll t g 0 -> 0:a'
expect 1 "expected [0:a], got [0:<no payload>]" --testee "$fake nopayload" "$tmp/lies.mqs"
expect 0 "1 of 1 scenarios as expected" --testee "$fake none" "$tmp/lies.mqs"
scenario lies 'publish t a'
expect 1 "lies.mqs:4: publish t a" --testee "$fake exit" "$tmp/lies.mqs"
expect 1 "lies.mqs: at the end: the testee exited with status 1" --testee "$fake leak" "$tmp/lies.mqs"

# The first line must make the broker.
printf 'topic_create t\n' >"$tmp/nobroker.mqs"
expect 1 "nobroker.mqs:1: topic_create t" --testee "$testee" "$tmp/nobroker.mqs"
printf '# nothing\n' >"$tmp/empty.mqs"
expect 1 "at the end: the scenario has no 'broker_new' line" --testee "$testee" "$tmp/empty.mqs"

# The scenarios the spec names must be there (the directory listing drives the suite).
for f in reference_trace push_step; do
    [ -f "$dir/$f.mqs" ] || { echo "WRONG: $dir/$f.mqs is missing"; failures=$((failures + 1)); }
done

# Quotes protect spaces and '#', open anywhere in a token, and "" is an empty word.
scenario lexing '  publish t "a b" key="x # y"   # a comment' 'publish_batch t k:"q r" ""' \
    'poll t g 0 -> "0:a b" "1:q r" 2: keys="x # y",k,-   # another'
expect 0 "PASS lexing" --testee "$testee" "$tmp/lexing.mqs"

# A binding may put its own prefix before the library's detail: error= compares the end.
scenario suffix 'ack t g 0 0 -> MQ_ERR_NOT_IN_FLIGHT error="(nothing is)"'
expect 0 "PASS suffix" --testee "$testee" "$tmp/suffix.mqs"

# Expected failures: a listed scenario that fails is fine, one that passes fails the run, an
# unlisted failure fails it, and the list itself must name real scenarios with reasons.
scenario passes 'publish t a -> offset=0'
scenario fails 'publish t a -> offset=7'
printf '# comment\nfails  the reason\n' >"$tmp/xfail"
expect 0 "XFAIL fails (expected: the reason)" --testee "$testee" --expected-failures "$tmp/xfail" "$tmp/fails.mqs" "$tmp/passes.mqs"
printf 'passes the reason\n' >"$tmp/xpass"
expect 1 "FAIL passes: passed, but $tmp/xpass lists it as failing (the reason): remove it from the list" \
    --testee "$testee" --expected-failures "$tmp/xpass" "$tmp/passes.mqs"
expect 1 "FAIL fails" --testee "$testee" --expected-failures "$tmp/xpass" "$tmp/fails.mqs"
printf 'nosuch the reason\n' >"$tmp/unknown"
expect 2 "no scenario $tmp/nosuch.mqs" --testee "$testee" --expected-failures "$tmp/unknown" "$tmp/fails.mqs"
printf 'fails\n' >"$tmp/noreason"
expect 2 "'fails' needs a reason" --testee "$testee" --expected-failures "$tmp/noreason" "$tmp/fails.mqs"
printf 'fails a\nfails b\n' >"$tmp/twice"
expect 2 "'fails' is listed twice" --testee "$testee" --expected-failures "$tmp/twice" "$tmp/fails.mqs"
expect 1 "1 of 2 scenarios as expected" --testee "$testee" "$tmp/fails.mqs" "$tmp/passes.mqs"
expect 2 "--testee is required" "$tmp/passes.mqs"

if [ "$failures" -ne 0 ]; then
    echo "$failures self-test(s) failed"
    exit 1
fi
echo "all runner self-tests passed"
