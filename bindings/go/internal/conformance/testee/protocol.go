package main

import (
	"fmt"
	"strconv"
	"strings"
)

// The line protocol of tests/conformance/FORMAT.md: "VERB name=value ..." in, "STATUS
// name=value ..." out; byte strings percent-encoded.

type field struct{ name, value string } // value still encoded

type request struct {
	text   string
	verb   string
	fields []field
}

func parseRequest(line string) (*request, error) {
	tokens := strings.Split(line, " ")
	if len(tokens) == 0 || tokens[0] == "" {
		return nil, fmt.Errorf("empty request")
	}
	r := &request{text: line, verb: tokens[0]}
	for _, tok := range tokens[1:] {
		name, value, ok := strings.Cut(tok, "=")
		if !ok || name == "" {
			return nil, fmt.Errorf("not a field: %q", tok)
		}
		r.fields = append(r.fields, field{name, value})
	}
	return r, nil
}

func (r *request) raw(name string) (string, bool) {
	for _, f := range r.fields {
		if f.name == name {
			return f.value, true
		}
	}
	return "", false
}

func (r *request) has(name string) bool {
	_, ok := r.raw(name)
	return ok
}

// bytes is a byte-string field, decoded; nil when absent.
func (r *request) bytes(name string) []byte {
	v, ok := r.raw(name)
	if !ok {
		return nil
	}
	return decode(v)
}

func (r *request) str(name string) string { return string(r.bytes(name)) }

func (r *request) int(name string, dflt int64) int64 {
	v, ok := r.raw(name)
	if !ok {
		return dflt
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		panic(testeeError("field " + name + " is not an integer: " + v))
	}
	return n
}

func decode(s string) []byte {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) {
			if b, err := strconv.ParseUint(s[i+1:i+3], 16, 8); err == nil {
				out = append(out, byte(b))
				i += 2
				continue
			}
		}
		out = append(out, s[i])
	}
	return out
}

func encode(b []byte) string {
	var sb strings.Builder
	for _, c := range b {
		switch {
		case c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '.', c == '_', c == '-':
			sb.WriteByte(c)
		default:
			fmt.Fprintf(&sb, "%%%02X", c)
		}
	}
	return sb.String()
}

// reply accumulates one reply line.
type reply struct{ strings.Builder }

func (w *reply) field(name, raw string) {
	w.WriteString(" " + name + "=" + raw)
}

func (w *reply) bytes(name string, b []byte) { w.field(name, encode(b)) }

func (w *reply) int(name string, v int64) { w.field(name, strconv.FormatInt(v, 10)) }

// testeeError is a request the testee cannot honour; run turns it into a testee_error reply.
type testeeError string
