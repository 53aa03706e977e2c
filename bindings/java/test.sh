#!/usr/bin/env bash
# Every test of the Java binding, from a fresh clone: installs what is missing (a JDK, Maven,
# CMake, a C++ compiler, SWIG; apt-get update only when something is), then `mvn verify`:
# CMake runs SWIG and builds the JNI library with the core linked in, javac compiles with
# -Xlint:all -Werror, JUnit runs the suite (conformance scripts, stress, interrupts, close
# orders, JVM exit, the reference trace against the C demo), and Javadoc is checked with
# doclint. Then no test JVM may have reported a JNI misuse (-Xcheck:jni). Then the README's
# route for a user's project: `mvn install` into an empty local repository, the jar holding both
# licenses, and src/it/readme (a separate project on the README's coordinates whose code is the
# README's Java blocks) built and run against it. The benchmark module must build. Last, the Kafka variant (`mvn -Pkafka test`: the core with the Kafka
# backend, docs/KAFKA.md) runs the binding's tests tagged "kafka" against a cluster: the one at
# $MQ_KAFKA_BOOTSTRAP (scripts/test.sh starts one), else a single-node Kafka that
# scripts/kafka-server.sh starts in target/kafka-server/ and stops on exit.
#
#   bindings/java/test.sh            (from anywhere; CI=true and no stdin are fine)
#
# Maven downloads its plugins and the test dependencies on the first run into ~/.m2; every
# version is pinned, so later runs resolve nothing (they also work with MQ_MAVEN_OFFLINE=1,
# which passes -o). MQ_JAVA_SKIP_BENCH=1 skips building the benchmark module.
set -euo pipefail

here=$(cd "$(dirname "$(readlink -f "$0")")" && pwd)
root=$(cd "$here/../.." && pwd)
cd "$here"

# shellcheck source=../../scripts/lib/setup.sh
source "$root/scripts/lib/setup.sh"  # ensure_tools
section() { printf '\n==== java: %s ====\n' "$*"; }
phase="setup"
kafka_dir=$here/target/kafka-server
kafka_started=0
route_dir=
stop_kafka() {
    if [ "$kafka_started" = 1 ]; then
        "$root/scripts/kafka-server.sh" stop "$kafka_dir" || true
        kafka_started=0
    fi
}
trap 'rc=$?; stop_kafka; if [ -n "$route_dir" ]; then rm -rf "$route_dir"; fi; if [ "$rc" -ne 0 ]; then printf "\n==== java: FAILED: %s (exit %s) ====\n" "$phase" "$rc"; fi' EXIT

# ---- tools ---------------------------------------------------------------------------------
missing=()
command -v javac >/dev/null 2>&1 || missing+=(default-jdk-headless)
command -v mvn >/dev/null 2>&1 || missing+=(maven)
command -v cmake >/dev/null 2>&1 || missing+=(cmake)
command -v g++ >/dev/null 2>&1 || missing+=(g++)
command -v make >/dev/null 2>&1 || command -v ninja >/dev/null 2>&1 || missing+=(make)
# SWIG 4 (Debian's swig package is 4.1 on bookworm; the PyPI wheel `swig` works as well when it
# is first on PATH).
if ! command -v swig >/dev/null 2>&1 || ! swig -version | grep -q 'SWIG Version [4-9]'; then
    missing+=(swig)
