// Package conformance holds the Go binding's conformance test and testee (./testee); it has no
// API. See conformance_test.go.
package conformance
