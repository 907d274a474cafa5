package io.kvrouter.core.selection;

import static io.kvrouter.core.Fixtures.worker;
import static org.assertj.core.api.Assertions.assertThat;

import io.kvrouter.core.admission.AdmissionSettings;
import io.kvrouter.core.admission.AdmissionState;
import io.kvrouter.core.admission.BookOutcome;
import io.kvrouter.core.testkit.ManualClock;
import io.kvrouter.core.hashing.BlockHasher;
import io.kvrouter.core.indexer.KvEvent;
import io.kvrouter.core.indexer.ModelKvIndex;
import io.kvrouter.core.indexer.StorageTier;
import io.kvrouter.core.model.Rank;
import io.kvrouter.core.testkit.Selections;
import io.kvrouter.core.testkit.Requests;
import java.util.Map;
import java.util.stream.IntStream;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The kv policy end to end in router-core, with Dynamo's preset: index overlaps, active load and per-request overrides
 * decide the pick.
 */
class KvPickTest {
  private static final int[] PROMPT = IntStream.range(0, 64).map(i -> 3 * i + 1).toArray();
  private final ManualClock clock = new ManualClock(5_000_000);
  private final ModelKvIndex index = new ModelKvIndex(clock::millis);
  private final long[] hashes = BlockHasher.sequenceHashes(PROMPT, 16, BlockHasher.BASE_SEED);
  private AdmissionState state;

  @BeforeEach
  void setUp() {
    state = new AdmissionState("m", AdmissionSettings.DEFAULTS, clock, index, view -> {}, 0);
    state.register(worker("w1"));
    state.register(worker("w2"));
    // Dynamo's cost, whose arithmetic these tests pin
    state.setPolicy("kv", Map.of("seed", "3", "preset", "dynamo"));
    long[] engineIds = {101, 102, 103, 104};
    index.apply(new Rank("w1", 0), 1, new KvEvent.Stored(StorageTier.DEVICE, null, engineIds, hashes));
    // w1 also carries a 16-token booking: 16 prefill tokens, 1 decode block
    SelectionRequest small = Requests.pinned(Requests.of("m", "load", 16), "w1", null);
    assertThat(state.book(small, 1, 0)).isInstanceOf(BookOutcome.Booked.class);
  }

  private SelectionRequest prompt(Double overlapCredit, Double prefillLoadScale) {
    return new SelectionRequest("m", "", hashes, PROMPT.length, 0, null, null, null, 0, null, overlapCredit,
        prefillLoadScale);
  }

  @Test
  void theOverlapCreditWinsTheCachedWorkerAndAZeroCreditOverrideLosesIt() {
    // w1: max((16 + 64)/16 − 4, 0) + 1 + 4 = 6; w2: 64/16 + 0 + 4 = 8
    SelectionResult cached = Selections.select(state, clock, prompt(null, null));
    assertThat(cached.rank().workerId()).isEqualTo("w1");
    assertThat(cached.cost()).isEqualTo(6.0);
    assertThat(cached.overlapBlocks()).isEqualTo(4);
    assertThat(cached.cachedTokens()).isEqualTo(64);
    // credit 0: w1 costs 80/16 + 1 + 4 = 10, w2 still 8
    SelectionResult uncached = Selections.select(state, clock, prompt(0.0, null));
    assertThat(uncached.rank().workerId()).isEqualTo("w2");
    assertThat(uncached.cost()).isEqualTo(8.0);
  }

  @Test
  void aPrefillLoadScaleOverrideChangesThePick() {
    // scale 0: only decode blocks and additional active blocks count: w1 = 1 + 4, w2 = 0 + 4
    SelectionResult result = Selections.select(state, clock, prompt(null, 0.0));
    assertThat(result.rank().workerId()).isEqualTo("w2");
    assertThat(result.cost()).isEqualTo(4.0);
  }

  @Test
  void activeBookingsWithTheSamePrefixLowerTheAdditionalBlocks() {
    SelectionRequest same = new SelectionRequest("m", "same", hashes, PROMPT.length, 0, "w2", null, null, 0, null,
        null, null);
    assertThat(state.book(same, 2, 0)).isInstanceOf(BookOutcome.Booked.class);
    // w2 now holds the 4 blocks active (additional 0), and the Book taught its approximate index the prefix
    // (w2 sends no events): prefill max((64 + 64)/16 − 4, 0) = 4, decode 4
    SelectionResult onW2 = Selections.select(state, clock, Requests.pinned(prompt(null, null), "w2", null));
    assertThat(onW2.overlapBlocks()).isEqualTo(4);
    assertThat(onW2.cost()).isEqualTo(4.0 + 4 + 0);
  }
}
