package io.kvrouter.server;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import com.typesafe.config.ConfigValueFactory;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Turns {@code kvrouter.cluster} (cluster.conf) into the Pekko settings it stands for: the seed nodes from
 * {@code seed-nodes} ({@code KVROUTER_SEED_NODES}), cluster bootstrap's discovery method from {@code bootstrap}
 * ({@code KVROUTER_BOOTSTRAP}) and the failure detector, split-brain resolver and removal margin
 * from the chosen {@code failure-detection} profile with its per-value overrides.
 */
public final class ClusterConfig {
  static final String PATH = "kvrouter.cluster";
  static final String SEED_NODES_VARIABLE = "KVROUTER_SEED_NODES";
  static final String BOOTSTRAP_VARIABLE = "KVROUTER_BOOTSTRAP";
  static final String BOOTSTRAP_OFF = "off";
  /** KVROUTER_BOOTSTRAP's short name for Pekko Discovery's Kubernetes API method. */
  static final String BOOTSTRAP_KUBERNETES = "kubernetes";
  static final String DISCOVERY_METHOD = "pekko.management.cluster.bootstrap.contact-point-discovery.discovery-method";

  private ClusterConfig() {}

  /** {@code config} (resolved) with the Pekko keys that {@code kvrouter.cluster} governs set from it. */
  public static Config apply(Config config) {
    Config cluster = config.getConfig(PATH);
    Map<String, Object> pekko = new java.util.HashMap<>(failureDetection(cluster.getConfig("failure-detection")));
    List<String> seeds = seedNodes(cluster.getString("system-name"), cluster.getString("seed-nodes"));
    if (!seeds.isEmpty()) {
      pekko.put("pekko.cluster.seed-nodes", ConfigValueFactory.fromIterable(seeds));
    }
    bootstrapMethod(cluster).ifPresent(method -> {
      if (!seeds.isEmpty() || !config.getList("pekko.cluster.seed-nodes").isEmpty()) {
        throw new IllegalArgumentException(BOOTSTRAP_VARIABLE + "=" + method + " (" + PATH + ".bootstrap) and "
            + SEED_NODES_VARIABLE + " (" + PATH + ".seed-nodes) exclude each other: cluster bootstrap finds the "
            + "peers itself");
      }
      String discovery = method.equals(BOOTSTRAP_KUBERNETES) ? "kubernetes-api" : method;
      if (!config.hasPath("pekko.discovery." + discovery + ".class")) {
        throw new IllegalArgumentException(BOOTSTRAP_VARIABLE + " (" + PATH + ".bootstrap): unknown discovery method '"
            + method + "'; known: " + BOOTSTRAP_OFF + ", " + BOOTSTRAP_KUBERNETES + " or one configured under "
            + "pekko.discovery (" + config.getConfig("pekko.discovery").root().keySet() + ")");
      }
      pekko.put(DISCOVERY_METHOD, discovery);
    });
    return ConfigFactory.parseMap(pekko).withFallback(config);
  }

  /** True when cluster bootstrap forms or joins the cluster ({@code bootstrap} names a discovery method). */
  public static boolean bootstraps(Config config) {
    return bootstrapMethod(config.getConfig(PATH)).isPresent();
  }

  private static Optional<String> bootstrapMethod(Config cluster) {
    String method = cluster.getString("bootstrap").strip();
    return method.isEmpty() || method.equals(BOOTSTRAP_OFF) ? Optional.empty() : Optional.of(method);
  }

  /**
   * True when the node forms a cluster of its own: {@code join-self} is on, no seed node is configured and cluster
   * bootstrap is off.
   */
  public static boolean joinsSelf(Config config) {
    return config.getBoolean(PATH + ".join-self") && config.getList("pekko.cluster.seed-nodes").isEmpty()
        && !bootstraps(config);
  }

  /**
   * Artery addresses of the seed nodes in {@code spec} ("host:port,host:port", blanks ignored; an IPv6 host in
   * brackets), in order. Empty when {@code spec} is blank.
   *
   * @throws IllegalArgumentException naming the variable and the bad entry
   */
  static List<String> seedNodes(String systemName, String spec) {
    List<String> addresses = new ArrayList<>();
    for (String entry : spec.split(",")) {
      String seed = entry.strip();
      if (seed.isEmpty()) {
        continue;
      }
      int colon = seed.lastIndexOf(':');
      String host = colon < 0 ? "" : seed.substring(0, colon);
      boolean bracketed = host.startsWith("[") && host.endsWith("]") && host.length() > 2;
      if (host.isEmpty() || (host.contains(":") && !bracketed) || host.contains("@") || host.contains("/")) {
        throw badSeed(seed, "expected host:port (an IPv6 host in brackets: [::1]:25520)");
      }
      int port;
      try {
        port = Integer.parseInt(seed.substring(colon + 1));
      } catch (NumberFormatException e) {
        throw badSeed(seed, "the port is not a number");
      }
      if (port < 1 || port > 65535) {
        throw badSeed(seed, "the port is outside 1-65535");
      }
      addresses.add("pekko://" + systemName + "@" + host + ":" + port);
    }
    return addresses;
  }

  private static IllegalArgumentException badSeed(String seed, String why) {
    return new IllegalArgumentException(SEED_NODES_VARIABLE + " (" + PATH + ".seed-nodes): bad entry '" + seed
        + "': " + why);
  }

  /** The Pekko keys of the failure-detection profile, each value overridden when set beside the profile. */
  private static Map<String, Object> failureDetection(Config detection) {
    String name = detection.getString("profile");
    if (!detection.hasPath("profiles." + name)) {
      throw new IllegalArgumentException("KVROUTER_FAILURE_PROFILE (" + PATH + ".failure-detection.profile): unknown "
          + "profile '" + name + "'; known: " + detection.getConfig("profiles").root().keySet());
    }
    Config values = detection.withoutPath("profiles").withoutPath("profile")
        .withFallback(detection.getConfig("profiles." + name));
    String heartbeat = millis(values, "heartbeat-interval");
    return Map.of(
        "pekko.cluster.failure-detector.heartbeat-interval", heartbeat,
        "pekko.cluster.unreachable-nodes-reaper-interval", heartbeat,
        "pekko.cluster.failure-detector.acceptable-heartbeat-pause", millis(values, "acceptable-heartbeat-pause"),
        "pekko.cluster.split-brain-resolver.stable-after", millis(values, "stable-after"),
        "pekko.cluster.down-removal-margin", millis(values, "down-removal-margin"),
        "pekko.cluster.sharding.retry-interval", millis(values, "shard-retry-interval"));
  }

  private static String millis(Config values, String key) {
    long millis = values.getDuration(key).toMillis();
    if (millis <= 0) {
      throw new IllegalArgumentException(PATH + ".failure-detection." + key + " must be positive, got "
          + values.getValue(key).unwrapped());
    }
    return millis + "ms";
  }
}
