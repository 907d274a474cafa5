package io.kvrouter.cluster;

import io.kvrouter.cluster.regions.RegionsConfig;
import static org.assertj.core.api.Assertions.assertThat;

import com.typesafe.config.ConfigFactory;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;

class RegionsConfigTest {
  @Test
  void defaultsAndEndpointOverridesByRegionName() {
    RegionsConfig defaults = RegionsConfig.fromConfig(ConfigFactory.defaultReference());
    assertThat(defaults.summaryInterval()).isEqualTo(Duration.ofMillis(500));
    assertThat(defaults.staleAfter()).isEqualTo(Duration.ofSeconds(2));
    assertThat(defaults.endpoints()).isEmpty();

    RegionsConfig configured = RegionsConfig.fromConfig(ConfigFactory.parseString("""
        kvrouter.regions.endpoints {
          eu = "router.eu.example:50051"
          us-east = "10.0.0.1:50051"
          "ap.south" = "10.0.0.2:50051"
        }
        """).withFallback(ConfigFactory.defaultReference()));
    assertThat(configured.endpoints()).isEqualTo(Map.of("eu", "router.eu.example:50051",
        "us-east", "10.0.0.1:50051", "ap.south", "10.0.0.2:50051"));
  }
}
