#!/usr/bin/env bash
# A real single-node Kafka (KRaft: one process is broker and controller) on loopback, for the
# tests against a real broker. Kafka's jars come from Maven Central through
# tests/kafka/server/pom.xml and run on the machine's JDK.
#
#   scripts/kafka-server.sh start  [dir]   resolve the jars once (kept in dir/lib), format a fresh
#                                          log directory, start the broker, wait until it answers a
#                                          metadata request; prints the bootstrap address
#                                          (127.0.0.1:PORT) as the last line of stdout and writes it
#                                          to dir/bootstrap. Already running: prints it again.
#   scripts/kafka-server.sh stop   [dir]   TERM, a bounded wait, then KILL; nothing running is fine
#   scripts/kafka-server.sh status [dir]   exit 0 and the address when it runs and answers
#   scripts/kafka-server.sh topic NAME PARTITIONS [dir]   create a topic (replication factor 1)
#
# dir defaults to build-kafka/ in the repository root. The broker's log is dir/kafka.log, its
# pid dir/kafka.pid. MQ_KAFKA_PORT picks the client port (default: the first free one from
# 19092; the controller takes the next free one). MQ_KAFKA_START_TIMEOUT (default 90) and
# MQ_KAFKA_STOP_TIMEOUT (default 30) bound the waits, in seconds.
set -euo pipefail

root=$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)
source "$root/scripts/lib/setup.sh"

usage() { sed -n '2,18p' "$0" >&2; }

# Progress goes to stderr: stdout is kept for the bootstrap address.
say() { printf 'kafka-server: %s\n' "$*" >&2; }

set_dir() {
    dir=${1:-$root/build-kafka}
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    pidfile=$dir/kafka.pid
    logfile=$dir/kafka.log
}

# The error lines with the first line after each (often the exception that says why), then
# the end: a failed startup's cause is usually far above its last lines.
log_tail() {
    [ -s "$logfile" ] || return 0
    if grep -qE '^\[[^]]*\] (ERROR|FATAL) ' "$logfile"; then
        say "errors in $logfile:"
        grep -A1 -E '^\[[^]]*\] (ERROR|FATAL) ' "$logfile" | head -n 20 >&2
    fi
    say "last lines of $logfile:"
    tail -n 20 "$logfile" >&2
}

# The broker's pid when the pid file names a live kafka.Kafka (not a reused pid).
running_pid() {
    local pid
    [ -s "$pidfile" ] || return 1
    pid=$(<"$pidfile")
    [[ $pid =~ ^[0-9]+$ ]] || return 1
    tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q 'kafka\.Kafka' || return 1
    echo "$pid"
}

# Alive and not a zombie: a broker that exited while this shell is still its parent stays a
# zombie, which kill -0 would still find.
alive() {
    local state
    state=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1) || return 1
    [ -n "$state" ] && [ "$state" != Z ]
}

