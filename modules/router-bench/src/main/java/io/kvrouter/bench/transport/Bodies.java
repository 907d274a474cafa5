package io.kvrouter.bench.transport;

import io.kvrouter.api.v1.Booking;
import io.kvrouter.api.v1.RankLoad;
import io.kvrouter.api.v1.Released;
import io.kvrouter.api.v1.RouteRequest;
import io.kvrouter.api.v1.Selection;
import io.kvrouter.api.v1.WorkerEndpoint;
import io.kvrouter.core.hashing.BlockHasher;
import java.nio.ByteBuffer;

/**
 * The request and answer bodies every process of the transport bench builds the same way (deterministic), so the
 * no-op servers, the router and the load driver all see the same bytes.
 */
final class Bodies {
  static final String MODEL = "bench/transport-8b";
  static final int PROMPT_TOKENS = 2048;
  static final int BLOCK_SIZE = 16;
  static final int WORKERS = 64;

  /** The two request shapes of issue 4: the prompt as token ids, and as the caller's local block hashes. */
  enum Body {
    TOKENS("tokens", "2,048 token ids"),
    HASHES("hashes", "128 block hashes, isl 2,048");

    final String key;
    final String label;

    Body(String key, String label) {
      this.key = key;
      this.label = label;
    }

    static Body of(String key) {
      for (Body body : values()) {
        if (body.key.equals(key)) {
          return body;
        }
      }
      throw new IllegalArgumentException("unknown body " + key);
    }
  }

  private Bodies() {}

  static int[] prompt() {
    int[] tokens = new int[PROMPT_TOKENS];
    long x = 0x9E3779B97F4A7C15L;
    for (int i = 0; i < tokens.length; i++) {
      x ^= x << 13;
      x ^= x >>> 7;
      x ^= x << 17;
      tokens[i] = 100 + (int) Long.remainderUnsigned(x, 127_000L);
    }
    return tokens;
  }

  static long[] localHashes() {
    return BlockHasher.localBlockHashes(prompt(), BLOCK_SIZE, BlockHasher.BASE_SEED);
  }

  static long[] sequenceHashes() {
    return BlockHasher.sequenceHashes(prompt(), BLOCK_SIZE, BlockHasher.BASE_SEED);
  }

  static RouteRequest request(Body body) {
    RouteRequest.Builder request = RouteRequest.newBuilder().setModel(MODEL);
    if (body == Body.TOKENS) {
      for (int token : prompt()) {
        request.addTokenIds(token);
      }
    } else {
      for (long hash : localHashes()) {
        request.addBlockHashes(hash);
      }
      request.setIslTokens(PROMPT_TOKENS);
    }
    return request.build();
  }

  /** The fixed answer of every no-op server: a realistic Selection, the same bytes everywhere. */
  static final Selection SELECTION = Selection.newBuilder()
      .setWorker(WorkerEndpoint.newBuilder().setWorkerId("w17").setDpRank(0)
          .setEndpoint("http://10.0.0.17:8000").setRegion("default"))
      .setOverlapBlocks(96)
      .setCachedTokens(1536)
      .setCost(544.0)
      .setLoad(RankLoad.newBuilder().setInFlight(3).setPrefillTokens(4096).setDecodeBlocks(700))
      .setViewVersion(131)
      .setPolicy("kv")
      .build();

  static final Booking BOOKING = Booking.newBuilder()
      .setSelection(SELECTION)
      .setRequestId("noop")
      .setAttempt(1)
      .setLeaseExpiresUnixMs(1_900_000_000_000L)
      .build();

  static final Released RELEASED = Released.newBuilder().setApplied(true).build();

  /** A message in gRPC's length-prefixed framing: 1 byte compressed flag (0), 4 bytes big-endian length. */
  static byte[] framed(com.google.protobuf.MessageLite message) {
    byte[] payload = message.toByteArray();
    ByteBuffer out = ByteBuffer.allocate(5 + payload.length);
    out.put((byte) 0).putInt(payload.length).put(payload);
    return out.array();
  }
}
