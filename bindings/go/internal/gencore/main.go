// Command gencore refreshes what the module carries of the repository: internal/core's copy
// of include/ and src/ (every subdirectory), the license files at the module root, one
// wrapper per translation unit of the copy (core_*.cpp; those under a kafka/ directory
// compile only under the mq_kafka tag) and core_hash.go (the hash of the copy). `go generate
// ./...` runs it in internal/core's directory; it removes copies and wrappers of files the
// repository no longer has.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"github.com/mqlib/mq/bindings/go/internal/corehash"
)

func main() {
	root := flag.String("root", "../../../..", "the repository root, relative to the package directory")
	module := flag.String("module", "../..", "the module root, relative to the package directory")
	flag.Parse()
	if err := run(*root, ".", *module); err != nil {
		fmt.Fprintln(os.Stderr, "gencore:", err)
		os.Exit(1)
	}
}

// run refreshes the package directory pkg and the module root module from the repository at
// root.
func run(root, pkg, module string) error {
	sources, err := corehash.Sources(root)
	if err != nil {
		return err
	}
	if len(sources) == 0 {
		return fmt.Errorf("no .cpp under %s", filepath.Join(root, "src"))
	}
	files, err := corehash.Files(root)
	if err != nil {
		return err
	}
	for _, f := range files {
		if err := copyFile(filepath.Join(root, f), filepath.Join(pkg, f)); err != nil {
			return err
		}
	}
	if err := prune(pkg, files); err != nil {
		return err
	}
	for _, l := range corehash.Licenses {
		if err := copyFile(filepath.Join(root, l), filepath.Join(module, l)); err != nil {
			return err
		}
	}

	sum, err := corehash.Sum(pkg)
	if err != nil {
		return err
	}
	want := map[string]string{"core_hash.go": corehash.HashFile(sum)}
	for _, s := range sources {
		want[corehash.WrapperName(s)] = corehash.Wrapper(s)
	}
	// A wrapper of a source that is gone would fail to compile: remove it.
	old, err := filepath.Glob(filepath.Join(pkg, "core_*.cpp"))
	if err != nil {
		return err
	}
	for _, f := range old {
		if _, keep := want[filepath.Base(f)]; !keep {
			if err := os.Remove(f); err != nil {
				return err
			}
			fmt.Println("gencore: removed", f)
		}
	}
	names := make([]string, 0, len(want))
	for name := range want {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if err := writeFile(filepath.Join(pkg, name), []byte(want[name])); err != nil {
			return err
		}
	}
	return nil
}

// copyFile copies from to to, unless to already has the same bytes.
func copyFile(from, to string) error {
	data, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return writeFile(to, data)
}

// writeFile writes data to name unless it is there already (so that an unchanged file keeps
// its time stamp), creating its directory.
func writeFile(name string, data []byte) error {
	if cur, err := os.ReadFile(name); err == nil && string(cur) == string(data) {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(name, data, 0o644); err != nil {
		return err
	}
	fmt.Println("gencore: wrote", name)
	return nil
}

// prune removes from the copy under pkg the files that are not in keep (the repository's
// list), then the directories left empty: a file moved or deleted in the repository must not
// linger in the copy, where it would still be hashed and could still be #included.
func prune(pkg string, keep []string) error {
	kept := map[string]bool{}
	for _, f := range keep {
		kept[f] = true
	}
	for _, dir := range corehash.Dirs {
		var dirs []string
		err := filepath.WalkDir(filepath.Join(pkg, dir), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				dirs = append(dirs, p)
				return nil
			}
			rel, err := filepath.Rel(pkg, p)
			if err != nil {
				return err
			}
			if !kept[filepath.ToSlash(rel)] {
				fmt.Println("gencore: removed", p)
				return os.Remove(p)
			}
			return nil
		})
		if err != nil {
			return err
		}
		// Deepest first, so that a parent is empty once its empty children are gone.
		for i := len(dirs) - 1; i >= 0; i-- {
			entries, err := os.ReadDir(dirs[i])
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
			if err == nil && len(entries) == 0 {
				if err := os.Remove(dirs[i]); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
