package core

import (
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/mqlib/mq/bindings/go/internal/corehash"
)

// root is the repository root when the module is its bindings/go; module is the module root.
const (
	root   = "../../../.."
	module = "../.."
)

const regenerate = "run `go generate ./...` in bindings/go and commit the result"

// TestGeneratedFilesAreCurrent fails when the module's copy of the core, its wrappers or its
// hash are stale: then Go's build cache may be serving a build of another core, or a user of
// the module would get another core than the repository's.
func TestGeneratedFilesAreCurrent(t *testing.T) {
	t.Run("hash", func(t *testing.T) {
		sum, err := corehash.Sum(".")
		if err != nil {
			t.Fatal(err)
		}
		if sum != coreSourcesSHA256 {
			t.Errorf("core_hash.go is stale (copy %s, file %s): %s", sum, coreSourcesSHA256, regenerate)
		}
		if data, err := os.ReadFile("core_hash.go"); err != nil || string(data) != corehash.HashFile(sum) {
			t.Errorf("core_hash.go differs from what gencore writes: %s", regenerate)
		}
	})

	t.Run("wrappers", func(t *testing.T) {
		sources, err := corehash.Sources(".")
		if err != nil {
			t.Fatal(err)
		}
		if len(sources) == 0 {
			t.Fatalf("no src/**/*.cpp in the copy: %s", regenerate)
		}
		var want []string
		for _, s := range sources {
			want = append(want, corehash.WrapperName(s))
			data, err := os.ReadFile(corehash.WrapperName(s))
			if err != nil || string(data) != corehash.Wrapper(s) {
				t.Errorf("%s is missing or stale: %s", corehash.WrapperName(s), regenerate)
			}
		}
		have, _ := filepath.Glob("core_*.cpp")
		sort.Strings(have)
		sort.Strings(want)
		if !slices.Equal(have, want) {
			t.Errorf("wrappers %v, want one per source of src/: %v; %s", have, want, regenerate)
		}
	})

	t.Run("licenses", func(t *testing.T) {
		for _, l := range corehash.Licenses {
			if data, err := os.ReadFile(filepath.Join(module, l)); err != nil || len(data) == 0 {
				t.Errorf("the module has no %s (%v): %s", l, err, regenerate)
			}
		}
	})

	// Only inside the repository: the module fetched alone has nothing to compare with.
	t.Run("same as the repository", func(t *testing.T) {
		if !insideRepository() {
			t.Skipf("%s/bindings/go is not this module: not inside the repository", root)
		}
		diffs, err := corehash.Diff(root, ".")
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range diffs {
			t.Errorf("internal/core/%s", d)
		}
		for _, l := range corehash.Licenses {
			if !corehash.SameFile(filepath.Join(root, l), filepath.Join(module, l)) {
				t.Errorf("%s differs from the repository's", l)
			}
		}
		if t.Failed() {
			t.Errorf("the module's copy of the core is stale: %s", regenerate)
		}
	})
}

// insideRepository: the module is the repository's bindings/go (and not a copy of the module
// alone, as `go get` fetches it).
func insideRepository() bool {
	a, err := os.Stat(filepath.Join(root, "bindings", "go"))
	if err != nil {
		return false
	}
	b, err := os.Stat(module)
	return err == nil && os.SameFile(a, b)
}

// TestSumSeesEdits: the hash must change with a file's content, name, or a new file.
func TestSumSeesEdits(t *testing.T) {
	dir := t.TempDir()
	write := func(rel, text string) {
		t.Helper()
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sum := func() string {
		s, err := corehash.Sum(dir)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	write("src/a.cpp", "int a;")
	write("include/mq.h", "#define X 1")
	seen := map[string]string{sum(): "initial"}
	step := func(what string) {
		t.Helper()
		s := sum()
		if prev, ok := seen[s]; ok {
			t.Errorf("%s: hash unchanged (same as after %s)", what, prev)
		}
		seen[s] = what
	}
	write("src/a.cpp", "int b;")
	step("an edit of a source")
	write("src/engine/kafka/k.cpp", "int k;")
	step("a new source two directories down")
	write("src/engine/kafka/k.cpp", "int l;")
	step("an edit of that source")
	write("include/mq.h", "#define X 2")
	step("an edit of the header")
	write("src/util/b.h", "")
	step("a new empty file")
	if err := os.Rename(filepath.Join(dir, "src/util/b.h"), filepath.Join(dir, "src/util/c.h")); err != nil {
		t.Fatal(err)
	}
	step("a rename")
	if err := os.Rename(filepath.Join(dir, "src/util"), filepath.Join(dir, "src/sync")); err != nil {
		t.Fatal(err)
	}
	step("a renamed directory")
}

// TestSourcesOfAnyLayout: the translation units are found at any depth, and those under a
// kafka/ directory, wherever it is, are the Kafka backend's.
func TestSourcesOfAnyLayout(t *testing.T) {
	dir := t.TempDir()
	files := []string{
		"src/a.cpp", "src/a.h", "src/mq.map",
		"src/util/sync.h", "src/capi/c_api.cpp",
		"src/kafka/cursor.cpp", "src/kafka/kafka_backend.h",
		"src/engine/kafka/push.cpp", "src/engine/inproc/log.cpp",
		"src/kafkaesque/not_kafka.cpp",
	}
	for _, f := range files {
		p := filepath.Join(dir, filepath.FromSlash(f))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := corehash.Sources(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"a.cpp", "capi/c_api.cpp", "engine/inproc/log.cpp", "engine/kafka/push.cpp", "kafka/cursor.cpp", "kafkaesque/not_kafka.cpp"}
	if !slices.Equal(got, want) {
		t.Fatalf("Sources = %v, want %v", got, want)
	}
	kafka := map[string]bool{"engine/kafka/push.cpp": true, "kafka/cursor.cpp": true}
	for _, s := range got {
		if corehash.IsKafka(s) != kafka[s] {
			t.Errorf("IsKafka(%q) = %v", s, !kafka[s])
		}
		w := corehash.Wrapper(s)
		first, _, _ := strings.Cut(w, "\n")
		if kafka[s] != strings.Contains(first, "mq_kafka") {
			t.Errorf("the wrapper of %s starts with %q", s, first)
		}
		if !strings.Contains(w, `#include "src/`+s+`"`) {
			t.Errorf("the wrapper of %s does not include it:\n%s", s, w)
		}
	}
	if n := corehash.WrapperName("engine/kafka/push.cpp"); n != "core_engine_kafka_push.cpp" {
		t.Errorf("WrapperName = %s", n)
	}

	// Two sources whose wrappers would have one name.
	if err := os.WriteFile(filepath.Join(dir, "src", "engine_inproc_log.cpp"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := corehash.Sources(dir); err == nil || !strings.Contains(err.Error(), "core_engine_inproc_log.cpp") {
		t.Errorf("Sources with a wrapper name twice: %v", err)
	}
}
