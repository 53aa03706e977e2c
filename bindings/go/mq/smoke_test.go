package mq

import (
	"context"
	"testing"
)

func TestSmoke(t *testing.T) {
	b, err := NewBroker()
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.CreateTopic("orders", Partitions(2), Capacity(3)); err != nil {
		t.Fatal(err)
	}
	if err := b.Subscribe("orders", "billing"); err != nil {
		t.Fatal(err)
	}
	p, o, err := b.Publish(context.Background(), "orders", []byte("user-a"), []byte("o-1"))
	t.Log(p, o, err)
	msgs, err := b.Poll(context.Background(), "orders", "billing", p, 10)
	t.Log(msgs, err)
	t.Log(b.Ack("orders", "billing", p, 7))
	d, err := b.Describe("orders", 1)
	t.Log(d, err)
}
