package io.kvrouter.front;

import com.typesafe.config.Config;
import java.nio.file.Path;
import java.time.Duration;

/** {@code kvrouter.front} (reference.conf), checked at startup. */
public record FrontSettings(
    boolean enabled,
    String host,
    int port,
    Path modelsFile,
    Duration modelsReloadInterval,
    long maxBodyBytes,
    long refusedBodyDrainBytes,
    Duration bodyTimeout,
    int maxJsonDepth,
    int maxClientIdLength,
    int attempts,
    Duration bookTimeout,
    Duration connectTimeout,
    Duration firstTokenTimeout,
    Duration responseTimeout,
    Duration idleTimeout,
    Duration renewInterval,
    Duration mutationTimeout,
    Duration retryAfter,
    int breakerFailures,
    Duration breakerCoolDown,
    int engineMaxConnections,
    int engineMaxOpenRequests,
    Duration engineIdleTimeout,
    int tokenizerThreads,
    int tokenizerQueue,
    int maxConnections,
    Duration connectionIdleTimeout,
    int maxHeaderCount,
    long maxHeaderValueLength) {

  public FrontSettings {
    require(attempts >= 1 && attempts <= 16, "attempts must be in [1, 16], got " + attempts);
    require(port >= 0 && port <= 65_535, "port must be in [0, 65535], got " + port);
    require(maxBodyBytes >= 1024 && maxBodyBytes <= (1L << 30), "max-body-bytes must be in [1 KiB, 1 GiB]");
    require(refusedBodyDrainBytes >= 0 && refusedBodyDrainBytes <= (1L << 30),
        "refused-body-drain-bytes must be in [0, 1 GiB]");
    require(maxJsonDepth >= 4 && maxJsonDepth <= 1000, "max-json-depth must be in [4, 1000]");
    require(maxClientIdLength >= 8 && maxClientIdLength <= 200, "max-client-id-length must be in [8, 200]");
    require(breakerFailures >= 1, "breaker.failures must be at least 1");
    require(Integer.bitCount(engineMaxOpenRequests) == 1, "engine.max-open-requests must be a power of two");
    require(engineMaxConnections >= 1, "engine.max-connections must be at least 1");
    require(tokenizerThreads >= 0 && tokenizerQueue >= 1, "tokenizer-threads >= 0, tokenizer-queue >= 1");
    for (Duration d : new Duration[] {bodyTimeout, bookTimeout, connectTimeout, firstTokenTimeout, responseTimeout,
        idleTimeout, renewInterval, mutationTimeout, breakerCoolDown, connectionIdleTimeout}) {
      require(!d.isNegative() && !d.isZero(), "front timeouts must be positive");
    }
  }

  private static void require(boolean ok, String message) {
    if (!ok) {
      throw new IllegalArgumentException("kvrouter.front: " + message);
    }
  }

  public static FrontSettings fromConfig(Config root) {
    Config c = root.getConfig("kvrouter.front");
    String models = c.getString("models-file");
    FrontSettings settings = new FrontSettings(
        c.getBoolean("enabled"),
        c.getString("host"),
        c.getInt("port"),
        models.isBlank() ? null : Path.of(models),
        c.getDuration("models-reload-interval"),
        c.getMemorySize("max-body-bytes").toBytes(),
        c.getMemorySize("refused-body-drain-bytes").toBytes(),
        c.getDuration("body-timeout"),
        c.getInt("max-json-depth"),
        c.getInt("max-client-id-length"),
        c.getInt("attempts"),
        c.getDuration("book-timeout"),
        c.getDuration("connect-timeout"),
        c.getDuration("first-token-timeout"),
        c.getDuration("response-timeout"),
        c.getDuration("idle-timeout"),
        c.getDuration("renew-interval"),
        c.getDuration("mutation-timeout"),
        c.getDuration("retry-after"),
        c.getInt("breaker.failures"),
        c.getDuration("breaker.cool-down"),
        c.getInt("engine.max-connections"),
        c.getInt("engine.max-open-requests"),
        c.getDuration("engine.idle-timeout"),
        c.getInt("tokenizer-threads"),
        c.getInt("tokenizer-queue"),
        c.getInt("max-connections"),
        c.getDuration("connection-idle-timeout"),
        c.getInt("max-header-count"),
        c.getMemorySize("max-header-value-length").toBytes());
    if (root.hasPath("kvrouter.admission.lease")
        && settings.renewInterval().compareTo(root.getDuration("kvrouter.admission.lease")) >= 0) {
      throw new IllegalArgumentException("kvrouter.front.renew-interval (" + settings.renewInterval()
          + ") must be below kvrouter.admission.lease (" + root.getDuration("kvrouter.admission.lease") + ")");
    }
    return settings;
  }

  /** Threads of the tokenizer pool. */
  public int tokenizerThreadCount() {
    return tokenizerThreads > 0 ? tokenizerThreads : Math.max(1, Runtime.getRuntime().availableProcessors());
  }

  public long retryAfterSeconds() {
    return Math.max(1, (retryAfter.toMillis() + 999) / 1000);
  }
}
