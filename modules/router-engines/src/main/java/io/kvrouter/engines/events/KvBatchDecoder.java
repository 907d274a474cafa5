package io.kvrouter.engines.events;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.msgpack.core.MessageFormat;
import org.msgpack.core.MessagePack;
import org.msgpack.core.MessagePackException;
import org.msgpack.core.MessageUnpacker;
import org.msgpack.value.ValueType;

/**
 * Decodes the msgpack payload of one engine KV event batch (the third frame of vLLM's and SGLang's ZMQ messages).
 *
 * <p>Both encodings msgspec produces for the engines' structs are accepted, at both levels: a batch positional
 * ({@code array_like}: {@code [ts, events, data_parallel_rank | attn_dp_rank]}) or a map with those keys; an event
 * a tagged array ({@code ["BlockStored", block_hashes, parent_block_hash, token_ids, block_size, lora_id, medium,
 * lora_name, extra_keys, group_idx, kv_cache_spec_kind, kv_cache_spec_sliding_window]}, {@code ["BlockRemoved",
 * block_hashes, medium, group_idx]}, {@code ["AllBlocksCleared"]}) or a map tagged by {@code "type"}. Fields that
 * {@code omit_defaults} dropped (a shorter array, an absent key) take their defaults; unknown keys and trailing
 * positions are skipped; an event of an unknown type decodes as {@link EngineEvent.Unknown}. Anything else that does
 * not match (not msgpack, a wrong type where a field must be, trailing bytes) makes the whole batch malformed.
 *
 * <p>One decoder per connector thread: it reuses its token buffer.
 */
public final class KvBatchDecoder {
  /** Positions of BlockStored's fields in the array encoding (declaration order in vLLM's struct). */
  private static final String[] STORED_FIELDS = {"block_hashes", "parent_block_hash", "token_ids", "block_size",
      "lora_id", "medium", "lora_name", "extra_keys", "group_idx", "kv_cache_spec_kind",
      "kv_cache_spec_sliding_window"};
  private static final String[] REMOVED_FIELDS = {"block_hashes", "medium", "group_idx"};
  private static final String[] NO_FIELDS = {};

  /**
   * A decoded batch.
   *
   * @param ts the engine's wall-clock time at publishing, seconds since the epoch (NaN if absent)
   * @param dpRank the batch's rank field ({@code data_parallel_rank} / {@code attn_dp_rank}), or -1 when absent
   */
  public record Batch(double ts, List<EngineEvent> events, int dpRank) {}

  /** A payload that is not a batch; the message says where it stopped making sense. */
  public static final class MalformedBatchException extends Exception {
    MalformedBatchException(String message) {
      super(message, null, false, false);
    }
  }

  private int[] tokens = new int[256];
  private byte[] bytes = new byte[64];

  public Batch decode(byte[] payload) throws MalformedBatchException {
    try (MessageUnpacker in = MessagePack.newDefaultUnpacker(payload)) {
      Batch batch = batch(in);
      if (in.hasNext()) {
        throw new MalformedBatchException("trailing bytes after the batch");
      }
      return batch;
    } catch (IOException | MessagePackException | ArithmeticException e) {
      throw new MalformedBatchException("not a KV event batch: " + e.getClass().getSimpleName());
    }
  }

  private Batch batch(MessageUnpacker in) throws IOException, MalformedBatchException {
    ValueType type = in.getNextFormat().getValueType();
    double ts = Double.NaN;
    List<EngineEvent> events = null;
    int rank = -1;
    if (type == ValueType.ARRAY) {
      int n = in.unpackArrayHeader();
      if (n < 2) {
        throw new MalformedBatchException("batch array of " + n + " elements");
      }
      ts = number(in, "ts");
      events = events(in);
      if (n >= 3) {
        rank = optionalRank(in);
      }
      in.skipValue(Math.max(0, n - 3));
    } else if (type == ValueType.MAP) {
      int n = in.unpackMapHeader();
      for (int i = 0; i < n; i++) {
        String key = key(in);
        switch (key) {
          case "ts" -> ts = number(in, "ts");
          case "events" -> events = events(in);
          case "data_parallel_rank", "attn_dp_rank" -> rank = optionalRank(in);
          default -> in.skipValue();
        }
      }
    } else {
      throw new MalformedBatchException("batch is a " + type);
    }
    if (events == null) {
      throw new MalformedBatchException("batch without events");
    }
    return new Batch(ts, events, rank);
  }

