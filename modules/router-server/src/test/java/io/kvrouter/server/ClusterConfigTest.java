package io.kvrouter.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

class ClusterConfigTest {
  /** application.conf with {@code overrides} on top, as Main loads it, then what ClusterConfig sets. */
  private static Config load(String overrides) {
    return ClusterConfig.apply(ConfigFactory.load(ConfigFactory.parseString(overrides)
        .withFallback(ConfigFactory.parseResourcesAnySyntax("application"))));
  }

  @Test
  void theSchedulerTicksFinerThanTheReplicationFlushInterval() {
    Config config = load("");
    // a timer fires on a tick: a coarser tick would delay every replication flush past its interval
    assertThat(config.getDuration("pekko.scheduler.tick-duration"))
        .isLessThan(config.getDuration("kvrouter.replication.interval"));
  }

  @Test
  void seedNodesBecomePekkoSeedNodesInOrderAndTurnJoinSelfOff() {
    Config config = load("kvrouter.cluster.seed-nodes = \" 127.0.0.1:25521, 10.0.0.7:25520 ,[::1]:2552\"");

    assertThat(config.getStringList("pekko.cluster.seed-nodes")).containsExactly(
        "pekko://kvrouter@127.0.0.1:25521", "pekko://kvrouter@10.0.0.7:25520", "pekko://kvrouter@[::1]:2552");
    assertThat(ClusterConfig.joinsSelf(config)).isFalse();
  }

  @Test
  void seedAddressesNameTheConfiguredSystem() {
    Config config = load("""
        kvrouter.cluster.system-name = router-eu
        kvrouter.cluster.seed-nodes = "host-a:25520"
        """);

    assertThat(config.getStringList("pekko.cluster.seed-nodes")).containsExactly("pekko://router-eu@host-a:25520");
  }

  @Test
  void withoutSeedNodesTheNodeJoinsItselfUnlessTurnedOff() {
    assertThat(load("").getStringList("pekko.cluster.seed-nodes")).isEmpty();
    assertThat(ClusterConfig.joinsSelf(load(""))).isTrue();
    assertThat(ClusterConfig.joinsSelf(load("kvrouter.cluster.join-self = off"))).isFalse();
    // seed nodes given the Pekko way (JVM flags) also keep the node from joining itself
    assertThat(ClusterConfig.joinsSelf(load("pekko.cluster.seed-nodes = [\"pekko://kvrouter@127.0.0.1:1\"]")))
        .isFalse();
  }

  @Test
  void badSeedEntriesAreRejectedNamingTheVariableAndTheEntry() {
    for (String bad : new String[] {"127.0.0.1", "127.0.0.1:x", "127.0.0.1:0", "127.0.0.1:70000", ":25520",
        "::1:25520", "pekko://kvrouter@127.0.0.1:25520"}) {
      assertThatThrownBy(() -> load("kvrouter.cluster.seed-nodes = \"127.0.0.1:25520," + bad + "\""))
          .as(bad)
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("KVROUTER_SEED_NODES")
          .hasMessageContaining("'" + bad + "'");
    }
  }

  @Test
  void productionProfileIsPekkosDefaultsWithRemovalMarginEqualToStableAfter() {
    assertTimings(load(""), "1s", "3s", "20s", "20s", "2s");
  }

  @Test
  void loopbackProfileWithOneValueOverridden() {
    assertTimings(load("""
        kvrouter.cluster.failure-detection.profile = loopback
        kvrouter.cluster.failure-detection.stable-after = 3s
        """), "250ms", "1500ms", "3s", "1s", "200ms");
  }

  /** The Pekko settings ClusterConfig wrote (the reaper runs at the heartbeat interval). */
  private static void assertTimings(Config config, String heartbeat, String pause, String stableAfter,
      String removalMargin, String shardRetry) {
    Map<String, String> expected = new LinkedHashMap<>();
    expected.put("pekko.cluster.failure-detector.heartbeat-interval", heartbeat);
    expected.put("pekko.cluster.unreachable-nodes-reaper-interval", heartbeat);
    expected.put("pekko.cluster.failure-detector.acceptable-heartbeat-pause", pause);
    expected.put("pekko.cluster.split-brain-resolver.stable-after", stableAfter);
    expected.put("pekko.cluster.down-removal-margin", removalMargin);
    expected.put("pekko.cluster.sharding.retry-interval", shardRetry);
    expected.forEach((path, value) -> assertThat(config.getDuration(path)).as(path)
        .isEqualTo(ConfigFactory.parseString("v = " + value).getDuration("v")));
  }

