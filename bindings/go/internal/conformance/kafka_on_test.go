//go:build mq_kafka

package conformance

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// kafkaBuild: the testee is built with -tags mq_kafka, the core with its Kafka backend.
const kafkaBuild = true

// TestConformanceKafka runs every scenario of tests/conformance/kafka_scenarios.txt on the
// Kafka cluster at MQ_KAFKA_BOOTSTRAP (FORMAT.md, "On the Kafka backend"), one at a time: the
// scenarios share topic names, and each testee deletes its topics at end. Without a cluster
// it fails: this variant exists to run against one (scripts/kafka-server.sh start).
func TestConformanceKafka(t *testing.T) {
	if os.Getenv("MQ_KAFKA_BOOTSTRAP") == "" {
		t.Fatal("MQ_KAFKA_BOOTSTRAP is not set: start a cluster (scripts/kafka-server.sh start prints its address) and export it")
	}
	dir, err := filepath.Abs(filepath.Join(root, "tests", "conformance"))
	if err != nil {
		t.Fatal(err)
	}
	names := kafkaScenarios(t, filepath.Join(dir, "kafka_scenarios.txt"))
	runner := findRunner(t, dir)
	testee := buildTestee(t)
	expected, err := filepath.Abs("expected_failures.txt")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			script := filepath.Join(dir, name+".mqs")
			if _, err := os.Stat(script); err != nil {
				t.Fatalf("kafka_scenarios.txt names %s, which is not there: %v", name, err)
			}
			cmd := exec.Command(runner, "--testee", testee, "--expected-failures", expected, script)
			cmd.Env = append(os.Environ(), "MQ_CONFORMANCE_BACKEND=kafka")
			runScript(t, cmd)
		})
	}
}

// kafkaScenarios reads the list: one name a line, '#' starts a comment.
func kafkaScenarios(t *testing.T, list string) []string {
	f, err := os.Open(list)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var names []string
	lines := bufio.NewScanner(f)
	for lines.Scan() {
		line, _, _ := strings.Cut(lines.Text(), "#")
		if line = strings.TrimSpace(line); line != "" {
			names = append(names, line)
		}
	}
	if err := lines.Err(); err != nil {
		t.Fatal(err)
	}
	if len(names) == 0 {
		t.Fatalf("%s lists no scenario", list)
	}
	return names
}