port_in_use() {
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

free_port_from() {
    local port=$1
    while port_in_use "$port"; do
        port=$((port + 1))
        if [ "$port" -gt 65535 ]; then
            say "no free port from $1"
            return 1
        fi
    done
    echo "$port"
}

# Answers a metadata request naming this broker: what a client needs before it can produce.
answers() {
    kcat -L -b "$1" -m 2 2>/dev/null | grep -q '^ *1 brokers:'
}

# The jars, resolved once: a change of the pom resolves them again.
resolve_jars() {
    local pom=$root/tests/kafka/server/pom.xml stamp
    stamp=$(sha256sum "$pom" | cut -d' ' -f1)
    if [ -f "$dir/lib/.pom-sha256" ] && [ "$(<"$dir/lib/.pom-sha256")" = "$stamp" ]; then
        return 0
    fi
    ensure_tools mvn java >&2
    say "resolving Kafka's jars with Maven into $dir/lib"
    rm -rf "$dir/lib"
    local start=$SECONDS
    # Maven 3.8's -q still prints colour resets: strip them.
    mvn -q -B -ntp -f "$pom" dependency:copy-dependencies \
        -DoutputDirectory="$dir/lib" -DincludeScope=runtime 2>&1 |
        sed 's/\x1b\[[0-9;]*m//g' >&2
    echo "$stamp" >"$dir/lib/.pom-sha256"
    say "jars resolved in $((SECONDS - start)) s ($(du -sh "$dir/lib" | cut -f1))"
}

write_config() {
    local port=$1 cport=$2
    cat >"$dir/server.properties" <<EOF
# Written by scripts/kafka-server.sh: one process is the whole cluster.
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$cport
listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport
advertised.listeners=PLAINTEXT://127.0.0.1:$port
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
log.dirs=$dir/data
num.partitions=1
default.replication.factor=1
min.insync.replicas=1
offsets.topic.replication.factor=1
# One partition for the group offsets: the first group join does not wait for 50 to be created.
offsets.topic.num.partitions=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
group.initial.rebalance.delay.ms=0
# Lets tests choose short consumer sessions, so a killed member leaves its group quickly.
group.min.session.timeout.ms=1000
auto.create.topics.enable=false
delete.topic.enable=true
EOF
    cat >"$dir/log4j.properties" <<'EOF'
log4j.rootLogger=INFO, out
log4j.appender.out=org.apache.log4j.ConsoleAppender
log4j.appender.out.layout=org.apache.log4j.PatternLayout
log4j.appender.out.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.kafka.request.logger=WARN
log4j.logger.state.change.logger=WARN
EOF
    cat >"$dir/tools-log4j.properties" <<'EOF'
log4j.rootLogger=WARN, err
log4j.appender.err=org.apache.log4j.ConsoleAppender
log4j.appender.err.Target=System.err
log4j.appender.err.layout=org.apache.log4j.PatternLayout
log4j.appender.err.layout.ConversionPattern=[%d] %p %m (%c)%n
EOF
}

# A KRaft cluster id: 16 random bytes in URL-safe base64 without padding (Kafka's Uuid form).
# Like Kafka's Uuid.randomUuid, never one that starts with '-': the tool's argument parser takes
# such a value for an option (1 run in 64 failed that way before).
cluster_id() {
    local id
    while :; do
        id=$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=\n')
        [[ $id == -* ]] || break
    done
    printf '%s' "$id"
}

# The JVM's command line, in the array jvm, for log4j configuration $1.
jvm_for() {
    jvm=(java -Xms128m -Xmx512m -Djava.awt.headless=true -Dlog4j.configuration="file:$1"
        -cp "$dir/lib/*")
}

# A short-lived tool: the client compiler and the serial collector start it sooner.
kafka_java() {
    local jvm
    jvm_for "$1"
    "${jvm[@]}" -XX:TieredStopAtLevel=1 -XX:+UseSerialGC "${@:2}"
}

# Formats a new cluster on ports $1 (clients) and $2 (controller), starts it and waits for it to
# answer. Returns 0 when ready, 3 when the broker could not bind a port (taken between the check
# and the bind), 1 on any other failure; the log's tail is printed on failure.
launch() {
    local port=$1 cport=$2 pid jvm
    write_config "$port" "$cport"
    # Every start is a new cluster: tests see no topic or offset left by an earlier run.
    rm -rf "$dir/data" "$dir/bootstrap"
    if ! kafka_java "$dir/tools-log4j.properties" kafka.tools.StorageTool format \
        --cluster-id="$(cluster_id)" -c "$dir/server.properties" >"$logfile" 2>&1; then
        say "formatting the storage failed"
        log_tail
        return 1
    fi

    local started=$SECONDS deadline=$((SECONDS + ${MQ_KAFKA_START_TIMEOUT:-90}))
    # A simple command, not a function: $! is then the JVM's pid, not a subshell's.
    jvm_for "$dir/log4j.properties"
    "${jvm[@]}" kafka.Kafka "$dir/server.properties" </dev/null >>"$logfile" 2>&1 &
    pid=$!
    echo "$pid" >"$pidfile"
    say "started pid $pid, waiting for 127.0.0.1:$port to answer"
    until answers "127.0.0.1:$port"; do
        if ! alive "$pid"; then
            rm -f "$pidfile"
            if grep -q 'failed to bind to .*Address already in use' "$logfile"; then
                say "a port was taken before the broker could bind it"
                return 3
            fi
            say "the broker exited before answering"
            log_tail
            return 1
        fi
        if [ "$SECONDS" -ge "$deadline" ]; then
            say "no answer after ${MQ_KAFKA_START_TIMEOUT:-90} s"
            log_tail
            cmd_stop "$dir" >/dev/null 2>&1 || true
            return 1
        fi
        sleep 0.5 # between polls; the wait itself ends on the broker's answer
    done
    echo "127.0.0.1:$port" >"$dir/bootstrap"
    say "ready in $((SECONDS - started)) s (log: $logfile)"
}

cmd_start() {
    set_dir "${1:-}"
    local pid
    if pid=$(running_pid) && [ -s "$dir/bootstrap" ] && answers "$(<"$dir/bootstrap")"; then
        say "already running (pid $pid)"
        cat "$dir/bootstrap"
        return 0
    fi
    # A pid file whose broker died, or one that stopped answering: start afresh.
    cmd_stop "$dir" >/dev/null 2>&1 || {
        say "could not stop the broker of pid file $pidfile"
        return 1
    }
    if [ -n "${MQ_KAFKA_PORT:-}" ] && port_in_use "$MQ_KAFKA_PORT"; then
        say "MQ_KAFKA_PORT=$MQ_KAFKA_PORT is in use"
        return 1
    fi
    ensure_tools kcat java >&2
    resolve_jars

    local attempt port cport rc base=19092
    for attempt in 1 2 3; do
        port=${MQ_KAFKA_PORT:-$(free_port_from "$base")}
        cport=$(free_port_from $((port + 1)))
        rc=0
        launch "$port" "$cport" || rc=$?
        if [ "$rc" -eq 0 ]; then
            echo "127.0.0.1:$port"
            return 0
        fi
        # A fixed port stays taken: only a chosen one is worth choosing again.
        if [ "$rc" -ne 3 ] || [ -n "${MQ_KAFKA_PORT:-}" ]; then
            [ "$rc" -ne 3 ] || log_tail
            return 1
        fi
        # Past both: a port bound but not listening looks free to the probe.
        base=$((cport + 1))
        say "attempt $attempt failed, trying from port $base"
    done
    log_tail
    return 1
}

cmd_stop() {
    set_dir "${1:-}"
    local pid
    if ! pid=$(running_pid); then
        rm -f "$pidfile" "$dir/bootstrap"
        say "not running"
        return 0
    fi
    kill -TERM "$pid" 2>/dev/null || true
    local deadline=$((SECONDS + ${MQ_KAFKA_STOP_TIMEOUT:-30}))
    while alive "$pid" && [ "$SECONDS" -lt "$deadline" ]; do
        sleep 0.2
    done
    if alive "$pid"; then
        say "pid $pid still there after ${MQ_KAFKA_STOP_TIMEOUT:-30} s: KILL"
        kill -KILL "$pid" 2>/dev/null || true
        deadline=$((SECONDS + 10))
        while alive "$pid" && [ "$SECONDS" -lt "$deadline" ]; do
            sleep 0.2
        done
    fi
    if alive "$pid"; then
        say "pid $pid did not exit"
        return 1
    fi
    rm -f "$pidfile" "$dir/bootstrap"
    say "stopped pid $pid"
}

cmd_status() {
    set_dir "${1:-}"
    local pid bootstrap
    if ! pid=$(running_pid); then
        say "not running"
        return 1
    fi
    bootstrap=$(cat "$dir/bootstrap" 2>/dev/null || true)
    if [ -z "$bootstrap" ] || ! answers "$bootstrap"; then
        say "pid $pid is not answering${bootstrap:+ on $bootstrap}"
        return 1
    fi
    say "running, pid $pid"
    echo "$bootstrap"
}

cmd_topic() {
    if [ $# -lt 2 ] || ! [[ $2 =~ ^[1-9][0-9]*$ ]]; then
        usage
        return 2
    fi
    local name=$1 partitions=$2
    cmd_status "${3:-}" >/dev/null 2>&1 || {
        say "no broker answering in $dir: start one first"
        return 1
    }
    kafka_java "$dir/tools-log4j.properties" org.apache.kafka.tools.TopicCommand \
        --bootstrap-server "$(<"$dir/bootstrap")" --create --topic "$name" \
        --partitions "$partitions" --replication-factor 1 >&2
}

case ${1:-} in
    start | stop | status)
        [ $# -le 2 ] || {
            usage
            exit 2
        }
        "cmd_$1" "${2:-}"
        ;;
    topic)
        [ $# -ge 3 ] && [ $# -le 4 ] || {
            usage
            exit 2
        }
        cmd_topic "${@:2}"
        ;;
    -h | --help)
        usage
        ;;
    *)
        usage
        exit 2
        ;;
esac
