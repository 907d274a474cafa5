package io.kvrouter.server.transport;

import io.grpc.Context;
import io.grpc.Metadata;
import io.grpc.ServerStreamTracer;
import io.grpc.netty.shaded.io.grpc.netty.GrpcHttp2ConnectionHandler;
import io.grpc.netty.shaded.io.grpc.netty.InternalProtocolNegotiator;
import io.grpc.netty.shaded.io.netty.buffer.ByteBuf;
import io.grpc.netty.shaded.io.netty.channel.ChannelHandler;
import io.grpc.netty.shaded.io.netty.channel.ChannelHandlerAdapter;
import io.grpc.netty.shaded.io.netty.channel.ChannelDuplexHandler;
import io.grpc.netty.shaded.io.netty.channel.ChannelHandlerContext;
import io.grpc.netty.shaded.io.netty.channel.ChannelInboundHandlerAdapter;
import io.grpc.netty.shaded.io.netty.channel.ChannelPromise;
import io.grpc.netty.shaded.io.netty.handler.codec.http2.Http2Exception;
import io.grpc.netty.shaded.io.netty.handler.codec.http2.Http2FrameListenerDecorator;
import io.grpc.netty.shaded.io.netty.handler.codec.http2.Http2Headers;
import io.grpc.netty.shaded.io.netty.handler.ssl.SslHandler;
import io.grpc.netty.shaded.io.netty.util.AsciiString;
import io.grpc.netty.shaded.io.netty.util.concurrent.EventExecutor;
import io.kvrouter.api.v1.RouterGrpc;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Frees the booking of a Book whose client cancelled after the router had written the answer, but before the client
 * had read it. grpc-java's server considers a call complete once its trailers (END_STREAM) are written; the client's
 * RST_STREAM(CANCEL) then arrives for a stream Netty has closed and is dropped before any listener sees it, so
 * neither grpc-java nor a frame listener learns of it. Here each connection reads its inbound HTTP/2 frame headers
 * itself and remembers the Book streams whose answer was written: an RST_STREAM(CANCEL) for such a stream abandons
 * the call's answer (CancelBook with its nonce).
 *
 * <p>A reset after the answer does not by itself mean the client never saw it: grpc-java's client resets the stream
 * of a call cancelled while its answer is being delivered (the cancel from another thread racing with the delivery,
 * seen in router-bench's leak bench), and with retries disabled also of a call cancelled after it completed. So a
 * stream stays abandonable only until the client confirms it has read past the answer: a PING written in the same
 * flush as the answer's trailers, right after them, which the client acknowledges once it has processed every frame
 * before it. A reset that arrives before that acknowledgement was sent before the client had processed the PING;
 * one after it frees nothing. Left open: a client that reads the trailers and the PING in two reads with its cancel
 * in between (one write on the wire; not seen in the bench). Streams are also forgotten after a window and beyond a
 * count.
 *
 * <p>The pieces, all on the connection's event loop: {@link #around} wraps the server's protocol negotiator so that
 * each connection gets a {@code FrameTap} in front of grpc-java's handler (it must see the HTTP/2 bytes: with TLS it
 * goes right after the SslHandler, moved there at the first read; before it, it would see no preface and stay idle,
 * LateCancelOverTlsTest), which reads frame headers both
 * ways and writes the PINGs, and a decorator on that handler's frame listener, which marks the stream whose HEADERS
 * grpc-java is processing and keeps our PING acknowledgements from it; grpc-java creates a call's
 * {@link ServerStreamTracer} synchronously while it processes those HEADERS, so the {@link #tracers} factory ties a
 * Book call to its stream id and puts it in the call's gRPC {@link Context}, where {@link #current} finds it.
 */
final class LateCancels {
  private static final Logger log = LoggerFactory.getLogger(LateCancels.class);
  /** HTTP/2's CANCEL error code: what gRPC clients send when their caller cancels or its deadline passes. */
  private static final long CANCEL = 0x8;
  private static final String BOOK = RouterGrpc.getBookMethod().getFullMethodName();
  private static final AsciiString TLS = AsciiString.of("https");
  private static final Context.Key<CallStream> CALL_STREAM = Context.key("kvrouter-book-stream");
  /** The connection whose HEADERS frame grpc-java is processing on this event-loop thread, while it does. */
  private static final ThreadLocal<Connection> OPENING = new ThreadLocal<>();
  private static final ServerStreamTracer UNTRACKED = new ServerStreamTracer() {};
  /** Our confirmation PINGs carry "kvL8" in their top 32 bits (grpc-java's own pings are small numbers). */
  private static final long PING_TAG_MASK = 0xFFFF_FFFF_0000_0000L;
  private static final long PING_TAG = 0x6B76_4C38_0000_0000L;

  private final long windowNanos;
  private final int maxRemembered;

  /**
   * @param window how long after its answer was written a Book's stream is remembered at most (it is forgotten
   *     sooner, once the client acknowledges the PING that follows the answer)
   * @param maxRemembered at most this many streams per connection (the oldest is forgotten first)
   */
  LateCancels(Duration window, int maxRemembered) {
    if (window.isNegative() || window.isZero() || maxRemembered < 1) {
      throw new IllegalArgumentException("late-cancel window and count must be positive");
    }
    this.windowNanos = window.toNanos();
    this.maxRemembered = maxRemembered;
  }

  /** Whether a PING payload is one of ours (else grpc-java's: keepalive, flow control, shutdown). */
  static boolean isConfirmation(long pingPayload) {
    return (pingPayload & PING_TAG_MASK) == PING_TAG;
  }

  /** The Book call running in the current gRPC context, or null (another method, or not served through these). */
  static CallStream current() {
    return CALL_STREAM.get();
  }

  /** Wraps the server's negotiator: every connection it hands to grpc-java is watched for late cancels. */
  InternalProtocolNegotiator.ProtocolNegotiator around(InternalProtocolNegotiator.ProtocolNegotiator negotiator) {
    return new InternalProtocolNegotiator.ProtocolNegotiator() {
      @Override
      public AsciiString scheme() {
        return negotiator.scheme();
      }

      @Override
      public ChannelHandler newHandler(GrpcHttp2ConnectionHandler grpcHandler) {
        Connection connection = new Connection();
        // grpc-java's handler sets its frame listener when it is built, before it reads a frame
        grpcHandler.decoder().frameListener(new StreamOpening(grpcHandler.decoder().frameListener(), connection));
        return new Installer(connection, negotiator.newHandler(grpcHandler), TLS.contentEquals(negotiator.scheme()));
      }

      @Override
      public void close() {
        negotiator.close();
      }
    };
  }

  /** Ties each Book call to its connection and stream; to be added to the same server. */
  ServerStreamTracer.Factory tracers() {
    return new ServerStreamTracer.Factory() {
      @Override
      public ServerStreamTracer newServerStreamTracer(String fullMethodName, Metadata headers) {
        Connection connection = OPENING.get();
        if (connection == null || !BOOK.equals(fullMethodName)) {
          return UNTRACKED;
        }
        CallStream stream = new CallStream(connection, connection.openingStreamId);
        return new ServerStreamTracer() {
          @Override
          public Context filterContext(Context context) {
            return context.withValue(CALL_STREAM, stream);
          }
        };
      }
    };
  }

  /** A Book call's HTTP/2 stream on its connection. */
  static final class CallStream {
    private final Connection connection;
    private final int streamId;

    private CallStream(Connection connection, int streamId) {
      this.connection = connection;
      this.streamId = streamId;
    }

    /** The call's answer was handed to grpc-java: a cancel that arrives from now on runs {@code abandon}. */
    void answered(Runnable abandon) {
      EventExecutor loop = connection.loop;
      if (loop == null || loop.inEventLoop()) {
        connection.remember(streamId, abandon);
      } else {
        loop.execute(() -> connection.remember(streamId, abandon));
      }
    }
  }

  /** Told of the frames of a connection that matter here, in the order they pass. */
  interface Frames {
    /** No PING to write before this flush. */
    long NO_PING = -1;

    /** The client reset a stream. */
    void reset(int streamId, long errorCode);

    /** The client acknowledged a PING. */
    void pingAck(long payload);

    /** A frame ending this stream is written. */
    void streamEnded(int streamId);

    /** A flush is about to go out: the payload of a PING to write at its end, or {@link #NO_PING}. */
    long pingBeforeFlush();
  }

  /**
   * One client connection's answered Book streams, until the client confirms it has read past their ends; touched
   * only on its event loop. The confirmation is a PING written in the same flush as the answers' trailers, right
   * after them: the client acknowledges it once it has processed every frame before it, so an RST_STREAM arriving
   * before that acknowledgement was sent before the client had read the answer, and one arriving after it comes
   * from a client that had (a cancel racing with the answer's delivery on the client, which grpc-java then still
   * resets): that one frees nothing.
   */
  private final class Connection implements Frames {
    private volatile EventExecutor loop;
    private int openingStreamId;
    private final LinkedHashMap<Integer, Answered> answered = new LinkedHashMap<>() {
      @Override
      protected boolean removeEldestEntry(Map.Entry<Integer, Answered> eldest) {
        return size() > maxRemembered;
      }
    };
    /** The last confirmation PING numbered; whether answers ended on the wire since, so the next flush needs one. */
    private long lastPing;
    private boolean pingDue;

    void remember(int streamId, Runnable abandon) {
      long now = System.nanoTime();
      forgetExpired(now);
      answered.put(streamId, new Answered(abandon, now + windowNanos));
    }

    @Override
    public void streamEnded(int streamId) {
      Answered call = answered.get(streamId);
      if (call != null && call.confirmedBy == Answered.NOT_WRITTEN) {
        call.confirmedBy = lastPing + 1;
        pingDue = true;
      }
    }

    @Override
    public long pingBeforeFlush() {
      if (!pingDue) {
        return NO_PING;
      }
      pingDue = false;
      return PING_TAG | ++lastPing;
    }

    /** The client has read every frame up to this PING: the answers it confirms can no longer be abandoned. */
    @Override
    public void pingAck(long payload) {
      if (!isConfirmation(payload)) {
        return;
      }
      long ping = payload & ~PING_TAG_MASK;
      // mostly the oldest, but trailers held back by flow control may end a stream after younger ones
      answered.values().removeIf(call -> call.confirmedBy <= ping);
    }

    @Override
    public void reset(int streamId, long errorCode) {
      forgetExpired(System.nanoTime());
      Answered call = answered.remove(streamId);
      if (call == null || errorCode != CANCEL) {
        return;
      }
      try {
        call.abandon.run();
      } catch (RuntimeException e) {
        log.warn("could not abandon a Book cancelled after its answer was written", e);
      }
    }

    private void forgetExpired(long now) {
      Iterator<Answered> oldestFirst = answered.values().iterator();
      while (oldestFirst.hasNext() && oldestFirst.next().forgetAt - now <= 0) {
        oldestFirst.remove();
      }
    }
  }

  /** An answered Book: what abandons it, when it is forgotten, the PING that confirms it once its end is written. */
  private static final class Answered {
    static final long NOT_WRITTEN = Long.MAX_VALUE;
    final Runnable abandon;
    final long forgetAt;
    long confirmedBy = NOT_WRITTEN;

    Answered(Runnable abandon, long forgetAt) {
      this.abandon = abandon;
      this.forgetAt = forgetAt;
    }
  }

  /**
   * Puts the tap in front of the negotiator's handler, then steps aside for that handler. With TLS the tap must see
   * the decrypted bytes, but grpc-java's TLS negotiator adds its SslHandler only later (in front of its own handler,
   * so behind the tap): there a {@link BehindTls} stands in front of the negotiator instead, and moves the tap
   * behind the SslHandler at the connection's first read, before the SslHandler has decrypted (or written) anything.
   */
  private static final class Installer extends ChannelHandlerAdapter {
    private final Connection connection;
    private final ChannelHandler negotiation;
    private final boolean tls;

    Installer(Connection connection, ChannelHandler negotiation, boolean tls) {
      this.connection = connection;
      this.negotiation = negotiation;
      this.tls = tls;
    }

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
      connection.loop = ctx.executor();
      ctx.pipeline().addBefore(ctx.name(), null, tls ? new BehindTls(connection) : new FrameTap(connection));
      ctx.pipeline().replace(this, null, negotiation);
    }
  }

  /** Installs the connection's {@link FrameTap} right behind the SslHandler once the connection is read from. */
  private static final class BehindTls extends ChannelInboundHandlerAdapter {
    private final Connection connection;

    BehindTls(Connection connection) {
      this.connection = connection;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
      ChannelHandlerContext tls = ctx.pipeline().context(SslHandler.class);
      if (tls == null) {
        log.warn("no SslHandler on a TLS connection: late cancels are not watched on it");
      } else {
        ctx.pipeline().addAfter(tls.name(), null, new FrameTap(connection));
      }
      ctx.fireChannelRead(msg);
      ctx.pipeline().remove(this);
    }
  }

  /**
   * Marks the stream whose HEADERS grpc-java processes, for the stream tracer it creates meanwhile, and keeps the
   * acknowledgements of our PINGs from grpc-java (which would log them as unexpected).
   */
  private static final class StreamOpening extends Http2FrameListenerDecorator {
    private final Connection connection;

    StreamOpening(io.grpc.netty.shaded.io.netty.handler.codec.http2.Http2FrameListener listener,
        Connection connection) {
      super(listener);
      this.connection = connection;
    }

    @Override
    public void onHeadersRead(ChannelHandlerContext ctx, int streamId, Http2Headers headers, int padding,
        boolean endOfStream) throws Http2Exception {
      opening(streamId);
      try {
        super.onHeadersRead(ctx, streamId, headers, padding, endOfStream);
      } finally {
        OPENING.remove();
      }
    }

    @Override
    public void onHeadersRead(ChannelHandlerContext ctx, int streamId, Http2Headers headers, int streamDependency,
        short weight, boolean exclusive, int padding, boolean endOfStream) throws Http2Exception {
      opening(streamId);
      try {
        super.onHeadersRead(ctx, streamId, headers, streamDependency, weight, exclusive, padding, endOfStream);
      } finally {
        OPENING.remove();
      }
    }

    @Override
    public void onPingAckRead(ChannelHandlerContext ctx, long data) throws Http2Exception {
      if (!isConfirmation(data)) { // ours were taken in order by the FrameTap
        super.onPingAckRead(ctx, data); // grpc-java's keepalive and shutdown pings
      }
    }

    private void opening(int streamId) {
      connection.openingStreamId = streamId;
      OPENING.set(connection);
    }
  }

  /**
   * Reads the frame headers of a connection's HTTP/2 bytes both ways and tells its {@link Frames} of client resets
   * and PING acknowledgements (in the order they arrive: grpc-java decodes a read only after this has seen all of
   * it, so they cannot be taken from its decoder), and of the frames that end a stream on their way out; at each
   * flush it writes the PING it is asked for after everything written before. Bytes pass on unchanged. Frames may be
   * split anywhere across buffers. A connection that does not start with the client's preface (not HTTP/2, or still
   * encrypted: a tap placed before the SslHandler) is only passed on, and nothing is ever written into it. Other
   * bytes that are not HTTP/2 make grpc-java close the connection; here they can at most abandon a Book of that same
   * connection.
   */
  static final class FrameTap extends ChannelDuplexHandler {
    private static final byte[] PREFACE = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".getBytes(StandardCharsets.US_ASCII);
    private static final int DATA = 0x0;
    private static final int HEADERS = 0x1;
    private static final int RST_STREAM = 0x3;
    private static final int PING = 0x6;
    private static final int END_STREAM_OR_ACK = 0x1;

    private final Frames frames;
    private int prefaceRead;
    private boolean notHttp2;
    private final FrameHeaders inbound = new FrameHeaders(true);
    private final FrameHeaders outbound = new FrameHeaders(false);

    FrameTap(Frames frames) {
      this.frames = frames;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
      if (msg instanceof ByteBuf bytes && !notHttp2) {
        int at = bytes.readerIndex();
        int end = bytes.writerIndex();
        while (at < end && prefaceRead < PREFACE.length) {
          if (bytes.getByte(at++) != PREFACE[prefaceRead++]) {
            notHttp2 = true;
          }
        }
        if (!notHttp2) {
          inbound.scan(bytes, at, end);
        }
      }
      ctx.fireChannelRead(msg);
    }

    @Override
    public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
      if (msg instanceof ByteBuf bytes && !notHttp2) {
        outbound.scan(bytes, bytes.readerIndex(), bytes.writerIndex());
      }
      ctx.write(msg, promise);
    }

    @Override
    public void flush(ChannelHandlerContext ctx) {
      if (prefaceRead == PREFACE.length && !notHttp2) {
        long ping = frames.pingBeforeFlush();
        if (ping != Frames.NO_PING) {
          ByteBuf frame = ctx.alloc().buffer(17).writeMedium(8).writeByte(PING).writeByte(0).writeInt(0)
              .writeLong(ping);
          ctx.write(frame, ctx.voidPromise());
        }
      }
      ctx.flush();
    }

    /** One direction's frame headers, read as the bytes pass. */
    private final class FrameHeaders {
      private final boolean fromClient;
      /** Bytes still to pass over: the rest of a frame's payload. */
      private int skip;
      private final byte[] header = new byte[9];
      private int headerRead;
      /** While an RST_STREAM's error code or a PING acknowledgement's payload is read: the frame, what is left. */
      private int capturing;
      private int capturedStreamId;
      private long captured;
      private int captureLeft;

      FrameHeaders(boolean fromClient) {
        this.fromClient = fromClient;
      }

      void scan(ByteBuf bytes, int at, int end) {
        while (at < end) {
          if (skip > 0) {
            int n = Math.min(skip, end - at);
            at += n;
            skip -= n;
          } else if (captureLeft > 0) {
            captured = (captured << 8) | (bytes.getByte(at++) & 0xff);
            if (--captureLeft == 0) {
              captureEnded();
            }
          } else {
            header[headerRead++] = bytes.getByte(at++);
            if (headerRead == header.length) {
              headerRead = 0;
              frameHeader();
            }
          }
        }
      }

      private void frameHeader() {
        int length = (header[0] & 0xff) << 16 | (header[1] & 0xff) << 8 | (header[2] & 0xff);
        int type = header[3] & 0xff;
        boolean endStreamOrAck = (header[4] & END_STREAM_OR_ACK) != 0;
        int streamId = (header[5] & 0x7f) << 24 | (header[6] & 0xff) << 16 | (header[7] & 0xff) << 8
            | (header[8] & 0xff);
        skip = length;
        if (!fromClient) {
          if ((type == HEADERS || type == DATA) && endStreamOrAck) {
            frames.streamEnded(streamId);
          }
        } else if ((type == RST_STREAM && length == 4) || (type == PING && endStreamOrAck && length == 8)) {
          skip = 0;
          capturing = type;
          capturedStreamId = streamId;
          captured = 0;
          captureLeft = length;
        }
      }

      private void captureEnded() {
        if (capturing == RST_STREAM) {
          frames.reset(capturedStreamId, captured);
        } else {
          frames.pingAck(captured);
        }
      }
    }
  }
}
