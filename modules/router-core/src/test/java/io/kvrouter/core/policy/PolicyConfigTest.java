package io.kvrouter.core.policy;

import static io.kvrouter.core.Fixtures.worker;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvrouter.core.admission.AdmissionSettings;
import io.kvrouter.core.admission.AdmissionState;
import io.kvrouter.core.error.RoutingError;
import io.kvrouter.core.error.RoutingException;
import io.kvrouter.core.selection.SelectionView;
import io.kvrouter.core.testkit.ManualClock;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The kv weights' presets, the new terms' parameters, and bad values refused with nothing changed. */
class PolicyConfigTest {
  private static void assertWeights(PolicyConfig c, KvPreset p) {
    assertThat(c.overlapCredit()).isEqualTo(p.overlapCredit());
    assertThat(c.prefillLoadScale()).isEqualTo(p.prefillLoadScale());
    assertThat(c.hostCacheHitWeight()).isEqualTo(p.hostCacheHitWeight());
    assertThat(c.diskCacheHitWeight()).isEqualTo(p.diskCacheHitWeight());
    assertThat(c.overlapCreditDecay()).isEqualTo(p.overlapCreditDecay());
    assertThat(c.decodeActiveRequestWeight()).isEqualTo(p.decodeActiveRequestWeight());
    assertThat(c.sharedCacheMultiplier()).isEqualTo(p.sharedCacheMultiplier());
    assertThat(c.loadBoundFactor()).isEqualTo(p.loadBoundFactor());
    assertThat(c.loadBoundWindow()).isEqualTo(p.loadBoundWindow());
  }

  @Test
  void theDefaultsAreTheKvrouterPresetAndDynamosPresetIsDynamosDefaults() {
    PolicyConfig defaults = PolicyConfig.defaults();
    assertThat(defaults.policy()).isEqualTo(Policy.KV);
    assertThat(defaults.preset()).isEqualTo(KvPreset.KVROUTER);
    assertWeights(defaults, KvPreset.KVROUTER);
    // lib/kv-router/src/scheduling/config.rs: credit 1, decay 0, scale 1, request weight 0, host 0.75, disk 0.25,
    // shared multiplier 0; no load bound (kvrouter's own term)
    assertThat(KvPreset.DYNAMO.parameters()).containsExactlyInAnyOrderEntriesOf(Map.of(
        "overlap_credit", "1.0", "prefill_load_scale", "1.0", "host_cache_hit_weight", "0.75",
        "disk_cache_hit_weight", "0.25", "overlap_credit_decay", "0.0", "decode_active_request_weight", "0.0",
        "shared_cache_multiplier", "0.0", "load_bound_factor", "0.0", "prefill_backlog_weight", "1.0",
        "load_bound_window", "0.0"));
  }

  @Test
  void aPresetResetsEveryWeightAndLeavesTheOtherParametersAlone() {
    PolicyConfig tuned = PolicyConfig.defaults().with("kv", Map.of("prefill_load_scale", "3", "seed", "9",
        "max_pending", "7", "overlap_credit_decay", "2"));
    PolicyConfig dynamo = tuned.with("", Map.of("preset", "dynamo"));
    assertThat(dynamo.preset()).isEqualTo(KvPreset.DYNAMO);
    assertWeights(dynamo, KvPreset.DYNAMO);
    assertThat(dynamo.seed()).isEqualTo(9L);
    assertThat(dynamo.queue().maxPending()).isEqualTo(7);
    // the call's own weights apply over its preset, in any order of the map
    PolicyConfig scaled = tuned.with("kv", Map.of("prefill_load_scale", "4", "preset", "dynamo"));
    assertThat(scaled.prefillLoadScale()).isEqualTo(4.0);
    assertThat(scaled.overlapCreditDecay()).isZero();
    // an unrelated change keeps the preset and its weights; an empty weight goes back to the preset's value
    PolicyConfig later = scaled.with("", Map.of("temperature", "0.5"));
    assertThat(later.preset()).isEqualTo(KvPreset.DYNAMO);
    assertThat(later.prefillLoadScale()).isEqualTo(4.0);
    assertThat(later.with("", Map.of("prefill_load_scale", "")).prefillLoadScale())
        .isEqualTo(KvPreset.DYNAMO.prefillLoadScale());
    // an empty preset is the default one
    PolicyConfig back = later.with("", Map.of("preset", ""));
    assertThat(back.preset()).isEqualTo(KvPreset.KVROUTER);
    assertWeights(back, KvPreset.KVROUTER);
    assertThat(back.temperature()).isEqualTo(0.5);
  }

