package io.kvrouter.core.policy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvrouter.core.error.RoutingError;
import io.kvrouter.core.error.RoutingException;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The admission queue's parameters: parsing, inheritance, class resolution and the refusals of bad values. */
class QueueConfigTest {
  private static PolicyConfig with(String... keyValues) {
    Map<String, String> parameters = new LinkedHashMap<>();
    for (int i = 0; i < keyValues.length; i += 2) {
      parameters.put(keyValues[i], keyValues[i + 1]);
    }
    return PolicyConfig.defaults().with("", parameters);
  }

  @Test
  void queueingIsOffByDefaultAndOnOnceAThresholdIsSet() {
    assertThat(PolicyConfig.defaults().queue().enabled()).isFalse();
    assertThat(PolicyConfig.defaults().queue().maxPending()).isEqualTo(1024);
    assertThat(with("queue_threshold_frac", "0.9").queue().enabled()).isTrue();
    assertThat(with("queue_prefill_tokens_threshold", "4096").queue().enabled()).isTrue();
    assertThat(with("queue_decode_blocks_threshold_frac", "0.8").queue().enabled()).isTrue();
    assertThat(with("queue_busy_worker_ratio", "0.5").queue().enabled()).as("a ratio alone is no threshold")
        .isFalse();
    assertThat(with("class.gold", "threshold_frac=0.5").queue().enabled()).as("one class queues").isTrue();
  }

  @Test
  void aClassInheritsWhatItDoesNotSetAndFollowsLaterModelLevelChanges() {
    PolicyConfig config = with("queue_threshold_frac", "0.5", "queue_requests_per_worker", "8",
        "class.gold", "quantum=512,queue_policy=wspt", "class.bronze", "threshold_frac=off,requests_per_worker=off");
    PolicyClass gold = config.queue().named("gold");
    assertThat(gold.busy()).isEqualTo(new BusyThresholds(null, 0.5, null));
    assertThat(gold.order()).isEqualTo(QueueOrder.WSPT);
    assertThat(gold.quantum()).isEqualTo(512);
    assertThat(gold.requestsPerWorker()).isEqualTo(8);
    PolicyClass bronze = config.queue().named("bronze");
    assertThat(bronze.queueingEnabled()).as("turned off").isFalse();
    assertThat(bronze.requestsPerWorker()).isNull();
    assertThat(bronze.quantum()).isEqualTo(1024);
    PolicyConfig later = config.with("", Map.of("queue_threshold_frac", "0.75"));
    assertThat(later.queue().named("gold").busy().prefillFrac()).isEqualTo(0.75);
    assertThat(later.toParameters()).containsEntry("class.gold", "quantum=512,queue_policy=wspt")
        .containsEntry("queue_threshold_frac", "0.75");
    PolicyConfig removed = later.with("", Map.of("class.gold", ""));
    assertThat(removed.queue().named("gold")).isNull();
    assertThat(removed.toParameters()).doesNotContainKey("class.gold").containsKey("class.bronze");
    assertThat(removed.queue().all()).extracting(PolicyClass::name).containsExactly("default", "bronze");
  }

  @Test
  void theDefaultClassCanBeConfiguredButTakesNoFamilyOrBucket() {
    assertThat(with("class.default", "quantum=64,threshold_frac=0.3").queue().defaultClass().quantum())
        .isEqualTo(64);
    assertRefused(() -> with("class.default", "family=x"), "class.default");
  }

  @Test
  void resolutionPrefersAnExplicitNameThenFamilyAndBucketThenFamilyThenBucketThenDefault() {
    QueueConfig q = with("queue_isl_buckets", "0:short,2048:long", "class.t-long", "family=t,bucket=long",
        "class.t", "family=t", "class.any-long", "bucket=long", "class.vip", "quantum=1").queue();
    assertThat(q.resolve("t", 5000).name()).isEqualTo("t-long");
    assertThat(q.resolve("t", 100).name()).isEqualTo("t");
    assertThat(q.resolve("", 2048).name()).isEqualTo("any-long");
    assertThat(q.resolve("unknown", 2047).name()).isEqualTo("default");
    assertThat(q.resolve("vip", 99999).name()).isEqualTo("vip");
    assertThat(q.bucketOf(0)).isEqualTo("short");
    assertThat(q.bucketOf(2048)).isEqualTo("long");
    assertThat(q.needsCachedTokens()).as("buckets need the uncached size").isTrue();
    assertThat(with("queue_threshold_frac", "1").queue().needsCachedTokens()).isFalse();
    assertThat(with("class.w", "queue_policy=wspt").queue().needsCachedTokens()).isTrue();
  }

