package io.kstream.spark.lake;

import io.kstream.spark.error.KStreamException;
import java.io.IOException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.parquet.example.data.Group;
import org.apache.parquet.hadoop.ParquetReader;
import org.apache.parquet.hadoop.example.GroupReadSupport;
import org.apache.parquet.schema.GroupType;

/**
 * Reads a classic Delta checkpoint (one Parquet file, or all parts of a multi-part one) into a
 * {@link DeltaSnapshot.DeltaActions}: each row holds one action in one of its top-level columns
 * (add, txn, metaData, protocol; a checkpoint's remove rows are tombstones for vacuum and
 * change nothing for a reader). Read with parquet-hadoop's example Group API (Spark ships it),
 * row by row: a checkpoint holds one row per live file, not the data.
 */
final class DeltaCheckpoint {
    private DeltaCheckpoint() {}

    static void read(List<String> parts, DeltaSnapshot.DeltaActions actions) {
        Configuration conf = new Configuration();
        for (String part : parts) {
            try (ParquetReader<Group> reader = ParquetReader.builder(new GroupReadSupport(), new Path(part))
                    .withConf(conf).build()) {
                Group row;
                while ((row = reader.read()) != null) action(row, actions);
            } catch (IOException | RuntimeException e) {
                if (e instanceof KStreamException k) throw k;
                throw new KStreamException(KStreamException.Kind.KStreamError, "cannot read the Delta checkpoint "
                    + part + ": " + e, e);
            }
        }
    }

    private static void action(Group row, DeltaSnapshot.DeltaActions actions) {
        Group add = child(row, "add");
        if (add != null) {
            if (child(add, "deletionVector") != null) actions.deletionVector(add.getString("path", 0));
            actions.add(add.getString("path", 0), map(child(add, "partitionValues")), string(add, "stats"));
            return;
        }
        Group txn = child(row, "txn");
        if (txn != null) {
            actions.txn(txn.getString("appId", 0), txn.getLong("version", 0));
            return;
        }
        Group meta = child(row, "metaData");
        if (meta != null) {
            actions.metaData(string(meta, "description"), list(child(meta, "partitionColumns")),
                map(child(meta, "configuration")));
            return;
        }
        Group protocol = child(row, "protocol");
        if (protocol != null) {
            actions.protocol(protocol.getInteger("minReaderVersion", 0), list(child(protocol, "readerFeatures")));
        }
    }

    /** A nested group field, or null when the field is absent or null. */
    private static Group child(Group group, String name) {
        GroupType type = group.getType();
        if (!type.containsField(name) || group.getFieldRepetitionCount(name) == 0) return null;
        return group.getGroup(name, 0);
    }

    private static String string(Group group, String name) {
        if (!group.getType().containsField(name) || group.getFieldRepetitionCount(name) == 0) return null;
        return group.getString(name, 0);
    }

    /** A Parquet MAP of strings (its one repeated key_value group); empty for null. */
    private static Map<String, String> map(Group map) {
        Map<String, String> out = new LinkedHashMap<>();
        if (map == null) return out;
        for (int i = 0; i < map.getFieldRepetitionCount(0); i++) {
            Group entry = map.getGroup(0, i);
            out.put(entry.getString("key", 0), string(entry, "value"));
        }
        return out;
    }

    /** A Parquet LIST of strings (three-level, or a legacy repeated primitive); empty for null. */
    private static List<String> list(Group list) {
        List<String> out = new ArrayList<>();
        if (list == null) return out;
        boolean legacy = list.getType().getType(0).isPrimitive();
        for (int i = 0; i < list.getFieldRepetitionCount(0); i++) {
            if (legacy) {
                out.add(list.getString(0, i));
            } else {
                Group item = list.getGroup(0, i);
                if (item.getFieldRepetitionCount(0) > 0) out.add(item.getString(0, 0));
            }
        }
        return out;
    }
}
