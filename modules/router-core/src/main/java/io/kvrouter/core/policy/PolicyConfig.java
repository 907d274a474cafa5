package io.kvrouter.core.policy;

import static io.kvrouter.core.policy.PolicyParameters.bad;
import static io.kvrouter.core.policy.PolicyParameters.nonNegative;
import static io.kvrouter.core.policy.PolicyParameters.optionalLong;
import static io.kvrouter.core.policy.PolicyParameters.optionalNonNegative;

import io.kvrouter.core.error.RoutingError;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A model's policy and its parameters: Dynamo's KV cost knobs, busy thresholds (overload filtering) and the
 * admission queue ({@link QueueConfig}: its {@code queue_*} keys, {@code max_pending} and {@code class.<name>}
 * definitions). Null thresholds are off. Parameter names on the wire are the snake_case keys of {@link #toParameters}.
 */
public record PolicyConfig(
    Policy policy,
    double temperature,
    double overlapCredit,
    double prefillLoadScale,
    double hostCacheHitWeight,
    double diskCacheHitWeight,
    Double activeDecodeBlocksThreshold,
    Long activePrefillTokensThreshold,
    Double activePrefillTokensThresholdFrac,
    QueueConfig queue,
    Long seed) {

  public static final String TEMPERATURE = "temperature";
  public static final String OVERLAP_CREDIT = "overlap_credit";
  public static final String PREFILL_LOAD_SCALE = "prefill_load_scale";
  public static final String HOST_CACHE_HIT_WEIGHT = "host_cache_hit_weight";
  public static final String DISK_CACHE_HIT_WEIGHT = "disk_cache_hit_weight";
  public static final String ACTIVE_DECODE_BLOCKS_THRESHOLD = "active_decode_blocks_threshold";
  public static final String ACTIVE_PREFILL_TOKENS_THRESHOLD = "active_prefill_tokens_threshold";
  public static final String ACTIVE_PREFILL_TOKENS_THRESHOLD_FRAC = "active_prefill_tokens_threshold_frac";
  public static final String QUEUE_THRESHOLD_FRAC = QueueConfig.QUEUE_THRESHOLD_FRAC;
  public static final String MAX_PENDING = QueueConfig.MAX_PENDING;
  public static final String SEED = "seed";

  private static final PolicyConfig DEFAULTS = new PolicyConfig(Policy.KV, 0.0, 1.0, 1.0, 0.75, 0.25, null, null,
      null, QueueConfig.parse(QueueConfig.defaultParameters()), null);

  public static PolicyConfig defaults() {
    return DEFAULTS;
  }

  /** The overload thresholds: a rank above one is filtered out of selection (OVERLOADED). */
  public BusyThresholds overload() {
    return new BusyThresholds(activePrefillTokensThreshold, activePrefillTokensThresholdFrac,
        activeDecodeBlocksThreshold);
  }

  /**
   * This config with {@code policyName} (blank keeps the current policy) and the given parameters applied over the
   * current ones; a parameter with an empty value resets it to its default. Throws INVALID_ARGUMENT and changes nothing
   * on an unknown policy, an unknown parameter or a bad value.
   */
  public PolicyConfig with(String policyName, Map<String, String> parameters) {
    Map<String, String> merged = toParameters();
    PolicyConfig defaults = defaults();
    for (Map.Entry<String, String> entry : parameters.entrySet()) {
      if (!merged.containsKey(entry.getKey()) && !QueueConfig.isClassKey(entry.getKey())) {
        throw RoutingError.invalid(RoutingError.INVALID_POLICY_PARAMETER, "unknown policy parameter '"
            + RoutingError.echo(entry.getKey()) + "'; known: " + merged.keySet()).toException();
      }
      String value = entry.getValue() == null || entry.getValue().isBlank()
          ? defaults.toParameters().get(entry.getKey()) : entry.getValue().trim();
      merged.put(entry.getKey(), value);
    }
    Policy chosen = policyName == null || policyName.isBlank() ? policy : Policy.fromWireName(policyName);
    return fromParameters(chosen, merged);
  }

  private static PolicyConfig fromParameters(Policy policy, Map<String, String> p) {
    return new PolicyConfig(
        policy,
        nonNegative(TEMPERATURE, p.get(TEMPERATURE)),
        nonNegative(OVERLAP_CREDIT, p.get(OVERLAP_CREDIT)),
        nonNegative(PREFILL_LOAD_SCALE, p.get(PREFILL_LOAD_SCALE)),
        nonNegative(HOST_CACHE_HIT_WEIGHT, p.get(HOST_CACHE_HIT_WEIGHT)),
        nonNegative(DISK_CACHE_HIT_WEIGHT, p.get(DISK_CACHE_HIT_WEIGHT)),
        optionalNonNegative(ACTIVE_DECODE_BLOCKS_THRESHOLD, p.get(ACTIVE_DECODE_BLOCKS_THRESHOLD)),
        optionalLong(ACTIVE_PREFILL_TOKENS_THRESHOLD, p.get(ACTIVE_PREFILL_TOKENS_THRESHOLD)),
        optionalNonNegative(ACTIVE_PREFILL_TOKENS_THRESHOLD_FRAC, p.get(ACTIVE_PREFILL_TOKENS_THRESHOLD_FRAC)),
        QueueConfig.parse(p),
        optionalLong(SEED, p.get(SEED)));
  }

  /** The parameters as strings, every key present ("" for an unset optional one). */
  public Map<String, String> toParameters() {
    Map<String, String> p = new LinkedHashMap<>();
    p.put(TEMPERATURE, Double.toString(temperature));
    p.put(OVERLAP_CREDIT, Double.toString(overlapCredit));
    p.put(PREFILL_LOAD_SCALE, Double.toString(prefillLoadScale));
    p.put(HOST_CACHE_HIT_WEIGHT, Double.toString(hostCacheHitWeight));
    p.put(DISK_CACHE_HIT_WEIGHT, Double.toString(diskCacheHitWeight));
    p.put(ACTIVE_DECODE_BLOCKS_THRESHOLD, text(activeDecodeBlocksThreshold));
    p.put(ACTIVE_PREFILL_TOKENS_THRESHOLD, text(activePrefillTokensThreshold));
    p.put(ACTIVE_PREFILL_TOKENS_THRESHOLD_FRAC, text(activePrefillTokensThresholdFrac));
    p.put(SEED, text(seed));
    p.putAll(queue.parameters());
    return p;
  }

  private static String text(Object value) {
    return value == null ? "" : value.toString();
  }
}
