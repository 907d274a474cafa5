package io.kvrouter.engines.events;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.math.BigInteger;
import org.junit.jupiter.api.Test;
import org.msgpack.core.MessageBufferPacker;
import org.msgpack.core.MessagePack;

/**
 * Encoding details the publisher tests do not reach: keys a newer engine adds, fields omit_defaults drops, a rank
 * field, the cache salt in extra keys, and payloads that are not batches.
 */
class KvBatchDecoderTest {
  final KvBatchDecoder decoder = new KvBatchDecoder();

  @Test
  void unknownKeysAreIgnoredAndOmittedDefaultsTolerated() throws Exception {
    MessageBufferPacker p = MessagePack.newDefaultBufferPacker();
    p.packMapHeader(4).packString("ts").packDouble(12.5).packString("future_field").packArrayHeader(1).packInt(1);
    p.packString("events").packArrayHeader(1);
    // BlockStored with only its fields without defaults, plus keys a newer release adds
    p.packMapHeader(8).packString("type").packString("BlockStored");
    p.packString("block_hashes").packArrayHeader(1).packBigInteger(BigInteger.TWO.pow(64).subtract(BigInteger.ONE));
    p.packString("parent_block_hash").packNil();
    p.packString("token_ids").packArrayHeader(2).packInt(5).packLong(4_000_000_000L);
    p.packString("block_size").packInt(2);
    p.packString("locality").packString("LOCAL");
    p.packString("session_id").packString("s-1");
    p.packString("lora_id").packNil();
    p.packString("data_parallel_rank").packInt(3);
    KvBatchDecoder.Batch batch = decoder.decode(p.toByteArray());
    assertThat(batch.ts()).isEqualTo(12.5);
    assertThat(batch.dpRank()).isEqualTo(3);
    EngineEvent.Stored stored = (EngineEvent.Stored) batch.events().get(0);
    assertThat(stored.blockHashes()).containsExactly(-1L);
    assertThat(stored.tokenIds()).containsExactly(5, (int) 4_000_000_000L);
    assertThat(stored.medium()).isNull();
    assertThat(stored.groupIdx()).isNull();
    assertThat(stored.firstUnhashableBlock()).isEqualTo(-1);
  }

  @Test
  void extraKeysGiveTheCacheSaltAndMarkMultimodalBlocks() throws Exception {
    MessageBufferPacker p = MessagePack.newDefaultBufferPacker();
    p.packArrayHeader(2).packDouble(1).packArrayHeader(2);
    // ["BlockStored", hashes, parent, tokens, block_size, lora_id, medium, lora_name, extra_keys]
    p.packArrayHeader(9).packString("BlockStored");
    p.packArrayHeader(2).packInt(1).packInt(2).packNil();
    p.packArrayHeader(2).packInt(7).packInt(8).packInt(1).packInt(3).packString("GPU").packString("adapter");
    p.packArrayHeader(2);
    p.packArrayHeader(2).packString("adapter").packString("tenant-7");
    p.packArrayHeader(2).packString("adapter").packArrayHeader(2).packString("image-hash").packInt(0);
    p.packArrayHeader(9).packString("BlockStored");
    p.packArrayHeader(1).packInt(9).packInt(2);
    p.packArrayHeader(1).packInt(7).packInt(1).packNil().packNil().packNil();
    p.packArrayHeader(1).packArrayHeader(1).packBinaryHeader(2).writePayload(new byte[] {1, 2});
    KvBatchDecoder.Batch batch = decoder.decode(p.toByteArray());
    EngineEvent.Stored first = (EngineEvent.Stored) batch.events().get(0);
    assertThat(first.cacheSalt()).isEqualTo("tenant-7");
    assertThat(first.loraName()).isEqualTo("adapter");
    assertThat(first.loraId()).isEqualTo(3);
    assertThat(first.firstUnhashableBlock()).isEqualTo(1);
    EngineEvent.Stored second = (EngineEvent.Stored) batch.events().get(1);
    assertThat(second.firstUnhashableBlock()).isZero();
  }

  @Test
  void payloadsThatAreNotBatchesAreMalformed() throws IOException {
    assertThatThrownBy(() -> decoder.decode(new byte[] {(byte) 0xc1})).isInstanceOf(
        KvBatchDecoder.MalformedBatchException.class);
    MessageBufferPacker number = MessagePack.newDefaultBufferPacker();
    number.packInt(42);
    assertThatThrownBy(() -> decoder.decode(number.toByteArray()))
        .isInstanceOf(KvBatchDecoder.MalformedBatchException.class);
    MessageBufferPacker stored = MessagePack.newDefaultBufferPacker();
    stored.packArrayHeader(2).packDouble(1).packArrayHeader(1).packArrayHeader(4).packString("BlockStored")
        .packString("not a list").packNil().packArrayHeader(0);
    assertThatThrownBy(() -> decoder.decode(stored.toByteArray()))
        .isInstanceOf(KvBatchDecoder.MalformedBatchException.class).hasMessageContaining("block_hashes");
    MessageBufferPacker trailing = MessagePack.newDefaultBufferPacker();
    trailing.packArrayHeader(2).packDouble(1).packArrayHeader(0).packInt(1);
    assertThatThrownBy(() -> decoder.decode(trailing.toByteArray())).hasMessageContaining("trailing");
  }
}
