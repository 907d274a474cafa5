package io.kvrouter.engines.events;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvrouter.cluster.kvevents.KvEventRecord;
import io.kvrouter.core.indexer.KvEvent;
import io.kvrouter.core.indexer.StorageTier;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.LongStream;
import org.junit.jupiter.api.Test;

class RecordBatcherTest {

  @Test
  void aLongStoredIsCutIntoChainedPiecesWithConsecutiveIdsWithinTheLimits() {
    long[] hashes = LongStream.range(0, 20_000).toArray();
    long[] tokens = LongStream.range(100_000, 120_000).toArray();
    List<KvEvent> events = new ArrayList<>();
    events.add(new KvEvent.Stored(StorageTier.DEVICE, 99L, hashes, tokens));
    for (int i = 0; i < 600; i++) {
      events.add(new KvEvent.Removed(StorageTier.HOST, new long[] {i}));
    }
    long[] next = {10};
    List<List<KvEventRecord>> batches = new RecordBatcher().batches(events, () -> next[0]++);
    List<KvEventRecord> all = batches.stream().flatMap(List::stream).toList();
    assertThat(all).extracting(KvEventRecord::eventId).containsExactlyElementsOf(
        LongStream.range(10, 10 + 3 + 600).boxed().toList());
    assertThat(all.get(0).parentBlockHash()).isEqualTo(99L);
    assertThat(all.get(1).parentBlockHash()).isEqualTo(8191L);
    assertThat(all.get(2).parentBlockHash()).isEqualTo(16383L);
    assertThat(all.get(2).blockHashes()).hasSize(20_000 - 2 * 8192);
    for (List<KvEventRecord> batch : batches) {
      assertThat(batch.size()).isLessThanOrEqualTo(512);
      assertThat(batch.stream().mapToInt(r -> r.blockHashes() == null ? 0 : r.blockHashes().length).sum())
          .isLessThanOrEqualTo(8192);
    }
  }
}
