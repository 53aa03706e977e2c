package org.mq;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * examples/java/ReferenceTrace.java prints the C demo's trace section (its output up to the
 * reference stress) byte for byte. The C demo is the one built with the binding's core.
 */
class ReferenceTraceTest {
    private static final String STRESS = "\nReference stress";

    static String run(List<String> command, Path dir) throws Exception {
        ProcessBuilder pb = new ProcessBuilder(command).directory(dir.toFile()).redirectErrorStream(true);
        pb.environment().put("NO_COLOR", "1");
        Process p = pb.start();
        byte[] out;
        try (InputStream in = p.getInputStream()) {
            out = readAll(in);
        }
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), command + " did not finish");
        String text = new String(out, StandardCharsets.UTF_8);
        assertEquals(0, p.exitValue(), command + " failed:\n" + text);
        return text;
    }

    private static byte[] readAll(InputStream in) throws IOException {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        in.transferTo(b);
        return b.toByteArray();
    }

    @Test
    void javaTracePrintsWhatTheCDemoPrints() throws Exception {
        Path root = Path.of(System.getProperty("mq.repo.root")).toAbsolutePath().normalize();
        Path demo = Path.of(System.getProperty("mq.demo"));
        assertTrue(Files.isExecutable(demo), "the C demo is built with the native library: " + demo);
        String c = run(List.of(demo.toString()), root);
        int cut = c.indexOf(STRESS);
        assertTrue(cut > 0, "the C demo's output has a stress section:\n" + c);
        String cTrace = c.substring(0, cut);

        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        String j = run(List.of(java, "-cp", System.getProperty("mq.classes"),
                root.resolve("examples/java/ReferenceTrace.java").toString()), root);
        assertEquals(cTrace, j);
    }
}
