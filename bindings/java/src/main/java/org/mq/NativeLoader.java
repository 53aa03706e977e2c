package org.mq;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Locale;

/**
 * Loads the native library (the JNI wrapper with the mq core linked in) once per class loader.
 * The jar carries it under {@code org/mq/native/<os>-<arch>/libmqjava.so}; it is copied to a
 * temporary file, loaded, and the file deleted at once (the mapping outlives the name). The
 * system property {@code mq.library.path} names a library file to load instead (one built
 * against an installed libmq, for instance).
 */
final class NativeLoader {
    private static boolean loaded;

    private NativeLoader() {}

    static synchronized void load() {
        if (loaded) {
            return;
        }
        String override = System.getProperty("mq.library.path");
        if (override != null && !override.isEmpty()) {
            System.load(Path.of(override).toAbsolutePath().toString());
        } else {
            loadFromJar();
        }
        loaded = true;
    }

    static String platform() {
        String os = System.getProperty("os.name", "").toLowerCase(Locale.ROOT);
        if (os.startsWith("linux")) {
            os = "linux";
        } else if (os.startsWith("mac")) {
            os = "darwin";
        }
        String arch = System.getProperty("os.arch", "").toLowerCase(Locale.ROOT);
        if (arch.equals("amd64") || arch.equals("x86-64")) {
            arch = "x86_64";
        } else if (arch.equals("arm64")) {
            arch = "aarch64";
        }
        return os + "-" + arch;
    }

    private static void loadFromJar() {
        String resource = "native/" + platform() + "/libmqjava.so";
        try (InputStream in = NativeLoader.class.getResourceAsStream(resource)) {
            if (in == null) {
                throw new UnsatisfiedLinkError("mq: no native library for " + platform()
                        + " in the jar (looked for org/mq/" + resource + "); build the binding on"
                        + " this platform, or set -Dmq.library.path to a built libmqjava.so");
            }
            Path file = Files.createTempFile("libmqjava", ".so");
            try {
                Files.copy(in, file, StandardCopyOption.REPLACE_EXISTING);
                System.load(file.toAbsolutePath().toString());
            } finally {
                Files.deleteIfExists(file);
            }
        } catch (IOException e) {
            UnsatisfiedLinkError error = new UnsatisfiedLinkError(
                    "mq: cannot extract the native library to a temporary file: " + e);
            error.initCause(e);
            throw error;
        }
    }
}
