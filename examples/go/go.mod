module github.com/mqlib/mq/examples/go

go 1.24

require github.com/mqlib/mq/bindings/go v0.0.0

// Inside the repository the example builds the binding next to it. Another module requires a
// released version instead: require github.com/mqlib/mq/bindings/go v1.0.0 (tag bindings/go/v1.0.0).
replace github.com/mqlib/mq/bindings/go => ../../bindings/go
