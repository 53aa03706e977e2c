package org.mq;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** Text from the library (names, messages) reaches Java through Java's UTF-8 decoder. */
class NativeTextTest {
    private static final String NAME = "caf\u00e9-\u20ac-\ud834\udd1e";  // 2-, 3- and 4-byte UTF-8

    @Test
    void aMessageEchoingANameKeepsEveryCodePoint() {
        try (Broker b = Broker.create()) {
            // Names are ASCII; the library's refusal quotes the name it got, in UTF-8.
            MqException e = assertThrows(MqInvalidArgumentException.class, () -> b.createTopic(NAME));
            assertTrue(e.getMessage().contains("\"" + NAME + "\""), e.getMessage());
        }
    }

    @Test
    void malformedBytesBecomeReplacementCharacters() {
        byte[] bad = {'a', (byte) 0xff, 'b', (byte) 0xc3};
        assertEquals("a\ufffdb\ufffd", MqException.fromNative(bad));
        assertEquals(NAME, MqException.fromNative(NAME.getBytes(StandardCharsets.UTF_8)));
    }
}
