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

/**
 * The frame-header reader in front of grpc-java: every RST_STREAM and PING acknowledgement is reported in order, the
 * bytes pass on unchanged.
 */
class FrameReaderTest {
  private record Reset(int streamId, long errorCode) {}

  private record PingAck(long payload) {}

  /** Records what the reader reports, in order. */
  private static final class Recorded implements LateCancels.InboundFrames {
    final List<Object> frames = new ArrayList<>();

    @Override
    public void reset(int streamId, long errorCode) {
      frames.add(new Reset(streamId, errorCode));
    }

    @Override
    public void pingAck(long payload) {
      frames.add(new PingAck(payload));
    }
  }

  /**
   * The client preface, SETTINGS, HEADERS, RST_STREAM(3, CANCEL), DATA, PING ack, RST_STREAM(5, INTERNAL_ERROR), PING
   * (not an ack).
   */
  private static byte[] connection() {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    bytes.writeBytes("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
    bytes.writeBytes(frame(0x4, 0, new byte[6]));
    bytes.writeBytes(frame(0x1, 3, new byte[40]));
    bytes.writeBytes(frame(0x3, 3, ByteBuffer.allocate(4).putInt(0x8).array()));
    // a DATA payload that looks like an RST_STREAM frame header must be passed over
    bytes.writeBytes(frame(0x0, 3, frame(0x3, 7, ByteBuffer.allocate(4).putInt(0x8).array())));
    bytes.writeBytes(frame(0x6, 0x1, 0, ByteBuffer.allocate(8).putLong(0x0102030405060708L).array()));
    bytes.writeBytes(frame(0x3, 5, ByteBuffer.allocate(4).putInt(0x2).array()));
    bytes.writeBytes(frame(0x6, 0, ByteBuffer.allocate(8).putLong(42).array()));
    return bytes.toByteArray();
  }

  private static byte[] frame(int type, int streamId, byte[] payload) {
    return frame(type, 0, streamId, payload);
  }

  private static byte[] frame(int type, int flags, int streamId, byte[] payload) {
    return ByteBuffer.allocate(9 + payload.length)
        .put((byte) (payload.length >>> 16)).put((byte) (payload.length >>> 8)).put((byte) payload.length)
        .put((byte) type).put((byte) flags).putInt(streamId).put(payload).array();
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

  @Test
  void passesOverAConnectionThatDoesNotStartWithThePreface() {
    Recorded recorded = new Recorded();
    EmbeddedChannel channel = new EmbeddedChannel(new LateCancels.FrameReader(recorded));
    // a TLS record header, then bytes that would read as the frames above once past 24 bytes
    byte[] sent = connection();
    sent[0] = 0x16;
    channel.writeInbound(Unpooled.copiedBuffer(sent));
    ByteBuf passed = channel.readInbound();
    assertThat(passed.readableBytes()).isEqualTo(sent.length);
    passed.release();
    assertThat(recorded.frames).isEmpty();
    channel.finishAndReleaseAll();
  }

  private static void assertReads(int chunk) {
    Recorded recorded = new Recorded();
    EmbeddedChannel channel = new EmbeddedChannel(new LateCancels.FrameReader(recorded));
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
    assertThat(recorded.frames).containsExactly(new Reset(3, 0x8), new PingAck(0x0102030405060708L),
        new Reset(5, 0x2));
    assertThat(passed.toByteArray()).isEqualTo(sent);
    channel.finishAndReleaseAll();
  }
}
