package io.kvrouter.engines.testkit;

import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;

/** An engine's /metrics on 127.0.0.1 (JDK HTTP server): serves the page set last, or a status code instead. */
public final class MetricsServer implements AutoCloseable {
  private final HttpServer server;
  private volatile String page = "";
  private volatile int status = 200;

  public MetricsServer() throws IOException {
    // without it the JDK server's response waits for the client's delayed ACK (about 40 ms a scrape on loopback)
    System.setProperty("sun.net.httpserver.nodelay", "true");
    server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    server.createContext("/metrics", exchange -> {
      byte[] body = (status == 200 ? page : "unavailable").getBytes(StandardCharsets.UTF_8);
      exchange.getResponseHeaders().add("Content-Type", "text/plain; version=0.0.4; charset=utf-8");
      exchange.sendResponseHeaders(status, body.length);
      try (OutputStream out = exchange.getResponseBody()) {
        out.write(body);
      }
    });
    server.start();
  }

  public String baseUrl() {
    return "http://127.0.0.1:" + server.getAddress().getPort();
  }

  public void page(String page) {
    this.page = page;
    this.status = 200;
  }

  public void fail(int status) {
    this.status = status;
  }

  @Override
  public void close() {
    server.stop(0);
  }
}
