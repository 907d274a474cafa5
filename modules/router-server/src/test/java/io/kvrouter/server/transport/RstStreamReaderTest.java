package io.kvrouter.server.transport;

import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.netty.shaded.io.netty.buffer.ByteBuf;
import io.grpc.netty.shaded.io.netty.buffer.Unpooled;
import io.grpc.netty.shaded.io.netty.channel.embedded.EmbeddedChannel;
import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The frame-header reader in front of grpc-java: every RST_STREAM is reported, the bytes pass on unchanged. */
class RstStreamReaderTest {
  private record Reset(int streamId, long errorCode) {}

  /** The client preface, SETTINGS, HEADERS, RST_STREAM(3, CANCEL), DATA, RST_STREAM(5, INTERNAL_ERROR), PING. */
  private static byte[] connection() {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    bytes.writeBytes("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
    bytes.writeBytes(frame(0x4, 0, new byte[6]));
    bytes.writeBytes(frame(0x1, 3, new byte[40]));
    bytes.writeBytes(frame(0x3, 3, ByteBuffer.allocate(4).putInt(0x8).array()));
    // a DATA payload that looks like an RST_STREAM frame header must be passed over
    bytes.writeBytes(frame(0x0, 3, frame(0x3, 7, ByteBuffer.allocate(4).putInt(0x8).array())));
    bytes.writeBytes(frame(0x3, 5, ByteBuffer.allocate(4).putInt(0x2).array()));
    bytes.writeBytes(frame(0x6, 0, new byte[8]));
    return bytes.toByteArray();
  }

  private static byte[] frame(int type, int streamId, byte[] payload) {
    return ByteBuffer.allocate(9 + payload.length)
        .put((byte) (payload.length >>> 16)).put((byte) (payload.length >>> 8)).put((byte) payload.length)
        .put((byte) type).put((byte) 0).putInt(streamId).put(payload).array();
  }

  @Test
  void readsResetsInOneRead() {
    assertReads(connection().length);
  }

  @Test
  void readsResetsSplitAtEveryByte() {
    assertReads(1);
  }

  @Test
  void readsResetsSplitIntoUnevenReads() {
    assertReads(7);
  }

  private static void assertReads(int chunk) {
    List<Reset> resets = new ArrayList<>();
    EmbeddedChannel channel = new EmbeddedChannel(
        new LateCancels.RstStreamReader((streamId, errorCode) -> resets.add(new Reset(streamId, errorCode))));
    byte[] sent = connection();
    for (int at = 0; at < sent.length; at += chunk) {
      channel.writeInbound(Unpooled.copiedBuffer(sent, at, Math.min(chunk, sent.length - at)));
    }
    ByteArrayOutputStream passed = new ByteArrayOutputStream();
    for (ByteBuf read = channel.readInbound(); read != null; read = channel.readInbound()) {
      byte[] bytes = new byte[read.readableBytes()];
      read.readBytes(bytes);
      read.release();
      passed.writeBytes(bytes);
    }
    assertThat(resets).containsExactly(new Reset(3, 0x8), new Reset(5, 0x2));
    assertThat(passed.toByteArray()).isEqualTo(sent);
    channel.finishAndReleaseAll();
  }
}
