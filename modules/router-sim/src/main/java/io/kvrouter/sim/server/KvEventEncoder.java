package io.kvrouter.sim.server;

import io.kvrouter.sim.engine.KvCacheEvent;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.math.BigInteger;
import java.util.List;
import org.msgpack.core.MessageBufferPacker;
import org.msgpack.core.MessagePack;
import org.msgpack.core.MessagePacker;

/**
 * vLLM's KV event payload, as msgspec encodes {@code KVEventBatch} in vLLM 0.33.0 (vllm/distributed/kv_events.py):
 * the batch positional, {@code [ts, events, data_parallel_rank]} ({@code array_like=True}); each event a map whose
 * first key {@code "type"} names its class ({@code tag=True}), fields in declaration order, fields equal to their
 * default omitted ({@code omit_defaults=True}). {@link EngineConfig.KvEventEncoding#ARRAY} encodes each event as the
 * tagged array of earlier releases instead, {@code ["BlockStored", field, ...]}, trailing defaults omitted.
 *
 * <p>What the simulated engine publishes is what vLLM publishes for a plain text model with prefix caching and no
 * LoRA (vllm/v1/core/block_pool.py, kv_cache_manager.py): BlockStored with {@code block_hashes} (the engine's block
 * ids, unsigned 64-bit, as VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES=1 gives), {@code parent_block_hash}, {@code token_ids}
 * (of all its blocks), {@code block_size}, {@code lora_id} nil, {@code medium} "GPU", {@code lora_name} nil,
 * {@code extra_keys} one nil per block, {@code group_idx} 0, {@code kv_cache_spec_kind} "full_attention"; one
 * BlockRemoved per evicted block ({@code block_hashes} of one, {@code medium} "GPU", {@code group_idx} 0), as vLLM
 * evicts block by block; AllBlocksCleared on a prefix-cache reset.
 */
public final class KvEventEncoder {
  static final String MEDIUM_GPU = "GPU";
  static final String FULL_ATTENTION = "full_attention";

  private final EngineConfig.KvEventEncoding encoding;

  public KvEventEncoder(EngineConfig.KvEventEncoding encoding) {
    this.encoding = encoding;
  }

  /** One KVEventBatch: the events of one engine step of one rank. */
  public byte[] encode(double timestampSeconds, List<KvCacheEvent> events, int dataParallelRank) {
    try (MessageBufferPacker packer = MessagePack.newDefaultBufferPacker()) {
      packer.packArrayHeader(3);
      packer.packDouble(timestampSeconds);
      int count = 0;
      for (KvCacheEvent event : events) {
        count += event instanceof KvCacheEvent.Removed removed ? removed.blockIds().length : 1;
      }
      packer.packArrayHeader(count);
      for (KvCacheEvent event : events) {
        if (event instanceof KvCacheEvent.Stored stored) {
          packStored(packer, stored);
        } else if (event instanceof KvCacheEvent.Removed removed) {
          for (long id : removed.blockIds()) {
            packRemoved(packer, id);
          }
        } else {
          packCleared(packer);
        }
      }
      packer.packInt(dataParallelRank);
      return packer.toByteArray();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private boolean maps() {
    return encoding == EngineConfig.KvEventEncoding.MAP;
  }

  private void field(MessagePacker packer, String name) throws IOException {
    if (maps()) {
      packer.packString(name);
    }
  }

  private void header(MessagePacker packer, String type, int fields) throws IOException {
    if (maps()) {
      packer.packMapHeader(fields + 1);
      packer.packString("type");
    } else {
      packer.packArrayHeader(fields + 1);
    }
    packer.packString(type);
  }

  private void packStored(MessagePacker packer, KvCacheEvent.Stored stored) throws IOException {
    header(packer, "BlockStored", 10);
    field(packer, "block_hashes");
    packer.packArrayHeader(stored.blockIds().length);
    for (long id : stored.blockIds()) {
      packUnsigned(packer, id);
    }
    field(packer, "parent_block_hash");
    if (stored.parentBlockId() == null) {
      packer.packNil();
    } else {
      packUnsigned(packer, stored.parentBlockId());
    }
    field(packer, "token_ids");
    int[] tokens = stored.tokenIds();
    packer.packArrayHeader(tokens.length);
    for (int token : tokens) {
      packer.packInt(token);
    }
    field(packer, "block_size");
    packer.packInt(stored.blockSize());
    field(packer, "lora_id");
    packer.packNil();
    field(packer, "medium");
    packer.packString(MEDIUM_GPU);
    field(packer, "lora_name");
    packer.packNil();
    field(packer, "extra_keys");
    packer.packArrayHeader(stored.blockIds().length);
    for (int i = 0; i < stored.blockIds().length; i++) {
      packer.packNil();
    }
    field(packer, "group_idx");
    packer.packInt(0);
    field(packer, "kv_cache_spec_kind");
    packer.packString(FULL_ATTENTION);
  }

  private void packRemoved(MessagePacker packer, long blockId) throws IOException {
    header(packer, "BlockRemoved", 3);
    field(packer, "block_hashes");
    packer.packArrayHeader(1);
    packUnsigned(packer, blockId);
    field(packer, "medium");
    packer.packString(MEDIUM_GPU);
    field(packer, "group_idx");
    packer.packInt(0);
  }

  private void packCleared(MessagePacker packer) throws IOException {
    header(packer, "AllBlocksCleared", 0);
  }

  /** A block id as the unsigned 64-bit integer Python has (msgpack uint64 above 2^63 - 1). */
  static void packUnsigned(MessagePacker packer, long value) throws IOException {
    if (value >= 0) {
      packer.packLong(value);
    } else {
      packer.packBigInteger(new BigInteger(Long.toUnsignedString(value)));
    }
  }
}
