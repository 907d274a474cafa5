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
 * The frame tap in front of grpc-java: client resets and PING acknowledgements are reported in order, frames that end
 * a stream on their way out too, a PING it is asked for goes out at the end of a flush, and every byte passes on
 * unchanged.
 */
class FrameTapTest {
  private static final byte[] PREFACE = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".getBytes(StandardCharsets.US_ASCII);

  private record Reset(int streamId, long errorCode) {}

  private record PingAck(long payload) {}

  private record Ended(int streamId) {}

  /** Records what the tap reports, in order; asks for one PING at the next flush when told to. */
  private static final class Recorded implements LateCancels.Frames {
    final List<Object> frames = new ArrayList<>();
    long pingToWrite = NO_PING;

    @Override
    public void reset(int streamId, long errorCode) {
      frames.add(new Reset(streamId, errorCode));
    }

    @Override
    public void pingAck(long payload) {
      frames.add(new PingAck(payload));
    }

    @Override
    public void streamEnded(int streamId) {
      frames.add(new Ended(streamId));
    }

    @Override
    public long pingBeforeFlush() {
      long ping = pingToWrite;
      pingToWrite = NO_PING;
      return ping;
    }
  }

  /**
   * The client preface, SETTINGS, HEADERS, RST_STREAM(3, CANCEL), a DATA payload that looks like a frame, a PING ack,
   * RST_STREAM(5, INTERNAL_ERROR), a PING (not an ack).
   */
  private static byte[] fromClient() {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    bytes.writeBytes(PREFACE);
    bytes.writeBytes(frame(0x4, 0, 0, new byte[6]));
    bytes.writeBytes(frame(0x1, 0x4, 3, new byte[40]));
    bytes.writeBytes(frame(0x3, 0, 3, ByteBuffer.allocate(4).putInt(0x8).array()));
    bytes.writeBytes(frame(0x0, 0, 3, frame(0x3, 0, 7, ByteBuffer.allocate(4).putInt(0x8).array())));
    bytes.writeBytes(frame(0x6, 0x1, 0, ByteBuffer.allocate(8).putLong(0x0102030405060708L).array()));
    bytes.writeBytes(frame(0x3, 0, 5, ByteBuffer.allocate(4).putInt(0x2).array()));
    bytes.writeBytes(frame(0x6, 0, 0, ByteBuffer.allocate(8).putLong(42).array()));
    return bytes.toByteArray();
  }

  /** SETTINGS, HEADERS(3), DATA(3), trailers HEADERS(3, END_STREAM), DATA(5, END_STREAM), HEADERS(7, no end). */
  private static byte[] fromServer() {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    bytes.writeBytes(frame(0x4, 0, 0, new byte[12]));
    bytes.writeBytes(frame(0x1, 0x4, 3, new byte[20]));
    bytes.writeBytes(frame(0x0, 0, 3, new byte[30]));
    bytes.writeBytes(frame(0x1, 0x5, 3, new byte[15]));
    bytes.writeBytes(frame(0x0, 0x1, 5, new byte[3]));
    bytes.writeBytes(frame(0x1, 0x4, 7, new byte[9]));
    return bytes.toByteArray();
  }

  private static byte[] frame(int type, int flags, int streamId, byte[] payload) {
    return ByteBuffer.allocate(9 + payload.length)
        .put((byte) (payload.length >>> 16)).put((byte) (payload.length >>> 8)).put((byte) payload.length)
        .put((byte) type).put((byte) flags).putInt(streamId).put(payload).array();
  }

  @Test
  void readsFramesBothWaysInWholeBuffers() {
    assertTaps(Integer.MAX_VALUE);
  }

  @Test
  void readsFramesSplitAtEveryByte() {
    assertTaps(1);
  }

  @Test
  void readsFramesSplitIntoUnevenBuffers() {
    assertTaps(7);
  }

  private static void assertTaps(int chunk) {
    Recorded recorded = new Recorded();
    EmbeddedChannel channel = new EmbeddedChannel(new LateCancels.FrameTap(recorded));
    byte[] in = fromClient();
    for (int at = 0; at < in.length; at += chunk) {
      channel.writeInbound(Unpooled.copiedBuffer(in, at, Math.min(chunk, in.length - at)));
    }
    byte[] out = fromServer();
    for (int at = 0; at < out.length; at += chunk) {
      channel.write(Unpooled.copiedBuffer(out, at, Math.min(chunk, out.length - at)));
    }
    recorded.pingToWrite = 0x6B764C3800000001L;
    channel.flush();

    assertThat(recorded.frames).containsExactly(new Reset(3, 0x8), new PingAck(0x0102030405060708L),
        new Reset(5, 0x2), new Ended(3), new Ended(5));
    assertThat(drain(channel, true)).isEqualTo(in);
    ByteArrayOutputStream expectedOut = new ByteArrayOutputStream();
    expectedOut.writeBytes(out);
    expectedOut.writeBytes(frame(0x6, 0, 0, ByteBuffer.allocate(8).putLong(0x6B764C3800000001L).array()));
    assertThat(drain(channel, false)).isEqualTo(expectedOut.toByteArray());
    channel.finishAndReleaseAll();
  }

  @Test
  void leavesAConnectionThatDoesNotStartWithThePrefaceAlone() {
    Recorded recorded = new Recorded();
    EmbeddedChannel channel = new EmbeddedChannel(new LateCancels.FrameTap(recorded));
    // a TLS record's first byte, then bytes that would read as the frames above
    byte[] in = fromClient();
    in[0] = 0x16;
    channel.writeInbound(Unpooled.copiedBuffer(in));
    channel.write(Unpooled.copiedBuffer(fromServer()));
    recorded.pingToWrite = 0x6B764C3800000001L;
    channel.flush();

    assertThat(recorded.frames).isEmpty();
    assertThat(drain(channel, true)).isEqualTo(in);
    assertThat(drain(channel, false)).isEqualTo(fromServer());
    channel.finishAndReleaseAll();
  }

  private static byte[] drain(EmbeddedChannel channel, boolean inbound) {
    ByteArrayOutputStream passed = new ByteArrayOutputStream();
    for (ByteBuf read = inbound ? channel.readInbound() : channel.readOutbound(); read != null;
        read = inbound ? channel.readInbound() : channel.readOutbound()) {
      byte[] bytes = new byte[read.readableBytes()];
      read.readBytes(bytes);
      read.release();
      passed.writeBytes(bytes);
    }
    return passed.toByteArray();
  }
}
