/* Forced into every core file of the default build (core.go): the "built without the Kafka
   backend" error names the switch a Go user has. */
#define MQ_KAFKA_HINT "the Go build tag mq_kafka (needs librdkafka)"
