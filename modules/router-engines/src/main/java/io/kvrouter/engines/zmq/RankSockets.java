package io.kvrouter.engines.zmq;

import io.kvrouter.engines.config.TcpEndpoint;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;

/**
 * One engine rank's ZMQ sockets: a SUB connected to the rank's PUB endpoint (subscribed to the configured topic or
 * to every topic), a monitor telling whether it is connected, and a DEALER for the rank's replay ROUTER. Used by one
 * thread (the engine's connector thread), as ZMQ sockets must be.
 */
public final class RankSockets implements AutoCloseable {
  private static final AtomicLong MONITORS = new AtomicLong();

  /** One live message: its frames checked (three: topic, 8-byte sequence, payload). */
  public record Message(long seq, byte[] payload) {}

  /** What a replay did. */
  public enum ReplayEnd {
    /** The publisher answered every batch it held from the asked sequence on, then its end marker. */
    ENDED,
    /** No answer within the timeout (or no replay endpoint); the DEALER is replaced so a late answer is dropped. */
    FAILED,
    /** The consumer stopped it (or the batch bound was hit). */
    STOPPED
  }

  /** Receives replayed batches in order; returns false to stop the replay. */
  public interface ReplayConsumer {
    boolean accept(long seq, byte[] payload);
  }

  private final ZContext context;
  private final int rank;
  private final TcpEndpoint publisher;
  private final TcpEndpoint replayEndpoint;
  private final byte[] topic;
  private final int highWaterMark;
  private final long maxMessageBytes;
  private final ZMQ.Socket sub;
  private final ZMQ.Socket monitor;
  private ZMQ.Socket dealer;
  private volatile boolean connected;
  private long malformedReplies;
  private long unansweredRequests;

  public RankSockets(ZContext context, int rank, TcpEndpoint publisher, TcpEndpoint replayEndpoint, String topic,
      int highWaterMark, long maxMessageBytes) {
    this.context = context;
    this.rank = rank;
    this.publisher = publisher;
    this.replayEndpoint = replayEndpoint;
    this.topic = topic == null ? null : topic.getBytes(StandardCharsets.UTF_8);
    this.highWaterMark = highWaterMark;
    this.maxMessageBytes = maxMessageBytes;
    sub = context.createSocket(SocketType.SUB);
    sub.setLinger(0);
    sub.setRcvHWM(highWaterMark);
    sub.setMaxMsgSize(maxMessageBytes);
    sub.setReconnectIVL(100);
    sub.setReconnectIVLMax(2000);
    String monitorAddress = "inproc://kvrouter-engine-monitor-" + MONITORS.incrementAndGet();
    sub.monitor(monitorAddress, ZMQ.EVENT_CONNECTED | ZMQ.EVENT_DISCONNECTED);
    monitor = context.createSocket(SocketType.PAIR);
    monitor.setLinger(0);
    monitor.connect(monitorAddress);
    // ZMQ matches subscriptions by prefix: the topic frame is compared whole below
    sub.subscribe(this.topic == null ? new byte[0] : this.topic);
    sub.connect(publisher.toString());
  }

  public int rank() {
    return rank;
  }

  public TcpEndpoint publisher() {
    return publisher;
  }

  public boolean hasReplay() {
    return replayEndpoint != null;
  }

  public boolean connected() {
    return connected;
  }

  public ZMQ.Socket sub() {
    return sub;
  }

  public ZMQ.Socket monitor() {
    return monitor;
  }

  /** Reads the monitor's pending events into {@link #connected()}. */
  public void readMonitor() {
    ZMQ.Event event;
    while ((event = ZMQ.Event.recv(monitor, ZMQ.DONTWAIT)) != null) {
      if (event.getEvent() == ZMQ.EVENT_CONNECTED) {
        connected = true;
      } else if (event.getEvent() == ZMQ.EVENT_DISCONNECTED) {
        connected = false;
      }
    }
  }

