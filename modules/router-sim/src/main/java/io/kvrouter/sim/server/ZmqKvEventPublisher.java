package io.kvrouter.sim.server;

import io.kvrouter.sim.engine.KvCacheEvent;
import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.List;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;
import org.zeromq.ZMsg;

/**
 * One rank's KV event publisher, as vLLM's ZmqEventPublisher (vllm/distributed/kv_events.py, 0.33.0): a PUB socket
 * sending multipart {@code [topic, seq as 8 bytes big-endian, payload]}, {@code seq} counting from 0 per process; a
 * ROUTER replay socket answering a DEALER's {@code ["", start_seq as 8 bytes big-endian]} with every buffered batch
 * from {@code start_seq} on, then an end marker ({@link EngineConfig.ReplayFormat}); the last 10,000 batches
 * buffered. One thread owns both sockets (ZMQ sockets are not thread-safe): the engine hands it batches.
 */
public final class ZmqKvEventPublisher implements AutoCloseable {
  public static final int BUFFER_STEPS = 10_000;
  private static final int HWM = 100_000;
  private static final byte[] END_SEQ = ByteBuffer.allocate(8).putLong(-1).array();
  private static final byte[] EMPTY = new byte[0];
  private static final Logger log = LoggerFactory.getLogger(ZmqKvEventPublisher.class);

  private record Batch(double timestamp, List<KvCacheEvent> events) {}

  private record Buffered(long seq, byte[] payload) {}

  private final ZContext context = new ZContext();
  private final ZMQ.Socket pub;
  private final ZMQ.Socket replay;
  private final int pubPort;
  private final int replayPort;
  private final byte[] topic;
  private final int rank;
  private final KvEventEncoder encoder;
  private final EngineConfig.ReplayFormat replayFormat;
  private final LinkedBlockingQueue<Batch> queue = new LinkedBlockingQueue<>(HWM);
  private final ArrayDeque<Buffered> buffer = new ArrayDeque<>();
  private final Thread thread;
  private volatile boolean running = true;
  private long nextSeq;

  /**
   * Binds {@code tcp://host:pubPort} and, unless {@code replayPort} is -1, {@code tcp://host:replayPort}; port 0
   * binds a free port ({@link #pubPort()}).
   */
  public ZmqKvEventPublisher(String host, int pubPort, int replayPort, String topic, int rank,
      EngineConfig.KvEventEncoding encoding, EngineConfig.ReplayFormat replayFormat) {
    this.topic = topic.getBytes(StandardCharsets.UTF_8);
    this.rank = rank;
    this.encoder = new KvEventEncoder(encoding);
    this.replayFormat = replayFormat;
    try {
      pub = context.createSocket(SocketType.PUB);
      pub.setSndHWM(HWM);
      pub.setLinger(0);
      this.pubPort = bind(pub, host, pubPort);
      if (replayPort >= 0) {
        replay = context.createSocket(SocketType.ROUTER);
        // a full replay plus its end marker must fit: vLLM sets 2 * (buffer_steps + 1)
        replay.setSndHWM(2 * (BUFFER_STEPS + 1));
        replay.setLinger(0);
        this.replayPort = bind(replay, host, replayPort);
      } else {
        replay = null;
        this.replayPort = -1;
      }
    } catch (RuntimeException e) {
      context.close();
      throw new IllegalStateException("cannot bind the KV event sockets of rank " + rank + " on " + host + " (PUB "
          + pubPort + ", replay " + replayPort + "): " + e.getMessage(), e);
    }
    thread = new Thread(this::run, "sim-kv-events-" + rank);
    thread.setDaemon(true);
    thread.start();
  }

  private static int bind(ZMQ.Socket socket, String host, int port) {
    if (port == 0) {
      return socket.bindToRandomPort("tcp://" + host);
    }
    socket.bind("tcp://" + host + ":" + port);
    return port;
  }

  public int pubPort() {
    return pubPort;
  }

  public int replayPort() {
    return replayPort;
  }

  /** Queues one step's events (from the engine thread); dropped, as vLLM's full queue blocks, only past 100,000. */
  public void publish(double timestampSeconds, List<KvCacheEvent> events) {
    if (!queue.offer(new Batch(timestampSeconds, List.copyOf(events)))) {
      log.warn("rank {}: KV event queue full, a batch is dropped", rank);
    }
  }

  private void run() {
    try {
      while (running || !queue.isEmpty()) {
        Batch batch = queue.poll(replay != null ? 10 : 100, TimeUnit.MILLISECONDS);
        while (batch != null) {
          send(batch);
          batch = queue.poll();
        }
        // after sending what is queued: a replay then covers every batch handed over before the request came
        if (replay != null) {
          serviceReplay();
        }
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (RuntimeException e) {
      if (running) {
        log.error("rank {}: KV event publisher failed", rank, e);
      }
    } finally {
      context.close();
    }
  }

  private void send(Batch batch) {
    long seq = nextSeq++;
    byte[] payload = encoder.encode(batch.timestamp(), batch.events(), rank);
    byte[] seqBytes = ByteBuffer.allocate(8).putLong(seq).array();
    pub.send(topic, ZMQ.SNDMORE);
    pub.send(seqBytes, ZMQ.SNDMORE);
    pub.send(payload, 0);
    buffer.addLast(new Buffered(seq, payload));
    if (buffer.size() > BUFFER_STEPS) {
      buffer.removeFirst();
    }
  }

  private void serviceReplay() {
    ZMsg request;
    while ((request = ZMsg.recvMsg(replay, ZMQ.DONTWAIT)) != null) {
      try {
        if (request.size() != 3) {
          log.warn("rank {}: invalid replay request of {} frames", rank, request.size());
          continue;
        }
        byte[] client = request.pop().getData();
        request.pop();
        byte[] start = request.pop().getData();
        long startSeq = start.length == 0 ? 0 : new BigInteger(1, start).min(BigInteger.valueOf(Long.MAX_VALUE))
            .longValue();
        for (Buffered batch : buffer) {
          if (batch.seq() >= startSeq) {
            reply(client, ByteBuffer.allocate(8).putLong(batch.seq()).array(), batch.payload());
          }
        }
        reply(client, END_SEQ, EMPTY);
      } finally {
        request.destroy();
      }
    }
  }

  private void reply(byte[] client, byte[] seq, byte[] payload) {
    replay.send(client, ZMQ.SNDMORE);
    replay.send(EMPTY, ZMQ.SNDMORE);
    if (replayFormat == EngineConfig.ReplayFormat.TOPIC) {
      // the end marker's topic frame is empty, as vLLM's (b"", END_SEQ, b"")
      replay.send(payload.length == 0 && seq == END_SEQ ? EMPTY : topic, ZMQ.SNDMORE);
    }
    replay.send(seq, ZMQ.SNDMORE);
    replay.send(payload, 0);
  }

  @Override
  public void close() {
    running = false;
    try {
      thread.join(2_000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
