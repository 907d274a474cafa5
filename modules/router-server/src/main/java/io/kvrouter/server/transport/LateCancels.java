package io.kvrouter.server.transport;

import io.grpc.Context;
import io.grpc.Metadata;
import io.grpc.ServerStreamTracer;
import io.grpc.netty.shaded.io.grpc.netty.GrpcHttp2ConnectionHandler;
import io.grpc.netty.shaded.io.grpc.netty.InternalProtocolNegotiator;
import io.grpc.netty.shaded.io.netty.buffer.ByteBuf;
import io.grpc.netty.shaded.io.netty.channel.ChannelHandler;
import io.grpc.netty.shaded.io.netty.channel.ChannelHandlerAdapter;
import io.grpc.netty.shaded.io.netty.channel.ChannelHandlerContext;
import io.grpc.netty.shaded.io.netty.channel.ChannelInboundHandlerAdapter;
import io.grpc.netty.shaded.io.netty.handler.codec.http2.Http2Exception;
import io.grpc.netty.shaded.io.netty.handler.codec.http2.Http2FrameListenerDecorator;
import io.grpc.netty.shaded.io.netty.handler.codec.http2.Http2Headers;
import io.grpc.netty.shaded.io.netty.util.AsciiString;
import io.grpc.netty.shaded.io.netty.util.concurrent.EventExecutor;
import io.kvrouter.api.v1.RouterGrpc;
import java.time.Duration;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Frees the booking of a Book whose client cancelled after the router had written the answer, but before the client
 * had received it. grpc-java's server considers a call complete once its trailers (END_STREAM) are written; the
 * client's RST_STREAM(CANCEL) then arrives for a stream Netty has closed and is dropped before any listener sees it,
 * so neither grpc-java nor a frame listener learns of it. Here each connection remembers, for a short window and up to
 * a bounded count, the Book streams whose answer was written, and reads the connection's inbound HTTP/2 frame
 * headers itself: an RST_STREAM(CANCEL) for such a stream abandons the call's answer (CancelBook with its nonce).
 *
 * <p>Why a late RST_STREAM means the client never saw the answer: a client sends RST_STREAM only on a stream it
 * still holds open, i.e. before it processed the END_STREAM, so its frames crossed ours; grpc-java's client then
 * reports CANCELLED to its caller and drops the answer. A grpc-java client whose call had completed sends nothing on
 * cancel with retries enabled (its default; {@code LateCancelTest} checks it). With retries disabled
 * ({@code disableRetry()}) a grpc-java client does send RST_STREAM(CANCEL) for a call cancelled after it completed,
 * and such a Book would be freed although its caller read it: the contract says so (router.proto, Book).
 *
 * <p>The pieces, all on the connection's event loop: {@link #around} wraps the server's protocol negotiator so that
 * each connection gets a {@code RstStreamReader} in front of grpc-java's handler (it must see the HTTP/2 bytes:
 * with TLS it goes right after the SslHandler) and a decorator on that handler's frame listener, which marks the
 * stream whose HEADERS grpc-java is processing; grpc-java creates a call's {@link ServerStreamTracer} synchronously
 * while it processes those HEADERS, so the {@link #tracers} factory ties a Book call to its stream id and puts it
 * in the call's gRPC {@link Context}, where {@link #current} finds it.
 */
final class LateCancels {
  private static final Logger log = LoggerFactory.getLogger(LateCancels.class);
  /** HTTP/2's CANCEL error code: what gRPC clients send when their caller cancels or its deadline passes. */
  private static final long CANCEL = 0x8;
  private static final String BOOK = RouterGrpc.getBookMethod().getFullMethodName();
  private static final Context.Key<CallStream> CALL_STREAM = Context.key("kvrouter-book-stream");
  /** The connection whose HEADERS frame grpc-java is processing on this event-loop thread, while it does. */
  private static final ThreadLocal<Connection> OPENING = new ThreadLocal<>();
  private static final ServerStreamTracer UNTRACKED = new ServerStreamTracer() {};

  private final long windowNanos;
  private final int maxRemembered;

  /**
   * @param window how long after its answer was written a Book's stream is remembered
   * @param maxRemembered at most this many streams per connection (the oldest is forgotten first)
   */
  LateCancels(Duration window, int maxRemembered) {
    if (window.isNegative() || window.isZero() || maxRemembered < 1) {
      throw new IllegalArgumentException("late-cancel window and count must be positive");
    }
    this.windowNanos = window.toNanos();
    this.maxRemembered = maxRemembered;
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
        return new Installer(connection, negotiator.newHandler(grpcHandler));
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

  /** Told of every RST_STREAM frame a connection receives. */
  interface ResetListener {
    void reset(int streamId, long errorCode);
  }

  /** One client connection's answered Book streams; touched only on its event loop. */
  private final class Connection implements ResetListener {
    private volatile EventExecutor loop;
    private int openingStreamId;
    private final LinkedHashMap<Integer, Answered> answered = new LinkedHashMap<>() {
      @Override
      protected boolean removeEldestEntry(Map.Entry<Integer, Answered> eldest) {
        return size() > maxRemembered;
      }
    };

    void remember(int streamId, Runnable abandon) {
      long now = System.nanoTime();
      forgetExpired(now);
      answered.put(streamId, new Answered(abandon, now + windowNanos));
    }

    @Override
    public void reset(int streamId, long errorCode) {
      forgetExpired(System.nanoTime());
      Answered call = answered.remove(streamId);
      if (call == null || errorCode != CANCEL) {
        return;
      }
      try {
        call.abandon().run();
      } catch (RuntimeException e) {
        log.warn("could not abandon a Book cancelled after its answer was written", e);
      }
    }

    private void forgetExpired(long now) {
      Iterator<Answered> oldestFirst = answered.values().iterator();
      while (oldestFirst.hasNext() && oldestFirst.next().forgetAt() - now <= 0) {
        oldestFirst.remove();
      }
    }
  }

  private record Answered(Runnable abandon, long forgetAt) {}

  /** Puts the reader in front of the negotiator's handler, then steps aside for that handler. */
  private static final class Installer extends ChannelHandlerAdapter {
    private final Connection connection;
    private final ChannelHandler negotiation;

    Installer(Connection connection, ChannelHandler negotiation) {
      this.connection = connection;
      this.negotiation = negotiation;
    }

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
      connection.loop = ctx.executor();
      ctx.pipeline().addBefore(ctx.name(), null, new RstStreamReader(connection));
      ctx.pipeline().replace(this, null, negotiation);
    }
  }

  /** Marks the stream whose HEADERS grpc-java processes, for the stream tracer it creates meanwhile. */
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

    private void opening(int streamId) {
      connection.openingStreamId = streamId;
      OPENING.set(connection);
    }
  }

  /**
   * Reads the frame headers of a connection's inbound HTTP/2 bytes (after the client's 24-byte preface) and reports
   * each RST_STREAM to its listener; the bytes go on to grpc-java unchanged. Frames may be split anywhere across
   * reads. Bytes that are not HTTP/2 make grpc-java close the connection; here they can at most abandon a Book of
   * that same connection.
   */
  static final class RstStreamReader extends ChannelInboundHandlerAdapter {
    private static final int PREFACE_LENGTH = 24;
    private static final int HEADER_LENGTH = 9;
    private static final int RST_STREAM = 0x3;

    private final ResetListener listener;
    /** Bytes still to pass over: the preface, then the rest of each frame's payload. */
    private int skip = PREFACE_LENGTH;
    private final byte[] header = new byte[HEADER_LENGTH];
    private int headerRead;
    /** While an RST_STREAM's 4-byte error code is being read: its stream, and the bytes read so far. */
    private int rstStreamId = -1;
    private long rstErrorCode;
    private int rstCodeRead;

    RstStreamReader(ResetListener listener) {
      this.listener = listener;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
      if (msg instanceof ByteBuf bytes) {
        scan(bytes);
      }
      ctx.fireChannelRead(msg);
    }

    private void scan(ByteBuf bytes) {
      int at = bytes.readerIndex();
      int end = bytes.writerIndex();
      while (at < end) {
        if (skip > 0) {
          int n = Math.min(skip, end - at);
          at += n;
          skip -= n;
        } else if (rstStreamId >= 0) {
          rstErrorCode = (rstErrorCode << 8) | (bytes.getByte(at++) & 0xff);
          if (++rstCodeRead == 4) {
            int streamId = rstStreamId;
            rstStreamId = -1;
            listener.reset(streamId, rstErrorCode);
          }
        } else {
          header[headerRead++] = bytes.getByte(at++);
          if (headerRead == HEADER_LENGTH) {
            headerRead = 0;
            frameHeader();
          }
        }
      }
    }

    private void frameHeader() {
      int length = (header[0] & 0xff) << 16 | (header[1] & 0xff) << 8 | (header[2] & 0xff);
      int type = header[3] & 0xff;
      int streamId = (header[5] & 0x7f) << 24 | (header[6] & 0xff) << 16 | (header[7] & 0xff) << 8
          | (header[8] & 0xff);
      if (type == RST_STREAM && length == 4) {
        rstStreamId = streamId;
        rstErrorCode = 0;
        rstCodeRead = 0;
      } else {
        skip = length;
      }
    }
  }
}
