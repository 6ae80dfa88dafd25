package io.kstream.spark.write;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.EnumSet;
import java.util.Map;
import java.util.Set;
import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.SupportsWrite;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.SupportsTruncate;
import org.apache.spark.sql.connector.write.Write;
import org.apache.spark.sql.connector.write.WriteBuilder;
import org.apache.spark.sql.internal.connector.SupportsStreamingUpdateAsAppend;
import org.apache.spark.sql.connector.catalog.Column;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import org.junit.jupiter.api.Test;

/**
 * The write table adds update mode around Python's table and changes nothing else. (No
 * StructType is made here: Spark's types need json4s, which the test classpath lacks; the
 * fakes' schema is null and their columns an array of their own, passed through by identity.)
 */
class KStreamWriteTableTest {
    private static final StructType SCHEMA = null;
    private static final Column[] COLUMNS = new Column[0];

    /** Python's builder, as PythonWriteBuilder is: append by build(), complete by truncate(). */
    private static final class PythonBuilder implements SupportsTruncate {
        final Write append = new Write() {};
        final Write overwrite = new Write() {};
        boolean truncated;

        @Override
        public WriteBuilder truncate() {
            PythonBuilder copy = new PythonBuilder();
            copy.truncated = true;
            return copy;
        }

        @Override
        public Write build() {
            return truncated ? overwrite : append;
        }
    }

    /** Python's table, as PythonTable is: readable and writable. */
    private static final class PythonTable implements SupportsRead, SupportsWrite {
        final PythonBuilder builder = new PythonBuilder();
        LogicalWriteInfo info;

        @Override
        public String name() {
            return "kstream";
        }

        @Override
        @SuppressWarnings("deprecation")
        public StructType schema() {
            return SCHEMA;
        }

        @Override
        public Column[] columns() {
            return COLUMNS;
        }

        @Override
        public Set<TableCapability> capabilities() {
            return EnumSet.of(TableCapability.BATCH_WRITE, TableCapability.STREAMING_WRITE, TableCapability.TRUNCATE,
                TableCapability.BATCH_READ, TableCapability.MICRO_BATCH_READ);
        }

        @Override
        public Map<String, String> properties() {
            return Map.of("cluster", "/data");
        }

        @Override
        public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
            throw new IllegalStateException("ConfigError: name the topics to read");
        }

        @Override
        public WriteBuilder newWriteBuilder(LogicalWriteInfo info) {
            this.info = info;
            return builder;
        }
    }

    @Test
    void updateModeBuildsPythonsAppendWrite() {
        PythonTable python = new PythonTable();
        WriteBuilder builder = new KStreamWriteTable(python).newWriteBuilder(null);
        // What StreamExecution.createWrite requires of update mode, then calls.
        SupportsStreamingUpdateAsAppend update = assertInstanceOf(SupportsStreamingUpdateAsAppend.class, builder);
        assertSame(python.builder.append, update.build());
    }

    @Test
    void completeModeIsPythonsTruncate() {
        PythonTable python = new PythonTable();
        WriteBuilder builder = new KStreamWriteTable(python).newWriteBuilder(null);
        WriteBuilder truncated = assertInstanceOf(SupportsTruncate.class, builder).truncate();
        PythonBuilder pythons = assertInstanceOf(PythonBuilder.class, truncated); // Python's own, not a wrapper
        assertTrue(pythons.truncated);
        assertSame(pythons.overwrite, truncated.build());
    }

    @Test
    void appendModeIsPythonsBuild() {
        PythonTable python = new PythonTable();
        assertSame(python.builder.append, new KStreamWriteTable(python).newWriteBuilder(null).build());
    }

    @Test
    @SuppressWarnings("deprecation")
    void everythingElseIsPythonsTable() {
        PythonTable python = new PythonTable();
        KStreamWriteTable table = new KStreamWriteTable(python);
        assertEquals("kstream", table.name());
        assertSame(SCHEMA, table.schema());
        assertSame(COLUMNS, table.columns());
        assertEquals(python.capabilities(), table.capabilities());
        assertEquals(python.properties(), table.properties());
        assertSame(python, table.python());
        IllegalStateException read = assertThrows(IllegalStateException.class,
            () -> table.newScanBuilder(null));
        assertEquals("ConfigError: name the topics to read", read.getMessage());
    }

    @Test
    void aBuilderWithoutTruncateRefusesCompleteModeByName() {
        WriteBuilder appendOnly = new WriteBuilder() {};
        UnsupportedOperationException e = assertThrows(UnsupportedOperationException.class,
            () -> new UpdateAsAppendWriteBuilder(appendOnly, null).truncate());
        assertTrue(e.getMessage().contains("does not support truncate (complete output mode)"), e.getMessage());
    }

    @Test
    void aTableThatCannotWriteIsRefused() {
        Table readOnly = new Table() {
            @Override
            public String name() {
                return "r";
            }

            @Override
            @SuppressWarnings("deprecation")
            public StructType schema() {
                return SCHEMA;
            }

            @Override
            public Set<TableCapability> capabilities() {
                return EnumSet.of(TableCapability.BATCH_READ);
            }
        };
        assertThrows(IllegalArgumentException.class, () -> new KStreamWriteTable(readOnly));
    }
}
