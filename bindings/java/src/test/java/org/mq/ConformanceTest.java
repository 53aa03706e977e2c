package org.mq;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

/**
 * The cross-language conformance scenarios: one dynamic test per tests/conformance/*.mqs file
 * (found by globbing, so a new script needs no edit here), each run by the suite's runner
 * against this binding's testee ({@code org.mq.conformance.Testee}, public API only), with the
 * binding's expected-failures list (expected empty).
 *
 * <p>The runner is {@code $MQ_CONFORMANCE_RUNNER} when set, else the one the native build
 * compiled from the repository's sources, else {@code build/tests/conformance/mq_conformance}
 * of the repository's plain build. Without one every test fails, saying how to build it.
 */
class ConformanceTest {
    private static final Path ROOT = Path.of(System.getProperty("mq.repo.root")).toAbsolutePath().normalize();

    /** -Dmq.conformance.dir or $MQ_CONFORMANCE_DIR, else the repository's tests/conformance. */
    static Path scripts() {
        String dir = System.getProperty("mq.conformance.dir");
        if (dir == null || dir.isEmpty()) {
            dir = System.getenv("MQ_CONFORMANCE_DIR");
        }
        return dir != null && !dir.isEmpty() ? Path.of(dir) : ROOT.resolve("tests/conformance");
    }

    static String noRunner() {
        return "no conformance runner: set MQ_CONFORMANCE_RUNNER, or build it with the"
                + " repository (cmake --build build --target mq_conformance); the binding's"
                + " native build compiles it when tests/conformance/runner/ exists";
    }

    static Path runner() {
        List<Path> candidates = new ArrayList<>();
        String env = System.getenv("MQ_CONFORMANCE_RUNNER");
        if (env != null && !env.isEmpty()) {
            return Path.of(env);
        }
        candidates.add(Path.of(System.getProperty("mq.native.build"), "mq_conformance"));
        // The Kafka variant (target/kafka/) builds only the JNI library: the default one's runner.
        candidates.add(Path.of(System.getProperty("mq.binding.dir"), "target", "native", "mq_conformance"));
        candidates.add(ROOT.resolve("build/tests/conformance/mq_conformance"));
        for (Path p : candidates) {
            if (Files.isExecutable(p)) {
                return p;
            }
        }
        return null;
    }

    static String testeeCommand() {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        // Quick start-up (one JVM per script); JNI checked as in the rest of the suite.
        return String.join(" ", quote(java), "-Xcheck:jni", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC",
                "-Xshare:auto", "-cp", quote(System.getProperty("java.class.path")),
                "org.mq.conformance.Testee");
    }

    static String quote(String s) {
        return "'" + s.replace("'", "'\\''") + "'";
    }

    @TestFactory
    Stream<DynamicTest> everyScript() throws Exception {
        List<Path> files;
        try (Stream<Path> s = Files.list(scripts())) {
            files = s.filter(p -> p.toString().endsWith(".mqs")).sorted().toList();
        }
        assertTrue(!files.isEmpty(), "no .mqs scripts in " + scripts());
        Path runner = runner();
        Path expected = Path.of(System.getProperty("mq.binding.dir"), "conformance_expected_failures.txt");
        return files.stream().map(f -> DynamicTest.dynamicTest(f.getFileName().toString().replace(".mqs", ""),
                f.toUri(), () -> {
                    if (runner == null) {
                        fail(noRunner());
                    }
                    run(runner, expected, f);
                }));
    }

    static void run(Path runner, Path expected, Path script) throws Exception {
        run(runner, expected, script, Map.of());
    }

    /** One script through the runner; {@code env} is added to the testee's environment. */
    static void run(Path runner, Path expected, Path script, Map<String, String> env) throws Exception {
        ProcessBuilder pb = new ProcessBuilder(runner.toString(), "--testee", testeeCommand(), "--expected-failures",
                expected.toString(), script.toString()).redirectErrorStream(true);
        pb.environment().putAll(env);
        Process p = pb.start();
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (InputStream in = p.getInputStream()) {
            in.transferTo(out);
        }
        assertTrue(p.waitFor(300, TimeUnit.SECONDS), "the runner did not finish");
        assertEquals(0, p.exitValue(), out.toString(StandardCharsets.UTF_8));
    }
}
