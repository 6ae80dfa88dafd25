package io.kstream.spark.format;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import org.junit.jupiter.api.Test;

/** .txnindex entries (a committed and an aborted transaction; a torn tail) and what a reader derives. */
class TxnIndexVectorTest {
    private static void assertEntries(JsonNode expected, TxnIndex index, String what) {
        assertEquals(expected.size(), index.entries.size(), what);
        for (int i = 0; i < expected.size(); i++) {
            TxnIndex.Entry entry = index.entries.get(i);
            assertEquals(expected.get(i).get(0).asInt(), entry.kind, what + " entry " + i);
            assertEquals(expected.get(i).get(1).asLong(), entry.producerId, what + " entry " + i);
            assertEquals(expected.get(i).get(2).asLong(), entry.offset, what + " entry " + i);
        }
    }

    @Test
    void theTransactionalPartitionsIndex() throws IOException {
        JsonNode expected = SharedVectors.manifest().path("replicas").path("txn-0").path("txn_index");
        TxnIndex index = TxnIndex.read(SharedVectors.replicaDir("txn-0"), 0, Long.MAX_VALUE);
        assertEntries(expected, index, "txn-0");
        assertTrue(index.whole);
        assertTrue(expected.size() >= 4, "data, commit, data, abort");
    }

    @Test
    void aTornLastEntryEndsTheTrustedPart() throws IOException {
        JsonNode expected = SharedVectors.manifest().path("files").path("txn-torn");
        TxnIndex index = TxnIndex.read(SharedVectors.file("txn-torn"), 0, Long.MAX_VALUE);
        assertEntries(expected.path("entries"), index, "txn-torn");
        assertFalse(index.whole);
    }

    @Test
    void theAbortedTransactionIsOneRangeAndNothingIsOpen() throws IOException {
        JsonNode replica = SharedVectors.manifest().path("replicas").path("txn-0");
        JsonNode records = SharedVectors.manifest().path("records").path("txn-0");
        long hw = replica.path("log_end_offset").asLong();
        TransactionState state = TransactionState.derive(SharedVectors.replicaDir("txn-0"), hw, true);
        assertEquals(hw, state.lastStableOffset);
        assertEquals(1, state.aborted.size());
        TransactionState.AbortedRange range = state.aborted.get(0);
        long first = -1;
        long marker = -1;
        for (int offset = 0; offset < records.size(); offset++) {
            JsonNode record = records.get(offset);
            if (record.path("aborted").asBoolean() && first < 0) first = offset;
            if (record.path("value").asText().equals(Format.CONTROL_ABORT)) marker = offset;
        }
        assertEquals(first, range.first);
        assertEquals(marker, range.marker);
        for (JsonNode frame : replica.path("frames")) {
            if ((frame.path("attributes").asInt() & Format.TRANSACTIONAL) != 0) {
                assertEquals(frame.path("producer_id").asLong(), range.producerId);
            }
        }
    }
}
