// Package conformance runs the cross-language conformance scenarios (tests/conformance/*.mqs,
// FORMAT.md) through the Go binding: the repository's runner (mq_conformance) drives the
// testee in ./testee, which executes each request through package mq's public API.
package conformance

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"
)

const root = "../../../.."

// TestConformance is one subtest per script, found by globbing: a new script needs no edit.
// MQ_CONFORMANCE_SCRIPTS names another directory of scripts (with its runner) to try.
func TestConformance(t *testing.T) {
	dir := os.Getenv("MQ_CONFORMANCE_SCRIPTS")
	if dir == "" {
		dir = filepath.Join(root, "tests", "conformance")
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	scripts, err := filepath.Glob(filepath.Join(dir, "*.mqs"))
	if err != nil || len(scripts) == 0 {
		t.Fatalf("no scripts in %s (%v)", dir, err)
	}
	runner := findRunner(t, dir)
	testee := buildTestee(t)
	expected, err := filepath.Abs("expected_failures.txt")
	if err != nil {
		t.Fatal(err)
	}
	for _, script := range scripts {
		name := strings.TrimSuffix(filepath.Base(script), ".mqs")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			runScript(t, exec.Command(runner, "--testee", testee, "--expected-failures", expected, script))
		})
	}
}

// runScript runs one scenario through the runner: it passes when the runner exits 0.
func runScript(t *testing.T, cmd *exec.Cmd) {
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Errorf("%s: %v\n%s", filepath.Base(cmd.Args[len(cmd.Args)-1]), err, out)
	} else if testing.Verbose() {
		t.Logf("%s", out)
	}
}

// findRunner is $MQ_CONFORMANCE_RUNNER, else the plain build's
// build/tests/conformance/mq_conformance, else the runner compiled here from
// <scripts>/runner/*.cpp with the C++ compiler (cached by the sources' hash), so that
// `go test ./...` needs nothing but Go and a C++ compiler.
func findRunner(t *testing.T, dir string) string {
	if r := os.Getenv("MQ_CONFORMANCE_RUNNER"); r != "" {
		return r
	}
	if os.Getenv("MQ_CONFORMANCE_SCRIPTS") == "" {
		built := filepath.Join(root, "build", "tests", "conformance", "mq_conformance")
		if _, err := os.Stat(built); err == nil {
			abs, _ := filepath.Abs(built)
			return abs
		}
	}
	sources, _ := filepath.Glob(filepath.Join(dir, "runner", "*.cpp"))
	if len(sources) == 0 {
		t.Fatalf("no conformance runner: MQ_CONFORMANCE_RUNNER is not set, %s/build/tests/conformance/mq_conformance is not built (cmake --build build --target mq_conformance), and %s/runner/*.cpp is missing", root, dir)
	}
	sort.Strings(sources)
	h := sha256.New()
	for _, s := range sources {
		data, err := os.ReadFile(s)
		if err != nil {
			t.Fatal(err)
		}
		h.Write([]byte(filepath.Base(s)))
		h.Write(data)
	}
	headers, _ := filepath.Glob(filepath.Join(dir, "runner", "*.h"))
	sort.Strings(headers)
	for _, s := range headers {
		data, _ := os.ReadFile(s)
		h.Write([]byte(filepath.Base(s)))
		h.Write(data)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	out := filepath.Join(cache, "mq-go", "conformance-runner-"+hex.EncodeToString(h.Sum(nil))[:16], "mq_conformance")
	if _, err := os.Stat(out); err == nil {
		return out
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		t.Fatal(err)
	}
	cxx := os.Getenv("CXX")
	if cxx == "" {
		cxx = "c++"
	}
	tmp := out + ".tmp"
	args := append([]string{"-std=c++20", "-O1", "-o", tmp}, sources...)
	if b, err := exec.Command(cxx, args...).CombinedOutput(); err != nil {
		t.Fatalf("compiling the conformance runner: %s %s: %v\n%s", cxx, strings.Join(args, " "), err, b)
	}
	if err := os.Rename(tmp, out); err != nil {
		t.Fatal(err)
	}
	return out
}

// buildTestee builds ./testee the way this test was built (race detector, build tags).
func buildTestee(t *testing.T) string {
	out := filepath.Join(t.TempDir(), "testee")
	args := []string{"build", "-o", out}
	if raceEnabled {
		args = append(args, "-race")
	}
	var tags []string
	if systemBuild {
		tags = append(tags, "mq_system")
	}
	if kafkaBuild {
		tags = append(tags, "mq_kafka")
	}
	if len(tags) > 0 {
		args = append(args, "-tags", strings.Join(tags, ","))
	}
	args = append(args, "./testee")
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goTool); err != nil {
		goTool = "go"
	}
	if b, err := exec.Command(goTool, args...).CombinedOutput(); err != nil {
		t.Fatalf("building the testee: %v\n%s", err, b)
	}
	return out
}
