package core

import (
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/mqlib/mq/bindings/go/internal/corehash"
)

const root = "../../../.."

// TestGeneratedFilesAreCurrent fails when src/ or include/ changed without `go generate`:
// then Go's build cache may be serving a build of the old core.
func TestGeneratedFilesAreCurrent(t *testing.T) {
	sum, err := corehash.Sum(root)
	if err != nil {
		t.Fatal(err)
	}
	if sum != coreSourcesSHA256 {
		t.Errorf("core_hash.go is stale (sources %s, file %s): run `go generate ./...` in bindings/go and commit the result", sum, coreSourcesSHA256)
	}
	if data, err := os.ReadFile("core_hash.go"); err != nil || string(data) != corehash.HashFile(sum) {
		t.Errorf("core_hash.go differs from what gencore writes: run `go generate ./...` in bindings/go")
	}
	sources, err := corehash.Sources(root)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, s := range sources {
		want = append(want, corehash.WrapperName(s))
		data, err := os.ReadFile(corehash.WrapperName(s))
		if err != nil || string(data) != corehash.Wrapper(root, s) {
			t.Errorf("%s is missing or stale: run `go generate ./...` in bindings/go", corehash.WrapperName(s))
		}
	}
	have, _ := filepath.Glob("core_*.cpp")
	sort.Strings(have)
	sort.Strings(want)
	if len(have) != len(want) {
		t.Errorf("wrappers %v, want one per src/*.cpp and src/kafka/*.cpp: %v; run `go generate ./...` in bindings/go", have, want)
	}
}

// TestSumSeesEdits: the hash must change with a file's content, name, or a new file.
func TestSumSeesEdits(t *testing.T) {
	dir := t.TempDir()
	for _, d := range append([]string{"src/" + corehash.KafkaDir}, corehash.Dirs...) {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(rel, text string) {
		if err := os.WriteFile(filepath.Join(dir, rel), []byte(text), 0o644); err != nil {
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
		s := sum()
		if prev, ok := seen[s]; ok {
			t.Errorf("%s: hash unchanged (same as after %s)", what, prev)
		}
		seen[s] = what
	}
	write("src/a.cpp", "int b;")
	step("an edit of a source")
	write("src/kafka/k.cpp", "int k;")
	step("a new Kafka backend source")
	write("src/kafka/k.cpp", "int l;")
	step("an edit of a Kafka backend source")
	write("include/mq.h", "#define X 2")
	step("an edit of the header")
	write("src/b.h", "")
	step("a new empty file")
	if err := os.Rename(filepath.Join(dir, "src/b.h"), filepath.Join(dir, "src/c.h")); err != nil {
		t.Fatal(err)
	}
	step("a rename")
}
