module github.com/mqlib/mq/bindings/go

go 1.24
