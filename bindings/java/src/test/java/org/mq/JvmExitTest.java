package org.mq;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * A JVM with live subscriptions, a member, a running handler and calls blocked in the library
 * exits promptly and cleanly, however it ends (library threads are daemons; nothing closes).
 */
class JvmExitTest {
    @ParameterizedTest(name = "{0} -> exit code {1}")
    @CsvSource({"return, 0", "exit, 0", "exit-from-handler, 3", "runtime-halt, 0"})
    void childJvmExits(String mode, int expectedCode, @org.junit.jupiter.api.io.TempDir Path dir)
            throws Exception {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        Path out = dir.resolve("out.txt");
        Process p = new ProcessBuilder(java, "-Xcheck:jni", "-XX:ErrorFile=" + dir.resolve("hs_err.log"),
                "-cp", System.getProperty("java.class.path"), ExitProbe.class.getName(), mode)
                .redirectErrorStream(true).redirectOutput(out.toFile()).directory(dir.toFile()).start();
        boolean ended = p.waitFor(30, TimeUnit.SECONDS);
        if (!ended) {
            p.destroyForcibly().waitFor();
        }
        String output = Files.readString(out, StandardCharsets.UTF_8);
        assertTrue(ended, "the JVM did not exit within 30 s; its output:\n" + output);
        assertTrue(output.contains("ready"), "the child got its subscriptions running:\n" + output);
        assertEquals(expectedCode, p.exitValue(), output);
        assertFalse(new File(dir.toFile(), "hs_err.log").exists(), "the JVM crashed:\n" + output);
        for (String bad : List.of("FATAL", "SIGSEGV", "WARNING in native method", "terminate called")) {
            assertFalse(output.contains(bad), "'" + bad + "' in the child's output:\n" + output);
        }
    }
}