  @Test
  void unknownProfileAndNonPositiveValuesAreRejected() {
    assertThatThrownBy(() -> load("kvrouter.cluster.failure-detection.profile = fast"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("'fast'")
        .hasMessageContaining("loopback");
    assertThatThrownBy(() -> load("kvrouter.cluster.failure-detection.down-removal-margin = 0s"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("down-removal-margin");
  }

  @Test
  void bootstrapIsOffByDefault() {
    Config config = load("");

    assertThat(ClusterConfig.bootstraps(config)).isFalse();
    assertThat(config.getString(ClusterConfig.DISCOVERY_METHOD)).isEqualTo("pekko.discovery");
  }

  @Test
  void bootstrapSetsTheDiscoveryMethodAndTurnsJoinSelfOff() {
    Config kubernetes = load("kvrouter.cluster.bootstrap = kubernetes");
    assertThat(ClusterConfig.bootstraps(kubernetes)).isTrue();
    assertThat(ClusterConfig.joinsSelf(kubernetes)).isFalse();
    assertThat(kubernetes.getString(ClusterConfig.DISCOVERY_METHOD)).isEqualTo("kubernetes-api");
    assertThat(kubernetes.getString("pekko.discovery.kubernetes-api.pod-label-selector")).isEqualTo("app=%s");
    assertThat(kubernetes.getString("pekko.management.cluster.bootstrap.contact-point-discovery.service-name"))
        .isEqualTo("kvrouter");

    Config config = load("kvrouter.cluster.bootstrap = config");
    assertThat(config.getString(ClusterConfig.DISCOVERY_METHOD)).isEqualTo("config");
    assertThat(ClusterConfig.joinsSelf(config)).isFalse();
  }

  @Test
  void bootstrapExcludesSeedNodesAndNeedsAKnownDiscoveryMethod() {
    assertThatThrownBy(() -> load("""
        kvrouter.cluster.bootstrap = kubernetes
        kvrouter.cluster.seed-nodes = "127.0.0.1:25520"
        """))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("KVROUTER_BOOTSTRAP")
        .hasMessageContaining("KVROUTER_SEED_NODES");
    assertThatThrownBy(() -> load("kvrouter.cluster.bootstrap = kubernetes-pods"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("KVROUTER_BOOTSTRAP")
        .hasMessageContaining("'kubernetes-pods'");
  }

  @Test
  void managementAndRemotingBindWhereTheyAdvertiseUnlessToldOtherwise() {
    Config local = load("kvrouter.management.host = \"10.1.2.3\"");
    assertThat(local.getString("pekko.management.http.hostname")).isEqualTo("10.1.2.3");
    assertThat(local.getString("pekko.management.http.bind-hostname")).isEqualTo("10.1.2.3");
    assertThat(local.getString("pekko.remote.artery.bind.hostname")).isEmpty();

    Config pod = load("""
        kvrouter.management.host = "10.1.2.3"
        kvrouter.management.bind-host = "0.0.0.0"
        """);
    assertThat(pod.getString("pekko.management.http.hostname")).isEqualTo("10.1.2.3");
    assertThat(pod.getString("pekko.management.http.bind-hostname")).isEqualTo("0.0.0.0");
  }

  @Test
  void theResolverIsConfigured() {
    Config config = load("");

    assertThat(config.getString("pekko.cluster.downing-provider-class"))
        .isEqualTo("org.apache.pekko.cluster.sbr.SplitBrainResolverProvider");
    assertThat(config.getString("pekko.cluster.split-brain-resolver.active-strategy")).isEqualTo("keep-majority");
  }
}
