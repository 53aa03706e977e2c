// Package corehash describes the copy of the C++ core that the module carries, and renders
// the files generated from it.
//
// A module fetched through `go get` is the module's folder alone, so the core it compiles by
// default must live inside it: internal/core holds a copy of the repository's include/ and
// src/ (with their subdirectories), and the module root a copy of its licenses. cgo compiles
// only the files of a package's own directory, so internal/core also has one wrapper per core
// translation unit that #includes it from the copy.
//
// Go's build cache keys a package on the files of its own directory, not on the files the
// wrappers #include from the subdirectories: `go generate` writes the hash of the copy into
// core_hash.go, so an edit to the copy changes that file and the package rebuilds. Tests
// compare the copy with the hash and, inside the repository, with the repository's files.
package corehash

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// Dirs are the repository's directories that internal/core carries a copy of, at the same
// relative paths, every regular file of every subdirectory included.
var Dirs = []string{"include", "src"}

// Licenses are the repository's license files, copied to the module root: a module fetched
// alone must carry its license (the module proxy and pkg.go.dev look for it there).
var Licenses = []string{"LICENSE-APACHE", "LICENSE-MIT"}

// Files lists the regular files under Dirs of root, as slash-separated paths relative to
// root, sorted. A missing directory is an error: an empty list would hash and copy "no core".
func Files(root string) ([]string, error) {
	var files []string
	for _, dir := range Dirs {
		err := filepath.WalkDir(filepath.Join(root, dir), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.Type().IsRegular() {
				rel, err := filepath.Rel(root, p)
				if err != nil {
					return err
				}
				files = append(files, filepath.ToSlash(rel))
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("listing the core: %w", err)
		}
	}
	sort.Strings(files)
	return files, nil
}

// Sum hashes the files Files lists under root (paths, sizes and contents, in sorted order),
// so adding, removing, renaming or editing a file changes it. The repository and the copy in
// internal/core have the same sum when the copy is current.
func Sum(root string) (string, error) {
	files, err := Files(root)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(f)))
		if err != nil {
			return "", fmt.Errorf("hashing the core: %w", err)
		}
		fmt.Fprintf(h, "%s\n%d\n", f, len(data))
		h.Write(data)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Diff compares the files of the core under two roots (the repository and the copy) and
// describes each difference, sorted; nil when they are the same.
func Diff(want, have string) ([]string, error) {
	wantFiles, err := Files(want)
	if err != nil {
		return nil, err
	}
	haveFiles, err := Files(have)
	if err != nil {
		return nil, err
	}
	var diffs []string
	for _, f := range haveFiles {
		if !slices.Contains(wantFiles, f) {
			diffs = append(diffs, f+": in the copy only")
		}
	}
	for _, f := range wantFiles {
		if !slices.Contains(haveFiles, f) {
			diffs = append(diffs, f+": missing from the copy")
			continue
		}
		if !SameFile(filepath.Join(want, f), filepath.Join(have, f)) {
			diffs = append(diffs, f+": differs")
		}
	}
	sort.Strings(diffs)
	return diffs, nil
}

// SameFile: both files can be read and have the same bytes.
func SameFile(a, b string) bool {
	da, err := os.ReadFile(a)
	if err != nil {
		return false
	}
	db, err := os.ReadFile(b)
	return err == nil && bytes.Equal(da, db)
}

// Sources lists the core's translation units under root/src, at any depth, sorted, as
// slash-separated paths relative to src/ ("core/broker.cpp", "engine/kafka/cursor.cpp").
// Two sources whose wrappers would share a name are an error.
func Sources(root string) ([]string, error) {
	var names []string
	src := filepath.Join(root, "src")
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() && strings.HasSuffix(p, ".cpp") {
			rel, err := filepath.Rel(src, p)
			if err != nil {
				return err
			}
			names = append(names, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing the core's sources: %w", err)
	}
	sort.Strings(names)
	seen := map[string]string{}
	for _, n := range names {
		if other, dup := seen[WrapperName(n)]; dup {
			return nil, fmt.Errorf("src/%s and src/%s would share the wrapper %s: rename one", other, n, WrapperName(n))
		}
		seen[WrapperName(n)] = n
	}
	return names, nil
}

// KafkaDir is the name of the directory that holds the Kafka backend's translation units
// (src/engine/kafka/; src/kafka/ in the earlier, flat layout): every source with a
// directory of that name in its path compiles only under the mq_kafka build tag, which also
// links librdkafka, as CMake compiles them only with -DMQ_KAFKA=ON.
const KafkaDir = "kafka"

// IsKafka: the source (relative to src/) belongs to the Kafka backend.
func IsKafka(source string) bool {
	dir := path.Dir(source)
	return dir != "." && slices.Contains(strings.Split(dir, "/"), KafkaDir)
}

// WrapperName is the package file that compiles src/<source>: core_<path with / as _>.cpp
// ("core_engine_kafka_cursor.cpp").
func WrapperName(source string) string {
	return "core_" + strings.ReplaceAll(strings.TrimSuffix(source, ".cpp"), "/", "_") + ".cpp"
}

// Wrapper renders the wrapper of src/<source>, which includes it from the copy next to it.
func Wrapper(source string) string {
	constraint := "!mq_system"
	if IsKafka(source) {
		constraint = "!mq_system && mq_kafka"
	}
	return `//go:build ` + constraint + `

// Code generated by internal/gencore; DO NOT EDIT.

// cgo compiles the C and C++ files of the package's own directory: this one compiles the
// core's src/` + source + ` from the module's copy.
#include "src/` + source + `"
`
}

// HashFile renders core_hash.go.
func HashFile(sum string) string {
	return `// Code generated by internal/gencore; DO NOT EDIT.

package core

// coreSourcesSHA256 is the hash of this package's copy of include/ and src/ when ` + "`go generate`" + `
// last ran. Go's build cache does not see the files that the core_*.cpp wrappers #include;
// this file changes with them, so an edit to the core rebuilds the package.
const coreSourcesSHA256 = "` + sum + `"
`
}
