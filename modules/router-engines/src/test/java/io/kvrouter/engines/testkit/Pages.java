package io.kvrouter.engines.testkit;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;

/** The recorded /metrics pages (src/test/resources/metrics, see record_metrics_pages.py). */
public final class Pages {
  private Pages() {}

  public static String page(String name) {
    try (InputStream in = Pages.class.getResourceAsStream("/metrics/" + name)) {
      if (in == null) {
        throw new IllegalArgumentException("no recorded page " + name);
      }
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
