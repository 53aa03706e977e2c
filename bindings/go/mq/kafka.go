package mq

// #include <stdlib.h>
// #include "shim.h"
import "C"

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"unsafe"
)

// kafkaOptions is what WithKafka and WithKafkaConfig set. NewBroker turns it into C strings
// that live until mq_broker_new returns: the library copies them.
type kafkaOptions struct {
	bootstrap    string
	hasBootstrap bool
	settings     map[string]string
}

// WithKafka opens the broker on a Kafka cluster instead of the in-process log (library 1.2,
// mq_broker_options.kafka_bootstrap): bootstrap is the cluster's bootstrap servers,
// "host:port,...". Every call then works on that cluster's topics, consumer groups and
// committed offsets, and NewBroker blocks until the cluster answers (ErrBackend after 10 s).
//
// The library must have been built with its Kafka backend (CMake -DMQ_KAFKA=ON, which links
// librdkafka). The core this package compiles by default is built without it, so there
// NewBroker returns ErrUnsupported: build with -tags mq_kafka (the package then compiles the
// core with its backend and links librdkafka), or link such a libmq with -tags mq_system
// (README.md).
// WithClock cannot be combined with it (ErrUnsupported: on Kafka the times are the
// cluster's). A NUL byte in bootstrap is refused with ErrInvalid.
func WithKafka(bootstrap string) Option {
	return func(o *brokerConfig) {
		o.kafka.bootstrap = bootstrap
		o.kafka.hasBootstrap = true
	}
}

// WithKafkaConfig passes client settings to librdkafka as they are (library 1.2,
// mq_broker_options.kafka_config), e.g. {"security.protocol": "ssl", "client.id": "billing"};
// the library refuses a setting librdkafka does not know (ErrInvalid, naming it). Ignored
// without WithKafka. Settings of several WithKafkaConfig options are merged, a later value
// replacing an earlier one; the map is copied when WithKafkaConfig is called.
//
// The C option is "name=value" lines, so what that text cannot carry is refused by NewBroker
// with ErrInvalid before it calls the library: an empty name, a name containing '=' or a line
// break ('\n'), a value containing '\n', and a NUL byte anywhere.
func WithKafkaConfig(settings map[string]string) Option {
	copied := maps.Clone(settings)
	return func(o *brokerConfig) {
		if o.kafka.settings == nil {
			o.kafka.settings = map[string]string{}
		}
		maps.Copy(o.kafka.settings, copied)
	}
}

// kafkaConfigText joins settings into kafka_config's lines, sorted by name so that one map
// always gives one text (a Go map's order changes from run to run); "" for none.
func kafkaConfigText(settings map[string]string) (string, error) {
	var text strings.Builder
	for _, name := range slices.Sorted(maps.Keys(settings)) {
		value := settings[name]
		switch {
		case name == "":
			return "", fmt.Errorf("a Kafka setting has an empty name (value %q)", value)
		case strings.ContainsAny(name, "=\n"):
			return "", fmt.Errorf("Kafka setting name %q contains '=' or a line break, which "+
				"kafka_config's name=value lines cannot carry", name)
		case strings.Contains(value, "\n"):
			return "", fmt.Errorf("the value of Kafka setting %s contains a line break, which "+
				"kafka_config's name=value lines cannot carry", name)
		case strings.ContainsRune(name, 0) || strings.ContainsRune(value, 0):
			return "", fmt.Errorf("Kafka setting %q has a NUL byte, which a C string cannot carry", name)
		}
		if text.Len() > 0 {
			text.WriteByte('\n')
		}
		text.WriteString(name)
		text.WriteByte('=')
		text.WriteString(value)
	}
	return text.String(), nil
}

// cStrings points c's Kafka fields at C copies of the options; free releases them once
// mq_broker_new has returned. Nothing is set (and free is a no-op) on an error.
func (k *kafkaOptions) cStrings(c *C.mq_broker_options) (free func(), err error) {
	config, err := kafkaConfigText(k.settings)
	if err != nil {
		return func() {}, err
	}
	if k.hasBootstrap && strings.ContainsRune(k.bootstrap, 0) {
		return func() {}, fmt.Errorf("the Kafka bootstrap %q has a NUL byte, which a C string "+
			"cannot carry", k.bootstrap)
	}
	var ptrs []*C.char
	if k.hasBootstrap {
		c.kafka_bootstrap = C.CString(k.bootstrap)
		ptrs = append(ptrs, c.kafka_bootstrap)
	}
	if config != "" {
		c.kafka_config = C.CString(config)
		ptrs = append(ptrs, c.kafka_config)
	}
	return func() {
		for _, p := range ptrs {
			C.free(unsafe.Pointer(p))
		}
	}, nil
}
