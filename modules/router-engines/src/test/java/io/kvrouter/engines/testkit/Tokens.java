package io.kvrouter.engines.testkit;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kvrouter.core.hashing.BlockHasher;
import java.math.BigInteger;

/** Prompts and engine events for the tests: tokens, the router's hashes of them, events as the publisher takes them. */
public final class Tokens {
  private static final ObjectMapper JSON = new ObjectMapper();

  private Tokens() {}

  /** {@code count} tokens from {@code first}, as the publisher's chain op makes them ((first + i) mod 50,000). */
  public static int[] run(int first, int count) {
    int[] tokens = new int[count];
    for (int i = 0; i < count; i++) {
      tokens[i] = (first + i) % 50_000;
    }
    return tokens;
  }

  public static int[] concat(int[]... parts) {
    int length = 0;
    for (int[] part : parts) {
      length += part.length;
    }
    int[] all = new int[length];
    int at = 0;
    for (int[] part : parts) {
      System.arraycopy(part, 0, all, at, part.length);
      at += part.length;
    }
    return all;
  }

  /** The router's sequence hashes of a prompt, as a request without salt or LoRA is hashed. */
  public static long[] routed(int[] tokens, int blockSize) {
    return BlockHasher.sequenceHashes(tokens, blockSize, BlockHasher.BASE_SEED);
  }

  public static long[] routed(int[] tokens, int blockSize, String salt, String lora) {
    return BlockHasher.sequenceHashes(tokens, blockSize, BlockHasher.seed(salt, lora));
  }

  public static ObjectNode stored(Object[] hashes, Object parent, int[] tokens, int blockSize) {
    ObjectNode event = JSON.createObjectNode().put("type", "BlockStored").put("block_size", blockSize);
    ArrayNode list = event.putArray("block_hashes");
    for (Object hash : hashes) {
      add(list, hash);
    }
    if (parent == null) {
      event.putNull("parent_block_hash");
    } else {
      ArrayNode holder = JSON.createArrayNode();
      add(holder, parent);
      event.set("parent_block_hash", holder.get(0));
    }
    ArrayNode ids = event.putArray("token_ids");
    for (int token : tokens) {
      ids.add(token);
    }
    event.putNull("lora_id");
    return event;
  }

  public static ObjectNode removed(Object... hashes) {
    ObjectNode event = JSON.createObjectNode().put("type", "BlockRemoved");
    ArrayNode list = event.putArray("block_hashes");
    for (Object hash : hashes) {
      add(list, hash);
    }
    return event;
  }

  public static ObjectNode cleared() {
    return JSON.createObjectNode().put("type", "AllBlocksCleared");
  }

  public static ObjectNode event(String type) {
    return JSON.createObjectNode().put("type", type);
  }

  /** A hash as the publisher takes it: a long, a BigInteger (≥ 2^63), or {@code Bytes} (published as bytes). */
  public record Bytes(String hex) {}

  private static void add(ArrayNode list, Object hash) {
    if (hash instanceof Bytes bytes) {
      list.addObject().put("hex", bytes.hex());
    } else if (hash instanceof BigInteger big) {
      list.add(big);
    } else {
      list.add(((Number) hash).longValue());
    }
  }
}