  /** What replication and admin answers carry (policy name and every parameter as text) rebuilds the same config. */
  @Test
  void theParametersAsTextRebuildTheSameConfig() {
    for (PolicyConfig c : new PolicyConfig[] {
        PolicyConfig.defaults(),
        PolicyConfig.defaults().with("kv", Map.of("preset", "dynamo", "prefill_load_scale", "6",
            "shared_cache_multiplier", "0.5", "decode_active_request_weight", "32")),
        PolicyConfig.defaults().with("least_in_flight", Map.of("load_bound_factor", "1.5", "seed", "3"))}) {
      assertThat(PolicyConfig.defaults().with(c.policy().wireName(), c.toParameters())).isEqualTo(c);
    }
  }

  @Test
  void badValuesOfTheNewParametersAreInvalidPolicyParameters() {
    Map<String, String[]> bad = new HashMap<>();
    for (String key : new String[] {"overlap_credit_decay", "decode_active_request_weight",
        "shared_cache_multiplier", "load_bound_factor", "load_bound_window"}) {
      bad.put(key, new String[] {"-1", "NaN", "Infinity", "abc", "1e400"});
    }
    bad.put("load_bound_factor", new String[] {"-1", "NaN", "Infinity", "abc", "0.5", "0.99"});
    bad.put("preset", new String[] {"sglang", "dynamo2", "x"});
    PolicyConfig start = PolicyConfig.defaults();
    bad.forEach((key, values) -> {
      for (String value : values) {
        assertThatThrownBy(() -> start.with("", Map.of(key, value))).as("%s=%s", key, value)
            .isInstanceOfSatisfying(RoutingException.class, e -> {
              assertThat(e.error().code()).isEqualTo(RoutingError.Code.INVALID_ARGUMENT);
              assertThat(e.error().reason()).isEqualTo(RoutingError.INVALID_POLICY_PARAMETER);
              assertThat(e.error().message()).contains(key.equals("preset") ? "preset" : key);
            });
      }
    });
    assertThat(start.with("", Map.of("load_bound_factor", "0")).loadBoundFactor()).isZero();
    assertThat(start.with("", Map.of("load_bound_factor", "1")).loadBoundFactor()).isEqualTo(1.0);
    assertThatThrownBy(() -> start.with("", Map.of("preset", "sglang")))
        .hasMessageContaining("kvrouter").hasMessageContaining("dynamo");
  }

  @Test
  void aRefusedSetPolicyChangesNeitherThePolicyNorTheView() {
    AdmissionState state = new AdmissionState("m", AdmissionSettings.DEFAULTS, new ManualClock(1_000));
    state.register(worker("a"));
    state.setPolicy("kv", Map.of("preset", "dynamo", "prefill_load_scale", "2"));
    SelectionView before = state.view();
    for (Map<String, String> parameters : new Map[] {
        Map.of("overlap_credit_decay", "-0.5"), Map.of("preset", "nope"),
        Map.of("prefill_load_scale", "8", "shared_cache_multiplier", "abc"),
        Map.of("preset", "kvrouter", "load_bound_factor", "0.3")}) {
      assertThatThrownBy(() -> state.setPolicy("kv", parameters)).isInstanceOf(RoutingException.class);
      assertThat(state.view()).isSameAs(before);
    }
    assertThat(state.view().policy().preset()).isEqualTo(KvPreset.DYNAMO);
    assertThat(state.view().policy().prefillLoadScale()).isEqualTo(2.0);
  }
}