  private int optionalRank(MessageUnpacker in) throws IOException, MalformedBatchException {
    Integer rank = optionalInt(in, "data_parallel_rank");
    if (rank != null && rank < 0) {
      throw new MalformedBatchException("negative rank " + rank);
    }
    return rank == null ? -1 : rank;
  }

  private List<EngineEvent> events(MessageUnpacker in) throws IOException, MalformedBatchException {
    expect(in, ValueType.ARRAY, "events");
    int n = in.unpackArrayHeader();
    List<EngineEvent> events = new ArrayList<>(Math.min(n, 1024));
    for (int i = 0; i < n; i++) {
      events.add(event(in));
    }
    return events;
  }

  /** The fields of one event, by name, whatever order or encoding they came in. */
  private static final class Fields {
    String type;
    long[] blockHashes;
    Long parent;
    int[] tokenIds;
    int tokenCount = -1;
    boolean tokensUnhashable;
    Integer blockSize;
    Long loraId;
    String medium;
    String loraName;
    List<List<String>> extraStrings;
    int extraOtherFrom = -1;
    Integer groupIdx;
    String specKind;
  }

  private EngineEvent event(MessageUnpacker in) throws IOException, MalformedBatchException {
    ValueType type = in.getNextFormat().getValueType();
    Fields fields = new Fields();
    if (type == ValueType.ARRAY) {
      int n = in.unpackArrayHeader();
      if (n < 1) {
        throw new MalformedBatchException("empty event array");
      }
      fields.type = string(in, "event tag");
      String[] names = switch (fields.type) {
        case "BlockStored" -> STORED_FIELDS;
        case "BlockRemoved" -> REMOVED_FIELDS;
        default -> NO_FIELDS;
      };
      for (int i = 1; i < n; i++) {
        if (i - 1 < names.length) {
          field(in, names[i - 1], fields);
        } else {
          in.skipValue();
        }
      }
    } else if (type == ValueType.MAP) {
      int n = in.unpackMapHeader();
      for (int i = 0; i < n; i++) {
        String key = key(in);
        if (key.equals("type")) {
          fields.type = string(in, "type");
        } else {
          field(in, key, fields);
        }
      }
      if (fields.type == null) {
        throw new MalformedBatchException("event map without a type");
      }
    } else {
      throw new MalformedBatchException("event is a " + type);
    }
    return build(fields);
  }

  private void field(MessageUnpacker in, String name, Fields fields) throws IOException, MalformedBatchException {
    switch (name) {
      case "block_hashes" -> fields.blockHashes = hashes(in);
      case "parent_block_hash" -> fields.parent = optionalHash(in);
      case "token_ids" -> tokens(in, fields);
      case "block_size" -> fields.blockSize = optionalInt(in, "block_size");
      case "lora_id" -> fields.loraId = optionalLong(in, "lora_id");
      case "medium" -> fields.medium = optionalString(in, "medium");
      case "lora_name" -> fields.loraName = optionalString(in, "lora_name");
      case "extra_keys" -> extraKeys(in, fields);
      case "group_idx" -> fields.groupIdx = optionalInt(in, "group_idx");
      case "kv_cache_spec_kind" -> fields.specKind = optionalString(in, "kv_cache_spec_kind");
      default -> in.skipValue();
    }
  }

