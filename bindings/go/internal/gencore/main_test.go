package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mqlib/mq/bindings/go/internal/corehash"
)

func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for f, text := range files {
		p := filepath.Join(dir, filepath.FromSlash(f))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// TestRunMirrorsALayoutBySubsystem: from a repository whose src/ has subdirectories, run
// copies every file, removes what the repository no longer has (files, the directories left
// empty, wrappers), and writes a wrapper per translation unit and the hash of the copy.
func TestRunMirrorsALayoutBySubsystem(t *testing.T) {
	repo, module := t.TempDir(), t.TempDir()
	pkg := filepath.Join(module, "internal", "core")
	writeTree(t, repo, map[string]string{
		"include/mq.h":              "#define MQ 1\n",
		"src/mq.map":                "MQ_1.0 { local: *; };\n",
		"src/util/sync.h":           "#pragma once\n",
		"src/core/broker.cpp":       "#include \"util/sync.h\"\n",
		"src/engine/kafka/push.cpp": "int push;\n",
		"src/capi/c_api.cpp":        "int api;\n",
		"LICENSE-MIT":               "MIT\n",
		"LICENSE-APACHE":            "Apache\n",
		"README.md":                 "not copied\n",
	})
	// What an earlier, flat layout left behind.
	writeTree(t, pkg, map[string]string{
		"src/broker.cpp":            "old\n",
		"src/kafka/kafka_push.cpp":  "old\n",
		"src/core/broker.cpp":       "stale\n",
		"core_broker.cpp":           "old wrapper\n",
		"core_kafka_kafka_push.cpp": "old wrapper\n",
		"core.go":                   "package core\n",
	})
	if err := run(repo, pkg, module); err != nil {
		t.Fatal(err)
	}

	diffs, err := corehash.Diff(repo, pkg)
	if err != nil || len(diffs) != 0 {
		t.Errorf("the copy differs from the repository: %v %v", diffs, err)
	}
	for _, gone := range []string{"src/broker.cpp", "src/kafka", "core_broker.cpp", "core_kafka_kafka_push.cpp", "README.md"} {
		if exists(filepath.Join(pkg, gone)) {
			t.Errorf("%s is still there", gone)
		}
	}
	if !exists(filepath.Join(pkg, "core.go")) {
		t.Errorf("run removed a file it does not generate")
	}
	for _, l := range corehash.Licenses {
		if !corehash.SameFile(filepath.Join(repo, l), filepath.Join(module, l)) {
			t.Errorf("%s not copied to the module root", l)
		}
	}
	wrappers := map[string]string{
		"core_core_broker.cpp":       "//go:build !mq_system\n",
		"core_capi_c_api.cpp":        "//go:build !mq_system\n",
		"core_engine_kafka_push.cpp": "//go:build !mq_system && mq_kafka\n",
	}
	have, _ := filepath.Glob(filepath.Join(pkg, "core_*.cpp"))
	if len(have) != len(wrappers) {
		t.Errorf("wrappers %v, want %d", have, len(wrappers))
	}
	for name, first := range wrappers {
		data, err := os.ReadFile(filepath.Join(pkg, name))
		if err != nil || !strings.HasPrefix(string(data), first) {
			t.Errorf("%s: %q, %v; want it to start with %q", name, data, err, first)
		}
	}
	sum, err := corehash.Sum(repo)
	if err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(filepath.Join(pkg, "core_hash.go")); err != nil || string(data) != corehash.HashFile(sum) {
		t.Errorf("core_hash.go does not carry the repository's hash %s: %s %v", sum, data, err)
	}

	// Once the copy is current, a second run leaves it alone.
	before, _ := os.Stat(filepath.Join(pkg, "src", "core", "broker.cpp"))
	if err := run(repo, pkg, module); err != nil {
		t.Fatal(err)
	}
	after, _ := os.Stat(filepath.Join(pkg, "src", "core", "broker.cpp"))
	if !before.ModTime().Equal(after.ModTime()) {
		t.Errorf("a second run rewrote an unchanged file")
	}
}

// TestRunRefusesACoreWithoutSources: a wrong -root must not empty the copy.
func TestRunRefusesACoreWithoutSources(t *testing.T) {
	repo, module := t.TempDir(), t.TempDir()
	pkg := filepath.Join(module, "internal", "core")
	writeTree(t, repo, map[string]string{"include/mq.h": "", "src/a.h": ""})
	writeTree(t, pkg, map[string]string{"src/a.cpp": "int a;\n"})
	if err := run(repo, pkg, module); err == nil {
		t.Fatal("run succeeded with no .cpp in src/")
	}
	if !exists(filepath.Join(pkg, "src", "a.cpp")) {
		t.Error("a failed run removed the copy")
	}
}
