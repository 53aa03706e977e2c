package org.mq;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

/**
 * The conformance scenarios that hold on the Kafka backend (tests/conformance/kafka_scenarios.txt),
 * one dynamic test per listed name, run one at a time (they share topic names) by the same runner
 * against this binding's testee in its Kafka mode (MQ_CONFORMANCE_BACKEND=kafka: the broker on
 * the cluster at MQ_KAFKA_BOOTSTRAP). Only in the Kafka variant ({@code mvn -Pkafka test}).
 */
@Tag("kafka")
class KafkaConformanceTest {
    @TestFactory
    Stream<DynamicTest> everyKafkaScenario() throws Exception {
        Path dir = ConformanceTest.scripts();
        List<String> names = Files.readAllLines(dir.resolve("kafka_scenarios.txt")).stream()
                .map(String::strip).filter(l -> !l.isEmpty() && !l.startsWith("#")).toList();
        assertFalse(names.isEmpty(), "no scenario names in " + dir.resolve("kafka_scenarios.txt"));
        String bootstrap = KafkaBrokerTest.bootstrap();
        Path runner = ConformanceTest.runner();
        Path expected = Path.of(System.getProperty("mq.binding.dir"), "conformance_expected_failures.txt");
        return names.stream().map(name -> DynamicTest.dynamicTest(name, () -> {
            if (runner == null) {
                fail(ConformanceTest.noRunner());
            }
            Path script = dir.resolve(name + ".mqs");
            if (!Files.isRegularFile(script)) {
                fail("kafka_scenarios.txt names " + name + ", but there is no " + script);
            }
            ConformanceTest.run(runner, expected, script,
                    Map.of("MQ_CONFORMANCE_BACKEND", "kafka", "MQ_KAFKA_BOOTSTRAP", bootstrap));
        }));
    }

    /**
     * The testee's Kafka mode itself, request by request (a scenario passes on the in-process log
     * too, so the runs above alone would not show that the testee used the cluster): its topic is
     * on the cluster, the manual clock is refused, and {@code end} deletes the topic.
     */
    @Test
    void theTesteeWorksOnTheClusterAndEndDeletesItsTopics() throws Exception {
        String bootstrap = KafkaBrokerTest.bootstrap();
        String topic = "java-testee-" + UUID.randomUUID();
        ProcessBuilder pb = new ProcessBuilder("/bin/sh", "-c", ConformanceTest.testeeCommand())
                .redirectError(ProcessBuilder.Redirect.INHERIT);
        pb.environment().put("MQ_CONFORMANCE_BACKEND", "kafka");
        pb.environment().put("MQ_KAFKA_BOOTSTRAP", bootstrap);
        Process p = pb.start();
        try (Broker observer = Broker.create(BrokerOptions.builder().kafkaBootstrap(bootstrap).build());
                Writer in = new OutputStreamWriter(p.getOutputStream(), StandardCharsets.ISO_8859_1);
                BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(),
                        StandardCharsets.ISO_8859_1))) {
            assertEquals("MQ_OK protocol=1", request(in, out, "hello protocol=1"));
            assertEquals("MQ_OK", request(in, out, "broker_new"));
            assertEquals("MQ_OK", request(in, out, "topic_create topic=" + topic + " partitions=2"));
            assertTrue(observer.topics().contains(topic), "the testee's topic is on the cluster");
            assertEquals(2, observer.topicInfo(topic).partitions());
            assertEquals("testee_error detail=no%20manual%20clock%20on%20the%20Kafka%20backend",
                    request(in, out, "clock advance_ns=1000"));
            assertEquals("MQ_OK", request(in, out, "end"));
            assertFalse(observer.topics().contains(topic), "end deleted the scenario's topic");
        } finally {
            p.getOutputStream().close();
            if (!p.waitFor(30, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                fail("the testee did not exit at the end of its input");
            }
        }
        assertEquals(0, p.exitValue());
    }

    private static String request(Writer in, BufferedReader out, String line) throws Exception {
        in.write(line + "\n");
        in.flush();
        String reply = out.readLine();
        assertTrue(reply != null, "the testee exited at: " + line);
        return reply;
    }
}