fi
if [ ${#missing[@]} -gt 0 ]; then
    section "installing ${missing[*]}"
    sudo=()
    if [ "$(id -u)" -ne 0 ]; then
        command -v sudo >/dev/null 2>&1 || { echo "missing ${missing[*]} and not root (no sudo)" >&2; exit 1; }
        sudo=(sudo)
    fi
    command -v apt-get >/dev/null 2>&1 || { echo "missing ${missing[*]} and no apt-get" >&2; exit 1; }
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
fi
section "toolchain"
# (head closes the pipe early: with pipefail that is not a failure here)
java -version 2>&1 | head -n 1 || true
mvn -version 2>/dev/null | head -n 1 || true
cmake --version | head -n 1 || true
g++ --version | head -n 1 || true
swig -version | grep Version || true

mvn_args=(-B -ntp -Dstyle.color=never)
if [ "${MQ_MAVEN_OFFLINE:-0}" = 1 ]; then
    mvn_args+=(-o)
fi

# ---- build, lint, test, javadoc ------------------------------------------------------------
phase="mvn verify (native build, javac -Werror, JUnit)"
section "$phase"
start=$SECONDS
rm -rf target/surefire-reports
mvn "${mvn_args[@]}" verify
echo "(mvn verify took $((SECONDS - start)) s)"

# A skipped test must say why, loudly (JUnit assumptions for behaviour still landing in the core).
if grep -q "<skipped" target/surefire-reports/*.xml 2>/dev/null; then
    section "skipped tests and why"
    grep -h -A1 "<skipped" target/surefire-reports/*.xml | grep -o "Assumption failed: .*" | sort -u
fi

phase="JNI checks"
section "$phase"
# -Xcheck:jni writes its warnings to the test JVM's stdout, which Surefire keeps in dumpstream
# files; any of them is a bug of the native code.
if grep -l "WARNING in native method" target/surefire-reports/* 2>/dev/null; then
    grep -h -A3 "WARNING in native method" target/surefire-reports/* | head -40
    echo "a test JVM reported JNI misuse (above)" >&2
    exit 1
fi
echo "no JNI warnings"

phase="javadoc (doclint, warnings are errors)"
section "$phase"
mvn "${mvn_args[@]}" -q javadoc:javadoc

# ---- the README's route: install, then a user's project on the README's coordinates --------
phase="README route: mvn install into an empty local repository"
section "$phase"
route_dir=$(mktemp -d)
route_repo=$route_dir/repository
# Third-party plugins come from the user's local repository first (as a file repository, so the
# route needs no network once the build above has run), then Maven Central. org.mq:mq can come
# only from the install below: the project's build is offline, on the new repository.
m2=${MQ_MAVEN_REPO:-$HOME/.m2/repository}
cat > "$route_dir/settings.xml" <<EOF
<settings>
  <profiles>
    <profile>
      <id>user-m2</id>
      <repositories><repository><id>user-m2</id><url>file://$m2</url></repository></repositories>
      <pluginRepositories><pluginRepository><id>user-m2</id><url>file://$m2</url></pluginRepository></pluginRepositories>
    </profile>
  </profiles>
  <activeProfiles><activeProfile>user-m2</activeProfile></activeProfiles>
</settings>
EOF
route_args=(-B -ntp -Dstyle.color=never -s "$route_dir/settings.xml" -Dmaven.repo.local="$route_repo")
mvn "${route_args[@]}" -q install -DskipTests
installed=("$route_repo"/org/mq/mq/*/mq-*.jar)
if [ ${#installed[@]} -ne 1 ] || [ ! -f "${installed[0]}" ]; then
    echo "mvn install put ${#installed[@]} jars under $route_repo/org/mq/mq: ${installed[*]}" >&2
    exit 1
fi
echo "installed: ${installed[0]#"$route_repo"/}"

phase="license files in the installed jar, licenses in its pom"
section "$phase"
mkdir "$route_dir/unpacked"
(cd "$route_dir/unpacked" && jar xf "${installed[0]}" META-INF/LICENSE-MIT META-INF/LICENSE-APACHE)
for f in LICENSE-MIT LICENSE-APACHE; do
    cmp "$route_dir/unpacked/META-INF/$f" "$root/$f"
done
installed_pom=${installed[0]%.jar}.pom
for name in MIT Apache-2.0; do
    grep -q "<name>$name</name>" "$installed_pom" || { echo "$installed_pom: no <license> $name" >&2; exit 1; }
done
echo "META-INF/LICENSE-MIT and META-INF/LICENSE-APACHE are the repository's; the pom declares MIT and Apache-2.0"

phase="README route: src/it/readme (the README's Java blocks) on the installed jar"
section "$phase"
cp -r "$here/src/it/readme" "$route_dir/readme"
mvn "${route_args[@]}" -o -f "$route_dir/readme/pom.xml" -Dmq.readme="$here/README.md" verify \
    | tee "$route_dir/readme.log"
grep -qF "org.mq from: file:$route_repo/org/mq/mq/" "$route_dir/readme.log" \
    || { echo "the README's code did not run on the jar installed in $route_repo" >&2; exit 1; }
grep -q "^README: [1-9][0-9]* Java blocks ran" "$route_dir/readme.log" \
    || { echo "the README's blocks did not all run" >&2; exit 1; }
if grep -q "WARNING in native method" "$route_dir/readme.log"; then
    echo "the README's code made a JNI misuse (above)" >&2
    exit 1
fi
rm -rf "$route_dir"
route_dir=

# ---- the benchmark module builds (running it is a separate, documented step) --------------
if [ "${MQ_JAVA_SKIP_BENCH:-0}" != 1 ]; then
    phase="bench/java builds"
    section "$phase"
    mvn "${mvn_args[@]}" -q install -DskipTests
    mvn "${mvn_args[@]}" -q -f "$root/bench/java/pom.xml" package
fi

# ---- the Kafka variant on a cluster -------------------------------------------------------
# Only what it needs: the JNI library with the Kafka backend (its own CMake cache in
# target/kafka/native, kept between runs) and the tests tagged "kafka"; the conformance runner
# is the one above ($MQ_CONFORMANCE_RUNNER, else target/native/mq_conformance).
phase="kafka: librdkafka"
kafka_start=$SECONDS
ensure_tools pkg-config rdkafka
if [ -z "${MQ_KAFKA_BOOTSTRAP:-}" ]; then
    phase="kafka: start a single-node cluster (scripts/kafka-server.sh)"
    section "$phase"
    kafka_started=1
    MQ_KAFKA_BOOTSTRAP=$("$root/scripts/kafka-server.sh" start "$kafka_dir" | tail -n 1)
    export MQ_KAFKA_BOOTSTRAP
fi
phase="kafka: mvn -Pkafka test (Kafka at $MQ_KAFKA_BOOTSTRAP)"
section "$phase"
rm -rf target/kafka/surefire-reports
mvn "${mvn_args[@]}" -Pkafka test
if grep -l "WARNING in native method" target/kafka/surefire-reports/* 2>/dev/null; then
    grep -h -A3 "WARNING in native method" target/kafka/surefire-reports/* | head -40
    echo "a test JVM of the Kafka variant reported JNI misuse (above)" >&2
    exit 1
fi
stop_kafka
echo "(the Kafka variant took $((SECONDS - kafka_start)) s)"

phase="done"
section "all Java tests passed"
