package io.kvrouter.server;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvrouter.cluster.kvevents.KvEventFanout;
import io.kvrouter.cluster.kvevents.KvEventRecord;
import io.kvrouter.core.indexer.StorageTier;
import io.kvrouter.core.selection.RequestLimits;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.apache.pekko.serialization.SerializationExtension;
import org.junit.jupiter.api.Test;

/**
 * The KV batch limits keep the message that fans a batch out to the region's nodes inside one Artery frame
 * (256 KiB), serialized as the node serializes it.
 */
class KvBatchFrameTest {
  private static final int ARTERY_FRAME_BYTES = 256 * 1024;

  @Test
  void theLargestBatchAllowedFitsOneArteryFrame() {
    try (TestRouter router = TestRouter.start("")) {
      int events = RequestLimits.MAX_KV_EVENTS_PER_BATCH;
      int blocksPerEvent = RequestLimits.MAX_KV_BLOCKS_PER_BATCH / events;
      List<KvEventRecord> records = new ArrayList<>();
      for (int i = 0; i < events; i++) {
        long[] hashes = new long[blocksPerEvent];
        Arrays.fill(hashes, Long.MIN_VALUE + i); // the widest encoding of a long
        records.add(new KvEventRecord(Long.MAX_VALUE - i, KvEventRecord.Kind.STORED, StorageTier.DISK,
            Long.MIN_VALUE, hashes, hashes.clone()));
      }
      String longest = "n".repeat(RequestLimits.MAX_ID_LENGTH);
      var published = new KvEventFanout.Published(longest, longest, longest, RequestLimits.MAX_DP_RANK_END - 1,
          records);
      byte[] bytes = SerializationExtension.get(router.node.system().classicSystem()).serialize(published).get();
      // the topic's envelope adds a little: keep a tenth of the frame for it
      assertThat(bytes.length).isLessThan(ARTERY_FRAME_BYTES * 9 / 10);
    }
  }
}
