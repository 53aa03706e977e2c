// Command gencore regenerates internal/core's wrappers (core_*.cpp, one per src/*.cpp, and
// core_kafka_*.cpp, one per src/kafka/*.cpp, compiled under the mq_kafka tag) and core_hash.go
// (the hash of include/ and src/ with their subdirectories). `go generate ./...` runs it in
// that package's directory.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/mqlib/mq/bindings/go/internal/corehash"
)

func main() {
	root := flag.String("root", "../../../..", "the repository root, relative to the package directory")
	flag.Parse()
	if err := run(*root); err != nil {
		fmt.Fprintln(os.Stderr, "gencore:", err)
		os.Exit(1)
	}
}

func run(root string) error {
	sum, err := corehash.Sum(root)
	if err != nil {
		return err
	}
	sources, err := corehash.Sources(root)
	if err != nil {
		return err
	}
	if len(sources) == 0 {
		return fmt.Errorf("no src/*.cpp under %s", root)
	}
	want := map[string]string{"core_hash.go": corehash.HashFile(sum)}
	for _, s := range sources {
		want[corehash.WrapperName(s)] = corehash.Wrapper(filepath.ToSlash(root), s)
	}
	// Wrappers of sources that are gone would compile nothing but an #error: remove them.
	old, err := filepath.Glob("core_*.cpp")
	if err != nil {
		return err
	}
	for _, f := range old {
		if _, keep := want[f]; !keep {
			if err := os.Remove(f); err != nil {
				return err
			}
		}
	}
	names := make([]string, 0, len(want))
	for name := range want {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		text := want[name]
		if cur, err := os.ReadFile(name); err == nil && string(cur) == text {
			continue
		}
		if err := os.WriteFile(name, []byte(text), 0o644); err != nil {
			return err
		}
		fmt.Println("gencore: wrote", name)
	}
	return nil
}
