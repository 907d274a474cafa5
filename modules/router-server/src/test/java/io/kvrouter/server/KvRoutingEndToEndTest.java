package io.kvrouter.server;

import static io.kvrouter.server.TestRouter.failure;
import static io.kvrouter.server.TestRouter.join;
import static io.kvrouter.server.TestRouter.reason;
import static io.kvrouter.server.TestRouter.worker;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.grpc.Status;
import io.kvrouter.api.v1.KvEvent;
import io.kvrouter.api.v1.KvEventAck;
import io.kvrouter.api.v1.KvEventBatch;
import io.kvrouter.api.v1.KvRemoved;
import io.kvrouter.api.v1.KvStored;
import io.kvrouter.api.v1.LoadReport;
import io.kvrouter.api.v1.RankLoadReport;
import io.kvrouter.api.v1.RouteRequest;
import io.kvrouter.api.v1.Selection;
import io.kvrouter.api.v1.SetPolicyRequest;
import io.kvrouter.api.v1.StoredBlock;
import io.kvrouter.core.hashing.BlockHasher;
import io.kvrouter.server.transport.Binding;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.HashSet;
import java.util.Set;
import java.util.stream.IntStream;
import net.openhft.hashing.LongHashFunction;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.AfterParameterizedClassInvocation;
import org.junit.jupiter.params.BeforeParameterizedClassInvocation;
import org.junit.jupiter.params.Parameter;
import org.junit.jupiter.params.ParameterizedClass;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * KV-aware routing over real gRPC: events steer Selects to the worker holding the prefix (docs/architecture.md, "The
 * KV index and KV events").
 */
@ParameterizedClass(name = "{0}")
@EnumSource(Binding.class)
class KvRoutingEndToEndTest {
  private static final int BLOCK = 16;
  private static final int[] PROMPT = IntStream.range(0, 64).map(i -> 1000 + 7 * i).toArray();
  private static TestRouter router;

  @Parameter
  Binding binding;

  @BeforeParameterizedClassInvocation
  static void start(Binding binding) {
    router = TestRouter.start(binding);
  }

  @AfterParameterizedClassInvocation
  static void stop() {
    router.close();
  }

  private static void model(String model) {
    join(router.workers.register(worker(model, "w1").build()));
    join(router.workers.register(worker(model, "w2").build()));
    join(router.admin.setPolicy(SetPolicyRequest.newBuilder().setModel(model).setPolicy("kv")
        .putParameters("seed", "21").build()));
  }

  private static RouteRequest.Builder prompt(String model, int[] tokens) {
    RouteRequest.Builder request = RouteRequest.newBuilder().setModel(model);
    for (int token : tokens) {
      request.addTokenIds(token);
    }
    return request;
  }

  private static KvEventAck publish(String model, String workerId, KvEvent... events) {
    KvEventBatch.Builder batch = KvEventBatch.newBuilder().setModel(model).setWorkerId(workerId).setDpRank(0);
    for (KvEvent event : events) {
      batch.addEvents(event);
    }
    return join(router.workers.publishKvEvents(batch.build()));
  }

  private static KvEvent storedPrompt(long eventId) {
    long[] sequence = BlockHasher.sequenceHashes(PROMPT, BLOCK, BlockHasher.BASE_SEED);
    KvStored.Builder stored = KvStored.newBuilder();
    for (int i = 0; i < sequence.length; i++) {
      // the engine's own ids differ from the router's hashes: the index navigates by tokens_hash
      stored.addBlocks(StoredBlock.newBuilder().setBlockHash(9_000 + i).setTokensHash(sequence[i]));
    }
    return KvEvent.newBuilder().setEventId(eventId).setStored(stored).build();
  }

  @Test
  void storedBlocksSteerTheSelectAndRemovedBlocksFallBackToTheIdleCost() {
    String model = "kv-events";
    model(model);
    assertThat(publish(model, "w1", storedPrompt(1)).getApplied()).isEqualTo(1);

    Selection steered = join(router.router.select(prompt(model, PROMPT).build()));
    assertThat(steered.getWorker().getWorkerId()).isEqualTo("w1");
    assertThat(steered.getOverlapBlocks()).isEqualTo(4);
    assertThat(steered.getCachedTokens()).isEqualTo(64);
    // the default preset: prefill 32·max(0.1·0 + 64/16 − 1.0·4, 0) = 0, no decode load, 4 additional active blocks
    assertThat(steered.getCost()).isEqualTo(4.0);

    KvEvent removed = KvEvent.newBuilder().setEventId(2)
        .setRemoved(KvRemoved.newBuilder().addBlockHashes(9_000)).build();
    assertThat(publish(model, "w1", removed).getApplied()).isEqualTo(1);
    Set<String> reached = new HashSet<>();
    for (int i = 0; i < 60; i++) {
      Selection idle = join(router.router.select(prompt(model, PROMPT).build()));
      assertThat(idle.getOverlapBlocks()).isZero();
      assertThat(idle.getCachedTokens()).isZero();
      // hand-computed idle cost: 32·64/16 prefill blocks + 4 additional active blocks
      assertThat(idle.getCost()).isEqualTo(32 * 4.0 + 4);
      reached.add(idle.getWorker().getWorkerId());
    }
    assertThat(reached).containsExactlyInAnyOrder("w1", "w2");
    assertThat(router.state(model).getKvEventFedWorkersList()).containsExactly("w1");
  }

  @Test
  void blockHashesSentByTheCallerMatchTokenHashing() {
    String model = "kv-block-hashes";
    model(model);
    publish(model, "w2", storedPrompt(1));
    long[] local = BlockHasher.localBlockHashes(PROMPT, BLOCK, BlockHasher.BASE_SEED);
    RouteRequest.Builder request = RouteRequest.newBuilder().setModel(model).setIslTokens(PROMPT.length);
    for (long hash : local) {
      request.addBlockHashes(hash);
    }
    Selection selection = join(router.router.select(request.build()));
    assertThat(selection.getWorker().getWorkerId()).isEqualTo("w2");
    assertThat(selection.getOverlapBlocks()).isEqualTo(4);
    // a salt changes the hashes: no overlap
    assertThat(join(router.router.select(prompt(model, PROMPT).setCacheSalt("tenant-b").build())).getOverlapBlocks())
        .isZero();
  }

  /**
   * router.proto's words: {@code block_hashes} are local block hashes, one per full block (XXH3-64 of the block's
   * token ids as little-endian u32, seed 1337; docs/architecture.md, "Block hashing"), computed here without the
   * router's BlockHasher. The server chains them itself, so they find the whole stored prefix; chained (sequence)
   * hashes sent instead match the first block only (its sequence hash is its local hash).
   */
  @Test
  void blockHashesAreLocalPerBlockHashesThatTheServerChains() {
    String model = "kv-local-hashes";
    model(model);
    publish(model, "w1", storedPrompt(1));
    LongHashFunction xxh3 = LongHashFunction.xx3(1337);
    long[] local = new long[PROMPT.length / BLOCK];
    for (int b = 0; b < local.length; b++) {
      ByteBuffer block = ByteBuffer.allocate(4 * BLOCK).order(ByteOrder.LITTLE_ENDIAN);
      for (int i = 0; i < BLOCK; i++) {
        block.putInt(PROMPT[b * BLOCK + i]);
      }
      local[b] = xxh3.hashBytes(block.array());
    }
    long[] chained = BlockHasher.sequenceHashes(PROMPT, BLOCK, BlockHasher.BASE_SEED);
    assertThat(local[0]).isEqualTo(chained[0]);
    assertThat(local[1]).as("the two forms differ from the second block on").isNotEqualTo(chained[1]);

    Selection byLocal = join(router.router.select(hashes(model, local).setPinnedWorker("w1").build()));
    assertThat(byLocal.getOverlapBlocks()).isEqualTo(4);
    assertThat(byLocal.getCachedTokens()).isEqualTo(64);
    Selection byChained = join(router.router.select(hashes(model, chained).setPinnedWorker("w1").build()));
    assertThat(byChained.getOverlapBlocks()).isEqualTo(1);
  }

  private static RouteRequest.Builder hashes(String model, long[] blockHashes) {
    RouteRequest.Builder request = RouteRequest.newBuilder().setModel(model).setIslTokens(PROMPT.length);
    for (long hash : blockHashes) {
      request.addBlockHashes(hash);
    }
    return request;
  }

  @Test
  void withoutEventsBooksFeedTheIndexAndSelectsDoNot() {
    String model = "kv-approximate";
    model(model);
    int[] other = IntStream.range(0, 64).map(i -> 50_000 + i).toArray();
    for (int i = 0; i < 3; i++) {
      assertThat(join(router.router.select(prompt(model, other).setPinnedWorker("w2").build())).getOverlapBlocks())
          .as("an advisory Select writes nothing").isZero();
    }
    String booked = join(router.router.book(prompt(model, PROMPT).setRequestId("b1").build()))
        .getSelection().getWorker().getWorkerId();
    Selection again = join(router.router.select(prompt(model, PROMPT).setPinnedWorker(booked).build()));
    assertThat(again.getOverlapBlocks()).isEqualTo(4);
    String notBooked = booked.equals("w1") ? "w2" : "w1";
    assertThat(join(router.router.select(prompt(model, PROMPT).setPinnedWorker(notBooked).build()))
        .getOverlapBlocks()).isZero();
  }

  @Test
  void eventGapsAreCountedAndBadBatchesRejected() {
    String model = "kv-gaps";
    model(model);
    publish(model, "w1", storedPrompt(1));
    KvEventAck gap = publish(model, "w1", KvEvent.newBuilder().setEventId(5)
        .setCleared(io.kvrouter.api.v1.KvCleared.getDefaultInstance()).build());
    // 5 waits for 2..4 (they could come through another node); once the reorder window passes they are lost.
    assertThat(gap.getHeld()).isEqualTo(1);
    assertThat(gap.getApplied()).isZero();
    await().atMost(Duration.ofSeconds(5)).until(() -> router.state(model).getKvEventGaps() == 1);
    var ghost = failure(router.workers.publishKvEvents(KvEventBatch.newBuilder().setModel(model)
        .setWorkerId("ghost").addEvents(storedPrompt(1)).build()));
    assertThat(ghost.getStatus().getCode()).isEqualTo(Status.Code.NOT_FOUND);
    assertThat(reason(ghost)).isEqualTo("UNKNOWN_WORKER");
    var badRank = failure(router.workers.publishKvEvents(KvEventBatch.newBuilder().setModel(model)
        .setWorkerId("w1").setDpRank(3).addEvents(storedPrompt(1)).build()));
    assertThat(badRank.getStatus().getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT);
    var empty = failure(router.workers.publishKvEvents(KvEventBatch.newBuilder().setModel(model)
        .setWorkerId("w1").addEvents(KvEvent.newBuilder().setEventId(6)).build()));
    assertThat(reason(empty)).isEqualTo("MALFORMED");
  }

  @Test
  void aRankIndexesAtMostItsBoundAndStateCountsTheRest() {
    String model = "kv-bounded";
    // 2 KV blocks x blocks-per-kv-block (4, the default) = 8 blocks in the index
    join(router.workers.register(worker(model, "small").setTotalKvBlocks(2).build()));
    for (int chain = 0; chain < 3; chain++) {
      KvStored.Builder stored = KvStored.newBuilder();
      for (int i = 0; i < 4; i++) {
        stored.addBlocks(StoredBlock.newBuilder().setBlockHash(chain * 100 + i).setTokensHash(chain * 1000 + i + 1));
      }
      publish(model, "small", KvEvent.newBuilder().setEventId(chain + 1).setStored(stored).build());
    }
    assertThat(router.state(model).getKvBlocksOverCapacity()).isEqualTo(4);
    assertThat(router.node.cluster().kvIndex(model).events().entryCount()).isEqualTo(8);
  }

  @Test
  void overloadFilteringFollowsTheErrorOrder() {
    String model = "kv-overload";
    model(model);
    join(router.admin.setPolicy(SetPolicyRequest.newBuilder().setModel(model)
        .putParameters("active_decode_blocks_threshold", "0.5").build()));
    join(router.workers.reportLoad(LoadReport.newBuilder().setModel(model).setWorkerId("w1")
        .addRanks(RankLoadReport.newBuilder().setDpRank(0).setActiveDecodeBlocks(900)).build()));
    assertThat(join(router.router.select(prompt(model, PROMPT).build())).getWorker().getWorkerId()).isEqualTo("w2");
    var pinnedNotAllowed = failure(router.router.select(prompt(model, PROMPT).setPinnedWorker("w1")
        .addAllowedWorkers("w2").build()));
    assertThat(reason(pinnedNotAllowed)).isEqualTo("PINNED_WORKER_NOT_ALLOWED");
    var pinnedOverloaded = failure(router.router.select(prompt(model, PROMPT).setPinnedWorker("w1").build()));
    assertThat(pinnedOverloaded.getStatus().getCode()).isEqualTo(Status.Code.UNAVAILABLE);
    assertThat(reason(pinnedOverloaded)).isEqualTo("PINNED_WORKER_OVERLOADED");
    join(router.workers.reportLoad(LoadReport.newBuilder().setModel(model).setWorkerId("w2")
        .addRanks(RankLoadReport.newBuilder().setDpRank(0).setActiveDecodeBlocks(900)).build()));
    var all = failure(router.router.select(prompt(model, PROMPT).build()));
    assertThat(reason(all)).isEqualTo("ALL_WORKERS_OVERLOADED");
    // runtime-updatable: lifting the threshold makes them eligible again
    join(router.admin.setPolicy(SetPolicyRequest.newBuilder().setModel(model)
        .putParameters("active_decode_blocks_threshold", "").build()));
    assertThat(join(router.router.select(prompt(model, PROMPT).build())).getWorker().getWorkerId())
        .isIn("w1", "w2");
  }
}
