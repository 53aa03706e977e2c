package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestTraceMatchesCDemo runs the C demo (examples/demo.c) and this program and compares the
// trace sections byte for byte. The demo is $MQ_DEMO when set (bindings/go/test.sh builds it
// with CMake); otherwise the test compiles it from the repository's sources with c++ and cc.
func TestTraceMatchesCDemo(t *testing.T) {
	demo := os.Getenv("MQ_DEMO")
	if demo == "" {
		demo = buildDemo(t)
	}
	cmd := exec.Command(demo)
	cmd.Env = append(os.Environ(), "NO_COLOR=1")
	cOut, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s", demo, err, cOut)
	}
	want := traceSection(t, string(cOut))

	var got bytes.Buffer
	out = &got
	defer func() { out = os.Stdout }()
	if err := run(); err != nil {
		t.Fatal(err)
	}
	if got.String() != want {
		t.Errorf("the Go trace differs from the C demo's\n--- C demo:\n%s\n--- Go:\n%s", want, got.String())
	}
}

// traceSection is the demo's output from "Reference trace" up to the reference stress (whose
// timings vary from run to run).
func traceSection(t *testing.T, s string) string {
	start := strings.Index(s, "Reference trace")
	end := strings.Index(s, "\nReference stress")
	if start < 0 || end < start {
		t.Fatalf("the C demo's output has no trace section:\n%s", s)
	}
	return s[start:end]
}

func buildDemo(t *testing.T) string {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	srcs, _ := filepath.Glob(filepath.Join(root, "src", "*.cpp"))
	var objs []string
	for _, src := range srcs {
		obj := filepath.Join(dir, strings.TrimSuffix(filepath.Base(src), ".cpp")+".o")
		sh(t, "c++", "-std=c++20", "-O1", "-DMQ_STATIC", "-DMQ_BUILDING", "-I", filepath.Join(root, "include"),
			"-I", filepath.Join(root, "src"), "-c", src, "-o", obj)
		objs = append(objs, obj)
	}
	demo := filepath.Join(dir, "mq_demo")
	args := []string{"-std=c11", "-O1", "-DMQ_STATIC", "-I", filepath.Join(root, "include"),
		filepath.Join(root, "examples", "demo.c")}
	args = append(args, objs...)
	sh(t, "cc", append(args, "-lstdc++", "-lpthread", "-lm", "-o", demo)...)
	return demo
}

func sh(t *testing.T, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}
