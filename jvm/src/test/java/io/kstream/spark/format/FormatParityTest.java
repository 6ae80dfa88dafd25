package io.kstream.spark.format;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.JsonNode;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;

/**
 * Every constant of {@link Format} equals format.py's (as tests/jvm/vectors.py names them), and
 * each side has no constant the other lacks: a layout changed in one language fails here.
 */
class FormatParityTest {
    @Test
    void everyConstantEqualsFormatPy() throws IllegalAccessException {
        JsonNode python = SharedVectors.manifest().path("constants");
        Map<String, Object> java = new TreeMap<>();
        for (Field field : Format.class.getDeclaredFields()) {
            int modifiers = field.getModifiers();
            if (Modifier.isPublic(modifiers) && Modifier.isStatic(modifiers) && Modifier.isFinal(modifiers)) {
                java.put(field.getName(), field.get(null));
            }
        }
        TreeSet<String> pythonNames = new TreeSet<>();
        for (Iterator<String> names = python.fieldNames(); names.hasNext(); ) pythonNames.add(names.next());
        TreeSet<String> onlyPython = new TreeSet<>(pythonNames);
        onlyPython.removeAll(java.keySet());
        TreeSet<String> onlyJava = new TreeSet<>(java.keySet());
        onlyJava.removeAll(pythonNames);
        assertEquals(List.of(), List.copyOf(onlyPython), "in format.py (tests/jvm/vectors.py names them) only");
        assertEquals(List.of(), List.copyOf(onlyJava), "in Format.java only");
        for (Map.Entry<String, Object> constant : java.entrySet()) {
            JsonNode expected = python.path(constant.getKey());
            Object actual = constant.getValue();
            if (actual instanceof String) {
                assertEquals(expected.asText(), actual, constant.getKey());
            } else {
                assertEquals(expected.asLong(), ((Number) actual).longValue(), constant.getKey());
            }
        }
    }
}
