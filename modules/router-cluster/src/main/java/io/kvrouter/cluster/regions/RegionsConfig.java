package io.kvrouter.cluster.regions;

import com.typesafe.config.Config;
import java.time.Duration;
import java.util.Map;
import java.util.TreeMap;

/** The {@code kvrouter.regions} config block. */
public record RegionsConfig(Duration summaryInterval, Duration staleAfter, Duration forgetAfter,
    Duration bookAttemptTimeout, Map<String, String> endpoints) {

  public RegionsConfig {
    endpoints = Map.copyOf(endpoints);
  }

  public static RegionsConfig fromConfig(Config config) {
    Config c = config.getConfig("kvrouter.regions");
    Map<String, String> endpoints = new TreeMap<>();
    c.getConfig("endpoints").entrySet().forEach(e -> endpoints.put(stripQuotes(e.getKey()),
        String.valueOf(e.getValue().unwrapped())));
    return new RegionsConfig(c.getDuration("summary-interval"), c.getDuration("stale-after"),
        c.getDuration("forget-after"), c.getDuration("book-attempt-timeout"), endpoints);
  }

  /** A region name with a dot or a dash is a quoted key in HOCON; entrySet keeps the quotes. */
  private static String stripQuotes(String key) {
    return key.length() >= 2 && key.startsWith("\"") && key.endsWith("\"") ? key.substring(1, key.length() - 1) : key;
  }
}