  private EngineEvent build(Fields f) throws MalformedBatchException {
    switch (f.type) {
      case "BlockStored" -> {
        if (f.blockHashes == null || f.blockSize == null || f.tokenCount < 0) {
          throw new MalformedBatchException("BlockStored without block_hashes, token_ids or block_size");
        }
        if (f.blockSize < 1) {
          throw new MalformedBatchException("BlockStored with block_size " + f.blockSize);
        }
        int firstUnhashable = f.tokensUnhashable ? 0 : -1;
        String salt = null;
        if (f.extraStrings != null) {
          for (int b = 0; b < f.extraStrings.size() && b < f.blockHashes.length; b++) {
            List<String> strings = f.extraStrings.get(b);
            if (strings == null) {
              continue;
            }
            List<String> rest = new ArrayList<>(strings);
            if (f.loraName != null) {
              rest.remove(f.loraName);
            }
            boolean unhashable;
            if (b == 0 && f.parent == null) {
              // the request's first block: vLLM appends the cache salt to its extra keys
              unhashable = rest.size() > 1;
              salt = rest.size() == 1 ? rest.get(0) : null;
            } else {
              unhashable = !rest.isEmpty();
            }
            if (unhashable && (firstUnhashable < 0 || b < firstUnhashable)) {
              firstUnhashable = b;
            }
          }
        }
        if (f.extraOtherFrom >= 0 && (firstUnhashable < 0 || f.extraOtherFrom < firstUnhashable)) {
          firstUnhashable = f.extraOtherFrom;
        }
        return new EngineEvent.Stored(f.blockHashes, f.parent, f.tokenIds, f.tokenCount, f.blockSize, f.loraId,
            f.medium, f.loraName, firstUnhashable, salt, f.groupIdx, f.specKind);
      }
      case "BlockRemoved" -> {
        if (f.blockHashes == null) {
          throw new MalformedBatchException("BlockRemoved without block_hashes");
        }
        return new EngineEvent.Removed(f.blockHashes, f.medium, f.groupIdx);
      }
      case "AllBlocksCleared" -> {
        return EngineEvent.Cleared.INSTANCE;
      }
      default -> {
        return new EngineEvent.Unknown(f.type);
      }
    }
  }

  // ---------------------------------------------------------------- values

  private long[] hashes(MessageUnpacker in) throws IOException, MalformedBatchException {
    expect(in, ValueType.ARRAY, "block_hashes");
    int n = in.unpackArrayHeader();
    long[] hashes = new long[n];
    for (int i = 0; i < n; i++) {
      Long hash = optionalHash(in);
      if (hash == null) {
        throw new MalformedBatchException("nil block hash");
      }
      hashes[i] = hash;
    }
    return hashes;
  }

  /** An integer hash as its 64-bit pattern (unsigned ones at or above 2^63 wrap), a bytes hash by its key. */
  private Long optionalHash(MessageUnpacker in) throws IOException, MalformedBatchException {
    MessageFormat format = in.getNextFormat();
    switch (format.getValueType()) {
      case NIL -> {
        in.unpackNil();
        return null;
      }
      case INTEGER -> {
        return format == MessageFormat.UINT64 ? in.unpackBigInteger().longValue() : in.unpackLong();
      }
      case BINARY -> {
        int length = in.unpackBinaryHeader();
        return BlockKeys.ofBytes(payload(in, length), 0, length);
      }
      case STRING -> {
        int length = in.unpackRawStringHeader();
        return BlockKeys.ofBytes(payload(in, length), 0, length);
      }
      default -> throw new MalformedBatchException("block hash is a " + format.getValueType());
    }
  }

  private byte[] payload(MessageUnpacker in, int length) throws IOException {
    if (bytes.length < length) {
      bytes = new byte[Math.max(length, bytes.length * 2)];
    }
    in.readPayload(bytes, 0, length);
    return bytes;
  }

