package mq

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fence is a fenced code block of a Markdown file.
type fence struct {
	line int    // of the opening fence, from 1
	info string // the opening fence's info string ("go", "text", "")
	body string
}

// fences returns the fenced code blocks (```) of a Markdown text, in order; a fence indented
// in a list item has that indentation removed from its lines.
func fences(text string) ([]fence, error) {
	var out []fence
	var cur *fence
	var indent string
	for i, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimLeft(line, " ")
		if cur == nil {
			if strings.HasPrefix(trimmed, "```") {
				indent = line[:len(line)-len(trimmed)]
				cur = &fence{line: i + 1, info: strings.TrimSpace(strings.TrimPrefix(trimmed, "```"))}
			}
			continue
		}
		if strings.TrimSpace(line) == "```" {
			out = append(out, *cur)
			cur = nil
			continue
		}
		cur.body += strings.TrimPrefix(line, indent) + "\n"
	}
	if cur != nil {
		return nil, fmt.Errorf("the block at line %d is not closed", cur.line)
	}
	return out, nil
}

// TestReadme builds and runs every `go` block of README.md as a program of its own, against
// this module (a replace directive), with this test's build tags and race detector; when the
// next block is a `text` block, the program's output must be that text. A reader pastes the
// blocks whole, so each must be a complete program: none can rot unnoticed.
func TestReadme(t *testing.T) {
	data, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := fences(string(data))
	if err != nil {
		t.Fatalf("README.md: %v", err)
	}
	module, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	ran := 0
	for i, b := range blocks {
		if b.info != "go" {
			continue
		}
		ran++
		var want *string
		if i+1 < len(blocks) && blocks[i+1].info == "text" {
			want = &blocks[i+1].body
		}
		t.Run(fmt.Sprintf("line_%d", b.line), func(t *testing.T) {
			if !strings.HasPrefix(b.body, "package main\n") {
				t.Fatalf("README.md:%d: a go block must be a whole program (package main), so that a reader can run it as it is", b.line)
			}
			got := runProgram(t, module, b.body)
			if want != nil && got != *want {
				t.Errorf("README.md:%d prints\n%s\nthe text block after it says\n%s", b.line, got, *want)
			}
		})
	}
	if ran == 0 {
		t.Fatal("README.md has no go block: the quick start is gone, or this test no longer finds it")
	}
}

// runProgram builds main.go, a main package requiring the module at module, and returns what
// it prints on stdout; the test fails if it does not build or exits with an error.
func runProgram(t *testing.T, module, main string) string {
	dir := t.TempDir()
	goMod := "module readme\n\ngo 1.24\n\nrequire github.com/mqlib/mq/bindings/go v0.0.0\n\n" +
		"replace github.com/mqlib/mq/bindings/go => " + module + "\n"
	for name, text := range map[string]string{"go.mod": goMod, "main.go": main} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	args := []string{"build", "-o", "prog"}
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
	args = append(args, ".")
	// go test puts its own toolchain first in PATH. The module is all the program needs: no
	// workspace, no proxy.
	build := exec.Command("go", args...)
	build.Dir = dir
	build.Env = append(os.Environ(), "GOWORK=off", "GOPROXY=off", "GOFLAGS=-mod=mod")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s\n--- main.go:\n%s", strings.Join(args, " "), err, out, main)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	run := exec.CommandContext(ctx, filepath.Join(dir, "prog"))
	var stdout, stderr bytes.Buffer
	run.Stdout, run.Stderr = &stdout, &stderr
	if err := run.Run(); err != nil {
		t.Fatalf("the program failed: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	return stdout.String()
}
