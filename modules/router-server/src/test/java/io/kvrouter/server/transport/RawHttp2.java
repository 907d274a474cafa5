package io.kvrouter.server.transport;

import io.grpc.netty.shaded.io.netty.buffer.ByteBuf;
import io.grpc.netty.shaded.io.netty.buffer.ByteBufUtil;
import io.grpc.netty.shaded.io.netty.buffer.Unpooled;
import io.grpc.netty.shaded.io.netty.handler.codec.http2.DefaultHttp2Headers;
import io.grpc.netty.shaded.io.netty.handler.codec.http2.DefaultHttp2HeadersDecoder;
import io.grpc.netty.shaded.io.netty.handler.codec.http2.DefaultHttp2HeadersEncoder;
import io.grpc.netty.shaded.io.netty.handler.codec.http2.Http2Exception;
import io.grpc.netty.shaded.io.netty.handler.codec.http2.Http2Headers;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLSocket;

/**
 * A client connection that writes HTTP/2 frames by hand, for frame sequences no gRPC client library lets a test
 * time: a unary gRPC call, its answer read up to the trailers, then an RST_STREAM on the stream the server has
 * closed, before or after acknowledging the server's PING. Header blocks are HPACK-coded with Netty's coder; every
 * other frame is laid out here. Frames this client does not wait for are read and dropped.
 */
final class RawHttp2 implements AutoCloseable {
  static final long CANCEL = 0x8;
  private static final byte[] PREFACE = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".getBytes(StandardCharsets.US_ASCII);
  private static final int DATA = 0x0;
  private static final int HEADERS = 0x1;
  private static final int RST_STREAM = 0x3;
  private static final int SETTINGS = 0x4;
  private static final int PING = 0x6;
  private static final int CONTINUATION = 0x9;
  private static final int END_STREAM = 0x1;
  private static final int END_HEADERS = 0x4;
  private static final int ACK = 0x1;

  private final Socket socket;
  private final DataInputStream in;
  private final OutputStream out;
  private final String authority;
  private final String scheme;
  private final DefaultHttp2HeadersEncoder encoder = new DefaultHttp2HeadersEncoder();
  private final DefaultHttp2HeadersDecoder decoder = new DefaultHttp2HeadersDecoder(true);
  private int nextStreamId = 1;

  RawHttp2(int port) throws IOException {
    this(new Socket("127.0.0.1", port), port, "http");
  }

  /**
   * Over TLS: the handshake (ALPN h2) is done here with {@code tls}, which must trust the server's certificate; the
   * frames then travel encrypted, as a gRPC client's would.
   */
  static RawHttp2 overTls(int port, SSLContext tls) throws IOException {
    SSLSocket socket = (SSLSocket) tls.getSocketFactory().createSocket("127.0.0.1", port);
    SSLParameters parameters = socket.getSSLParameters();
    parameters.setApplicationProtocols(new String[] {"h2"});
    socket.setSSLParameters(parameters);
    socket.startHandshake();
    if (!"h2".equals(socket.getApplicationProtocol())) {
      throw new IOException("the server did not agree to h2 by ALPN: " + socket.getApplicationProtocol());
    }
    return new RawHttp2(socket, port, "https");
  }

  private RawHttp2(Socket socket, int port, String scheme) throws IOException {
    this.socket = socket;
    this.scheme = scheme;
    socket.setTcpNoDelay(true);
    socket.setSoTimeout(10_000);
    in = new DataInputStream(socket.getInputStream());
    out = socket.getOutputStream();
    authority = "127.0.0.1:" + port;
    out.write(PREFACE);
    frame(SETTINGS, 0, 0, new byte[0]);
  }

  /** Sends a unary gRPC call (HEADERS, then the message in one DATA frame ending the stream); its stream id. */
  int unary(String path, byte[] message) throws IOException, Http2Exception {
    int streamId = nextStreamId;
    nextStreamId += 2;
    Http2Headers headers = new DefaultHttp2Headers().method("POST").scheme(scheme).path(path).authority(authority)
        .add("content-type", "application/grpc").add("te", "trailers");
    ByteBuf block = Unpooled.buffer();
    try {
      encoder.encodeHeaders(streamId, headers, block);
      frame(HEADERS, END_HEADERS, streamId, ByteBufUtil.getBytes(block));
    } finally {
      block.release();
    }
    ByteBuffer body = ByteBuffer.allocate(5 + message.length).put((byte) 0).putInt(message.length).put(message);
    frame(DATA, END_STREAM, streamId, body.array());
    return streamId;
  }

  /**
   * Reads frames until the server ends the stream with its trailers, and returns them. Every header block is
   * decoded in order (HPACK keeps state across them); the server's SETTINGS are acknowledged.
   */
  Http2Headers awaitTrailers(int streamId) throws IOException, Http2Exception {
    ByteArrayOutputStream block = new ByteArrayOutputStream();
    boolean endsStream = false;
    while (true) {
      int length = in.readUnsignedByte() << 16 | in.readUnsignedShort();
      int type = in.readUnsignedByte();
      int flags = in.readUnsignedByte();
      int stream = in.readInt() & 0x7fffffff;
      byte[] payload = in.readNBytes(length);
      if (type == SETTINGS && (flags & ACK) == 0) {
        frame(SETTINGS, ACK, 0, new byte[0]);
      }
      if (type == HEADERS || type == CONTINUATION) {
        if (type == HEADERS) {
          endsStream = (flags & END_STREAM) != 0;
        }
        block.write(payload);
        if ((flags & END_HEADERS) != 0) {
          Http2Headers headers = decoder.decodeHeaders(stream, Unpooled.wrappedBuffer(block.toByteArray()));
          block.reset();
          if (stream == streamId && endsStream) {
            return headers;
          }
        }
      }
    }
  }

  /** Reads frames until the server sends a PING (not an acknowledgement); its payload. */
  long awaitPing() throws IOException {
    while (true) {
      int length = in.readUnsignedByte() << 16 | in.readUnsignedShort();
      int type = in.readUnsignedByte();
      int flags = in.readUnsignedByte();
      in.readInt();
      byte[] payload = in.readNBytes(length);
      if (type == PING && (flags & ACK) == 0) {
        return ByteBuffer.wrap(payload).getLong();
      }
    }
  }

  /** Acknowledges a PING, as a client does once it has processed every frame before it. */
  void pingAck(long payload) throws IOException {
    frame(PING, ACK, 0, ByteBuffer.allocate(8).putLong(payload).array());
  }

  /** Sends RST_STREAM with this error code. */
  void reset(int streamId, long errorCode) throws IOException {
    frame(RST_STREAM, 0, streamId, ByteBuffer.allocate(4).putInt((int) errorCode).array());
  }

  private void frame(int type, int flags, int streamId, byte[] payload) throws IOException {
    ByteBuffer header = ByteBuffer.allocate(9)
        .put((byte) (payload.length >>> 16)).put((byte) (payload.length >>> 8)).put((byte) payload.length)
        .put((byte) type).put((byte) flags).putInt(streamId);
    out.write(header.array());
    out.write(payload);
    out.flush();
  }

  @Override
  public void close() throws IOException {
    socket.close();
  }
}