  /**
   * The next live message without waiting: null when none is queued. A message that is not {@code [topic, 8-byte
   * seq, payload]} (or whose topic is not the configured one) counts in {@code malformed} and is dropped.
   */
  public Message receive(long[] malformed) {
    byte[] first = sub.recv(ZMQ.DONTWAIT);
    if (first == null) {
      return null;
    }
    List<byte[]> frames = Frames.rest(sub, first);
    Long seq = frames.size() == 3 ? Frames.sequence(frames.get(1)) : null;
    if (seq == null || (topic != null && !Arrays.equals(topic, frames.get(0)))) {
      malformed[0]++;
      return new Message(Long.MIN_VALUE, null);
    }
    return new Message(seq, frames.get(2));
  }

  /**
   * Asks the rank's replay socket for every batch it holds from {@code fromSeq} on and hands them to
   * {@code consumer} in order, until the end marker ({@code -1}), a reply later than {@code timeoutMillis}, or
   * {@code maxBatches}. A request nothing answered within the timeout is asked again on a fresh DEALER, up to
   * {@code attempts} requests in all: a busy engine's late first answer must not cost the rank its history. Once
   * a batch arrived, a timeout ends the replay (the consumer has seen part of it).
   */
  public ReplayEnd replay(long fromSeq, int timeoutMillis, int attempts, int maxBatches, ReplayConsumer consumer) {
    if (replayEndpoint == null) {
      return ReplayEnd.FAILED;
    }
    for (int attempt = 1; ; attempt++) {
      ReplayEnd end = replayOnce(fromSeq, timeoutMillis, maxBatches, consumer);
      if (end != null) {
        return end;
      }
      if (attempt >= attempts) {
        return ReplayEnd.FAILED;
      }
      unansweredRequests++;
    }
  }

  /** One replay request; null when nothing answered it in time (the DEALER dropped). */
  private ReplayEnd replayOnce(long fromSeq, int timeoutMillis, int maxBatches, ReplayConsumer consumer) {
    if (dealer == null) {
      dealer = context.createSocket(SocketType.DEALER);
      dealer.setLinger(0);
      dealer.setRcvHWM(Math.max(highWaterMark, maxBatches + 1));
      dealer.setMaxMsgSize(maxMessageBytes);
      dealer.connect(replayEndpoint.toString());
    }
    dealer.setReceiveTimeOut(timeoutMillis);
    // a DEALER talks to a ROUTER as a REQ would: an empty delimiter frame, then the request
    dealer.sendMore(new byte[0]);
    dealer.send(Frames.sequenceFrame(fromSeq), 0);
    for (int received = 0; received <= maxBatches; received++) {
      byte[] first = dealer.recv(0);
      if (first == null) {
        dropDealer();
        return received == 0 ? null : ReplayEnd.FAILED;
      }
      List<byte[]> frames = Frames.rest(dealer, first);
      // [delimiter, seq, payload]; a publisher that also sends the topic: [delimiter, topic, seq, payload]
      int offset = frames.size() >= 1 && frames.get(0).length == 0 ? 1 : 0;
      int size = frames.size() - offset;
      Long seq = size == 2 ? Frames.sequence(frames.get(offset))
          : size == 3 ? Frames.sequence(frames.get(offset + 1)) : null;
      if (seq == null) {
        malformedReplies++;
        continue;
      }
      if (seq == -1L) {
        return ReplayEnd.ENDED;
      }
      byte[] payload = frames.get(frames.size() - 1);
      if (received == maxBatches || !consumer.accept(seq, payload)) {
        // the rest of this answer must not be read as the next replay's: start over with a fresh DEALER
        dropDealer();
        return ReplayEnd.STOPPED;
      }
    }
    dropDealer();
    return ReplayEnd.STOPPED;
  }

  /** Replay requests nothing answered in time that were asked again. */
  public long unansweredRequests() {
    return unansweredRequests;
  }

  public long malformedReplies() {
    return malformedReplies;
  }

  private void dropDealer() {
    if (dealer != null) {
      context.destroySocket(dealer);
      dealer = null;
    }
  }

  @Override
  public void close() {
    dropDealer();
    context.destroySocket(monitor);
    context.destroySocket(sub);
  }
}
