package io.kvrouter.engines.zmq;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import org.zeromq.ZMQ;

/** Multipart messages as the engines frame them. */
public final class Frames {
  /** A message with more frames than any engine sends is drained and dropped. */
  static final int MAX_FRAMES = 8;

  private Frames() {}

  /** The 8-byte big-endian sequence number frame; null when the frame is not 8 bytes. */
  public static Long sequence(byte[] frame) {
    return frame == null || frame.length != 8 ? null : ByteBuffer.wrap(frame).getLong();
  }

  public static byte[] sequenceFrame(long seq) {
    return ByteBuffer.allocate(8).putLong(seq).array();
  }

  /**
   * Receives the rest of a message whose first frame is {@code first}: at most {@link #MAX_FRAMES} frames are kept;
   * the others are read and dropped (the returned list then has {@code MAX_FRAMES + 1} entries, the last null).
   */
  static List<byte[]> rest(ZMQ.Socket socket, byte[] first) {
    List<byte[]> frames = new ArrayList<>(4);
    frames.add(first);
    boolean overflow = false;
    while (socket.hasReceiveMore()) {
      byte[] frame = socket.recv(0);
      if (frames.size() < MAX_FRAMES) {
        frames.add(frame);
      } else {
        overflow = true;
      }
    }
    if (overflow) {
      frames.add(null);
    }
    return frames;
  }
}