  /** Token ids as u32; a token that is not an integer (SGLang's EAGLE bigram pairs) makes the blocks unhashable. */
  private void tokens(MessageUnpacker in, Fields fields) throws IOException, MalformedBatchException {
    expect(in, ValueType.ARRAY, "token_ids");
    int n = in.unpackArrayHeader();
    if (tokens.length < n) {
      tokens = new int[Math.max(n, tokens.length * 2)];
    }
    boolean unhashable = false;
    for (int i = 0; i < n; i++) {
      if (in.getNextFormat().getValueType() != ValueType.INTEGER) {
        in.skipValue();
        unhashable = true;
        continue;
      }
      long token = in.unpackLong();
      if (token < 0 || token > 0xFFFF_FFFFL) {
        throw new MalformedBatchException("token id " + token + " outside u32");
      }
      tokens[i] = (int) token;
    }
    fields.tokenIds = Arrays.copyOf(tokens, n);
    fields.tokenCount = n;
    fields.tokensUnhashable = unhashable;
  }

  /**
   * {@code extra_keys}: one entry per block, nil or a tuple. Strings are kept (the LoRA name, the cache salt);
   * anything else (a multimodal identifier pair, prompt-embedding bytes, an integer LoRA id) is something the
   * router's hash cannot reproduce.
   */
  private void extraKeys(MessageUnpacker in, Fields fields) throws IOException, MalformedBatchException {
    if (in.tryUnpackNil()) {
      return;
    }
    expect(in, ValueType.ARRAY, "extra_keys");
    int n = in.unpackArrayHeader();
    List<List<String>> strings = new ArrayList<>(Math.min(n, 1024));
    for (int b = 0; b < n; b++) {
      if (in.tryUnpackNil()) {
        strings.add(null);
        continue;
      }
      if (in.getNextFormat().getValueType() != ValueType.ARRAY) {
        in.skipValue();
        strings.add(null);
        markOther(fields, b);
        continue;
      }
      int items = in.unpackArrayHeader();
      List<String> blockStrings = new ArrayList<>(items);
      for (int i = 0; i < items; i++) {
        if (in.getNextFormat().getValueType() == ValueType.STRING) {
          blockStrings.add(in.unpackString());
        } else {
          in.skipValue();
          markOther(fields, b);
        }
      }
      strings.add(blockStrings);
    }
    fields.extraStrings = strings;
  }

  private static void markOther(Fields fields, int block) {
    if (fields.extraOtherFrom < 0 || block < fields.extraOtherFrom) {
      fields.extraOtherFrom = block;
    }
  }

  private static String key(MessageUnpacker in) throws IOException, MalformedBatchException {
    return string(in, "map key");
  }

  private static String string(MessageUnpacker in, String what) throws IOException, MalformedBatchException {
    expect(in, ValueType.STRING, what);
    return in.unpackString();
  }

  private static String optionalString(MessageUnpacker in, String what) throws IOException, MalformedBatchException {
    return in.tryUnpackNil() ? null : string(in, what);
  }

  private static Integer optionalInt(MessageUnpacker in, String what) throws IOException, MalformedBatchException {
    Long value = optionalLong(in, what);
    if (value == null) {
      return null;
    }
    if (value < Integer.MIN_VALUE || value > Integer.MAX_VALUE) {
      throw new MalformedBatchException(what + " out of range");
    }
    return value.intValue();
  }

  private static Long optionalLong(MessageUnpacker in, String what) throws IOException, MalformedBatchException {
    if (in.tryUnpackNil()) {
      return null;
    }
    expect(in, ValueType.INTEGER, what);
    return in.unpackLong();
  }

  private static double number(MessageUnpacker in, String what) throws IOException, MalformedBatchException {
    ValueType type = in.getNextFormat().getValueType();
    if (type == ValueType.FLOAT) {
      return in.unpackDouble();
    }
    if (type == ValueType.INTEGER) {
      return in.unpackLong();
    }
    throw new MalformedBatchException(what + " is a " + type);
  }

  private static void expect(MessageUnpacker in, ValueType type, String what)
      throws IOException, MalformedBatchException {
    ValueType actual = in.getNextFormat().getValueType();
    if (actual != type) {
      throw new MalformedBatchException(what + " is a " + actual + ", not a " + type);
    }
  }
}
