package io.kstream.spark;

import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** The error when Spark's Python workers cannot import kstream names the interpreter Spark ran. */
class KStreamProviderMessageTest {
    @Test
    void namesTheDriverPythonFirstAsSparkRunsIt() {
        String message = KStreamProvider.pythonNotFound("/opt/jupyter-python", "/usr/bin/python3.11");
        assertTrue(message.contains("'/opt/jupyter-python' (PYSPARK_DRIVER_PYTHON of the Spark JVM)"), message);
        assertTrue(message.contains("kstream.spark_session()"), message);
    }

    @Test
    void thenTheWorkerPython() {
        String message = KStreamProvider.pythonNotFound("", "/usr/bin/python3.11");
        assertTrue(message.contains("'/usr/bin/python3.11' (PYSPARK_PYTHON of the Spark JVM)"), message);
    }

    @Test
    void elsePython3FromPath() {
        String message = KStreamProvider.pythonNotFound(null, null);
        assertTrue(message.contains("'python3' from the Spark JVM's PATH"), message);
        assertTrue(message.contains("set PYSPARK_PYTHON to an interpreter that has kstream installed"), message);
    }
}
