package io.kvrouter.epp;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigValue;
import com.typesafe.config.ConfigValueType;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;

/** {@code kvrouter.epp} (reference.conf), checked at startup. */
public record EppSettings(
    boolean enabled,
    String host,
    int port,
    int healthPort,
    Optional<Tls> tls,
    Map<String, Integer> objectives,
    int fallbacks,
    long maxBodyBytes,
    Duration bookTimeout,
    Duration mutationTimeout,
    Duration renewInterval,
    long maxUsageBytes,
    int threads) {

  /** The ext_proc port's TLS: a PEM chain and key, and optionally the CA gateways' certificates must chain to. */
  public record Tls(Path certChain, Path privateKey, Optional<Path> clientCa) {
    public Tls {
      for (Path file : clientCa.map(ca -> new Path[] {certChain, privateKey, ca})
          .orElse(new Path[] {certChain, privateKey})) {
        require(Files.isReadable(file), "tls: cannot read " + file);
      }
    }
  }

  public EppSettings {
    require(port >= 0 && port <= 65_535, "port must be in [0, 65535], got " + port);
    require(healthPort >= 0 && healthPort <= 65_535, "health-port must be in [0, 65535], got " + healthPort);
    require(port == 0 || port != healthPort, "port and health-port must differ, both are " + port);
    require(fallbacks >= 0 && fallbacks <= 16, "fallbacks must be in [0, 16], got " + fallbacks);
    require(maxBodyBytes >= 1024 && maxBodyBytes <= (1L << 30), "max-body-bytes must be in [1 KiB, 1 GiB]");
    require(maxUsageBytes >= 0 && maxUsageBytes <= (64L << 20), "max-usage-bytes must be in [0, 64 MiB]");
    require(threads >= 0 && threads <= 256, "threads must be in [0, 256]");
    for (Duration d : new Duration[] {bookTimeout, mutationTimeout, renewInterval}) {
      require(!d.isNegative() && !d.isZero(), "timeouts must be positive");
    }
    objectives = Map.copyOf(objectives);
  }

  private static void require(boolean ok, String message) {
    if (!ok) {
      throw new IllegalArgumentException("kvrouter.epp: " + message);
    }
  }

  public static EppSettings fromConfig(Config root) {
    Config c = root.getConfig("kvrouter.epp");
    Config tls = c.getConfig("tls");
    Optional<Tls> secure = Optional.empty();
    if (tls.getBoolean("enabled")) {
      String ca = tls.getString("client-ca-file");
      secure = Optional.of(new Tls(Path.of(tls.getString("cert-chain-file")),
          Path.of(tls.getString("private-key-file")), ca.isBlank() ? Optional.empty() : Optional.of(Path.of(ca))));
    }
    Map<String, Integer> objectives = objectives(c.getValue("objectives"));
    EppSettings settings = new EppSettings(
        c.getBoolean("enabled"),
        c.getString("host"),
        c.getInt("port"),
        c.getInt("health-port"),
        secure,
        objectives,
        c.getInt("fallbacks"),
        c.getMemorySize("max-body-bytes").toBytes(),
        c.getDuration("book-timeout"),
        c.getDuration("mutation-timeout"),
        c.getDuration("renew-interval"),
        c.getMemorySize("max-usage-bytes").toBytes(),
        c.getInt("threads"));
    if (root.hasPath("kvrouter.admission.lease")
        && settings.renewInterval().compareTo(root.getDuration("kvrouter.admission.lease")) >= 0) {
      throw new IllegalArgumentException("kvrouter.epp.renew-interval (" + settings.renewInterval()
          + ") must be below kvrouter.admission.lease (" + root.getDuration("kvrouter.admission.lease") + ")");
    }
    return settings;
  }

  /** {@code objectives}: an object of name = priority, or (from the environment) "name=priority,name=priority". */
  static Map<String, Integer> objectives(ConfigValue value) {
    Map<String, Integer> out = new LinkedHashMap<>();
    if (value.valueType() == ConfigValueType.OBJECT) {
      for (Map.Entry<String, ConfigValue> entry : ((com.typesafe.config.ConfigObject) value).entrySet()) {
        out.put(entry.getKey(), priority(entry.getKey(), entry.getValue().unwrapped().toString()));
      }
      return out;
    }
    require(value.valueType() == ConfigValueType.STRING, "objectives must be an object or a list of name=priority, "
        + "got " + value.render());
    for (String pair : ((String) value.unwrapped()).split(",")) {
      if (pair.isBlank()) {
        continue;
      }
      int equals = pair.indexOf('=');
      require(equals > 0, "objectives: '" + pair.strip() + "' is not name=priority");
      out.put(pair.substring(0, equals).strip(), priority(pair.substring(0, equals).strip(),
          pair.substring(equals + 1)));
    }
    return out;
  }

  private static int priority(String name, String value) {
    try {
      return Integer.parseInt(value.strip());
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("kvrouter.epp: objectives." + name + " must be an integer priority, got '"
          + value.strip() + "'");
    }
  }

  /** Threads of the picker's executor. */
  public int threadCount() {
    return threads > 0 ? threads : Math.max(2, Runtime.getRuntime().availableProcessors());
  }

  /** The priority of an InferenceObjective name (unknown or absent: 0). */
  public int priority(String objective) {
    if (objective == null) {
      return 0;
    }
    return objectives.getOrDefault(objective, 0);
  }
}