  @Test
  void badValuesAreRefusedNamingTheParameter() {
    assertRefused(() -> with("queue_policy", "lifo"), "queue_policy");
    assertRefused(() -> with("queue_busy_worker_ratio", "0"), "queue_busy_worker_ratio");
    assertRefused(() -> with("queue_busy_worker_ratio", "1.5"), "queue_busy_worker_ratio");
    assertRefused(() -> with("queue_quantum", "0"), "queue_quantum");
    assertRefused(() -> with("queue_requests_per_worker", "-1"), "queue_requests_per_worker");
    assertRefused(() -> with("queue_aging_ms", "soon"), "queue_aging_ms");
    assertRefused(() -> with("queue_isl_buckets", "10:a"), "queue_isl_buckets"); // the first floor is 0
    assertRefused(() -> with("queue_isl_buckets", "0:a,5:b,5:c"), "queue_isl_buckets");
    assertRefused(() -> with("queue_isl_buckets", "0:a,9:a"), "queue_isl_buckets");
    assertRefused(() -> with("class.x", "colour=blue"), "colour");
    assertRefused(() -> with("class.x", "quantum"), "quantum");
    assertRefused(() -> with("class.x", "quantum=1,quantum=2"), "quantum");
    assertRefused(() -> with("class.x", "bucket=long"), "bucket 'long'");
    assertRefused(() -> with("class.bad name", "quantum=1"), "class.bad name");
    assertRefused(() -> with("class.x", "family=t", "class.y", "family=t"), "both take family 't'");
    Map<String, String> many = new HashMap<>();
    for (int i = 0; i <= QueueConfig.MAX_CLASSES; i++) {
      many.put("class.c" + i, "quantum=1");
    }
    assertThatThrownBy(() -> PolicyConfig.defaults().with("", many)).isInstanceOf(RoutingException.class)
        .hasMessageContaining("at most 16");
    assertRefused(() -> with("queue_unknown", "1"), "queue_unknown");
  }

  @Test
  void overloadAndQueueThresholdsAreOneRuleWithTheirOwnValues() {
    var worker = new io.kvrouter.core.model.WorkerConfig("w", 0, 1, 8192, 1000, 16, "", "r",
        io.kvrouter.core.model.WorkerRole.AGGREGATED);
    BusyThresholds t = new BusyThresholds(100L, 0.5, 0.8);
    assertThat(t.exceeded(worker, 101, 0)).isTrue();
    assertThat(t.exceeded(worker, 100, 0)).isFalse();
    assertThat(new BusyThresholds(null, 0.5, null).exceeded(worker, 4097, 0)).isTrue();
    assertThat(new BusyThresholds(null, 0.5, null).exceeded(worker, 4096, 0)).isFalse();
    assertThat(new BusyThresholds(null, null, 0.8).exceeded(worker, 0, 801)).isTrue();
    assertThat(BusyThresholds.OFF.exceeded(worker, Long.MAX_VALUE, Long.MAX_VALUE)).isFalse();
    assertThat(with("active_prefill_tokens_threshold", "7").overload().prefillTokens()).isEqualTo(7);
  }

  private static void assertRefused(Runnable call, String named) {
    assertThatThrownBy(call::run).isInstanceOfSatisfying(RoutingException.class, e -> {
      assertThat(e.error().reason()).isEqualTo(RoutingError.INVALID_POLICY_PARAMETER);
      assertThat(e.error().message()).contains(named);
    });
  }
}
