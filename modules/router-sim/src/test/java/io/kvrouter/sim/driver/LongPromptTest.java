package io.kvrouter.sim.driver;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvrouter.sim.engine.KvBlockCache;
import io.kvrouter.sim.engine.KvCacheEvent;
import io.kvrouter.sim.workload.MooncakeTrace;
import io.kvrouter.sim.workload.TraceWorkload;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.LongStream;
import org.junit.jupiter.api.Test;

/**
 * Regression: a Mooncake-format trace whose long prompts make one rank publish more than the router's 8,192 block
 * hashes between two calls (a prompt of ~8,100 blocks evicting another's) ran into INVALID_ARGUMENT and a stack trace;
 * the events are now cut into batches within the limits, and a request over the router's prompt limit is counted as
 * rejected while the run goes on.
 */
class LongPromptTest {
  private static MooncakeTrace.Entry entry(long millis, int inputTokens, long firstId) {
    int ids = (inputTokens + MooncakeTrace.BLOCK_TOKENS - 1) / MooncakeTrace.BLOCK_TOKENS;
    return new MooncakeTrace.Entry(millis, inputTokens, 16, LongStream.range(firstId, firstId + ids).toArray());
  }

  @Test
  void longPromptsPublishWithinTheRouterLimitsAndAnOverLimitPromptIsCountedAsRejected() {
    List<MooncakeTrace.Entry> trace = List.of(
        entry(0, 130_000, 0),              // 8,126 blocks of 16 cached on the single rank
        entry(60_500, 130_000, 1_000),     // another 8,126 between two load reports: evicts 7,252 of the first
        entry(120_000, 140_000, 2_000),    // over the router's 131,072-token prompt limit: rejected
        entry(130_000, 2_000, 0));         // a short prompt sharing the first one's head: still served
    // one engine of 9,000 blocks: the second long prompt's admission evicts 7,252 blocks, and its first prefill steps
    // store more before the next load report flushes the rank's events
    Comparison.Setup setup = new Comparison.Setup("long-prompts", FleetConfig.of(1, 1, 9_000, 16),
        () -> new TraceWorkload(trace, "long-prompts", 1.0, 5), 5, Map.of());
    List<Comparison.Contender> contenders = List.of(new Comparison.Contender("kv", "kv", true));
    Pacer.Virtual clock = new Pacer.Virtual();
    List<RunResult> results;
    try (InProcessRouter router = InProcessRouter.start(clock)) {
      results = Comparison.run(setup, contenders, router.clients(), clock, "", (label, done, arrived, now) -> {});
    }
    RunResult kv = results.get(0);
    assertThat(kv.completed()).isEqualTo(3);
    assertThat(kv.rejected()).isEqualTo(1);
  }

  @Test
  void batchesKeepEveryEventInOrderWithinTheEventAndHashLimits() {
    List<KvCacheEvent> events = new ArrayList<>();
    long id = 1;
    for (int i = 0; i < 700; i++) {
      events.add(new KvCacheEvent.Removed(id++, new long[] {i}));
    }
    events.add(new KvCacheEvent.Removed(id++, new long[KvBlockCache.MAX_BLOCKS_PER_EVENT]));
    events.add(new KvCacheEvent.Removed(id++, new long[5_000]));
    events.add(new KvCacheEvent.Removed(id++, new long[4_000]));
    events.add(new KvCacheEvent.Cleared(id++));

    List<List<KvCacheEvent>> batches = KvBatches.split(events);

    assertThat(batches).allSatisfy(batch -> {
      assertThat(batch).hasSizeBetween(1, 512);
      assertThat(batch.stream().mapToInt(KvCacheEvent::blockCount).sum()).isLessThanOrEqualTo(8_192);
    });
    assertThat(batches.stream().flatMap(List::stream).toList()).containsExactlyElementsOf(events);
    // 700 single-block events: 512, then 188 with room for nothing as large as 8,192 after them
    assertThat(batches).extracting(List::size).containsExactly(512, 188, 1, 1, 2);
  }
}
