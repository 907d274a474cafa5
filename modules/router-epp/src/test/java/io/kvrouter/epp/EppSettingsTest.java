package io.kvrouter.epp;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** {@code kvrouter.epp} as an operator writes it: in HOCON, or from the environment's strings. */
class EppSettingsTest {
  private static EppSettings settings(String hocon) {
    Config config = ConfigFactory.parseString(hocon).withFallback(ConfigFactory.defaultReference()).resolve();
    return EppSettings.fromConfig(config);
  }

  @Test
  void objectivesComeAsAnObjectOrAsNamePriorityPairsAndUnknownOnesAreZero() {
    EppSettings object = settings("kvrouter.epp.objectives { critical = 100, sheddable = -100 }");
    assertThat(object.objectives()).isEqualTo(Map.of("critical", 100, "sheddable", -100));
    EppSettings pairs = settings("kvrouter.epp.objectives = \"critical=100, sheddable = -100,\"");
    assertThat(pairs.objectives()).isEqualTo(object.objectives());
    assertThat(pairs.priority("critical")).isEqualTo(100);
    assertThat(pairs.priority("standard")).isZero();
    assertThat(pairs.priority(null)).isZero();
  }

  @Test
  void badSettingsAreRefusedAtStartupNamingTheKey() {
    assertThatThrownBy(() -> settings("kvrouter.epp.objectives = \"critical=high\""))
        .hasMessageContaining("objectives.critical");
    assertThatThrownBy(() -> settings("kvrouter.epp.objectives = \"critical\""))
        .hasMessageContaining("name=priority");
    assertThatThrownBy(() -> settings("kvrouter.epp { port = 9002, health-port = 9002 }"))
        .hasMessageContaining("differ");
    assertThatThrownBy(() -> settings("kvrouter.epp.fallbacks = 17")).hasMessageContaining("fallbacks");
    assertThatThrownBy(() -> settings("kvrouter.epp.renew-interval = 400s\nkvrouter.admission.lease = 300s"))
        .hasMessageContaining("renew-interval");
    assertThatThrownBy(() -> settings("kvrouter.epp.tls { enabled = on, cert-chain-file = /nonexistent/chain.pem, "
        + "private-key-file = /nonexistent/key.pem }")).hasMessageContaining("cannot read");
  }

  @Test
  void theDefaultsAreGiesPorts() {
    EppSettings defaults = settings("");
    assertThat(defaults.port()).isEqualTo(9002);
    assertThat(defaults.healthPort()).isEqualTo(9003);
    assertThat(defaults.fallbacks()).isZero();
    assertThat(defaults.tls()).isEmpty();
  }
}
