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
 * definitions) and session affinity ({@link SessionConfig}: its {@code session_*} keys). Null thresholds are off.
 * Parameter names on the wire are the snake_case keys of {@link #toParameters}.
 *
 * <p>The kv cost's weights ({@link KvPreset#KEYS}) come from a named {@link KvPreset}: {@code kvrouter} (the
 * defaults) or {@code dynamo} (Dynamo's own defaults). Setting {@code preset} resets every weight to that preset's
 * value before the call's other parameters apply; an empty value resets a weight to its preset's value.
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
    Long seed,
    // Dynamo's newer kv cost terms and the preset the kv weights start from (KvPreset)
    double overlapCreditDecay,
    double decodeActiveRequestWeight,
    double sharedCacheMultiplier,
    double loadBoundFactor,
    double prefillBacklogWeight,
    KvPreset preset,
    // session affinity (SessionConfig: its session_* keys)
    SessionConfig session,
    // conditional disaggregation (DisaggregationConfig: its conditional_disagg_* keys)
    DisaggregationConfig disaggregation,
    // the load bound's recent-bookings time constant in seconds (0: in-flight requests only); last, as components
    // are only appended (CompactRecordsModule)
    double loadBoundWindow) {

  public PolicyConfig {
    session = session == null ? SessionConfig.DEFAULTS : session;
    disaggregation = disaggregation == null ? DisaggregationConfig.OFF : disaggregation;
  }

  /** A config whose load bound counts in-flight requests only. */
  public PolicyConfig(Policy policy, double temperature, double overlapCredit, double prefillLoadScale,
      double hostCacheHitWeight, double diskCacheHitWeight, Double activeDecodeBlocksThreshold,
      Long activePrefillTokensThreshold, Double activePrefillTokensThresholdFrac, QueueConfig queue, Long seed,
      double overlapCreditDecay, double decodeActiveRequestWeight, double sharedCacheMultiplier,
      double loadBoundFactor, double prefillBacklogWeight, KvPreset preset, SessionConfig session,
      DisaggregationConfig disaggregation) {
    this(policy, temperature, overlapCredit, prefillLoadScale, hostCacheHitWeight, diskCacheHitWeight,
        activeDecodeBlocksThreshold, activePrefillTokensThreshold, activePrefillTokensThresholdFrac, queue, seed,
        overlapCreditDecay, decodeActiveRequestWeight, sharedCacheMultiplier, loadBoundFactor, prefillBacklogWeight,
        preset, session, disaggregation, 0);
  }

  /** A config without conditional disaggregation. */
  public PolicyConfig(Policy policy, double temperature, double overlapCredit, double prefillLoadScale,
      double hostCacheHitWeight, double diskCacheHitWeight, Double activeDecodeBlocksThreshold,
      Long activePrefillTokensThreshold, Double activePrefillTokensThresholdFrac, QueueConfig queue, Long seed,
      double overlapCreditDecay, double decodeActiveRequestWeight, double sharedCacheMultiplier,
      double loadBoundFactor, double prefillBacklogWeight, KvPreset preset, SessionConfig session) {
    this(policy, temperature, overlapCredit, prefillLoadScale, hostCacheHitWeight, diskCacheHitWeight,
        activeDecodeBlocksThreshold, activePrefillTokensThreshold, activePrefillTokensThresholdFrac, queue, seed,
        overlapCreditDecay, decodeActiveRequestWeight, sharedCacheMultiplier, loadBoundFactor, prefillBacklogWeight,
        preset, session, DisaggregationConfig.OFF);
  }

  /** A config with the default session affinity and without conditional disaggregation. */
  public PolicyConfig(Policy policy, double temperature, double overlapCredit, double prefillLoadScale,
      double hostCacheHitWeight, double diskCacheHitWeight, Double activeDecodeBlocksThreshold,
      Long activePrefillTokensThreshold, Double activePrefillTokensThresholdFrac, QueueConfig queue, Long seed,
      double overlapCreditDecay, double decodeActiveRequestWeight, double sharedCacheMultiplier,
      double loadBoundFactor, double prefillBacklogWeight, KvPreset preset) {
    this(policy, temperature, overlapCredit, prefillLoadScale, hostCacheHitWeight, diskCacheHitWeight,
        activeDecodeBlocksThreshold, activePrefillTokensThreshold, activePrefillTokensThresholdFrac, queue, seed,
        overlapCreditDecay, decodeActiveRequestWeight, sharedCacheMultiplier, loadBoundFactor, prefillBacklogWeight,
        preset, SessionConfig.DEFAULTS, DisaggregationConfig.OFF);
  }

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
  public static final String OVERLAP_CREDIT_DECAY = "overlap_credit_decay";
  public static final String DECODE_ACTIVE_REQUEST_WEIGHT = "decode_active_request_weight";
  public static final String SHARED_CACHE_MULTIPLIER = "shared_cache_multiplier";
  public static final String LOAD_BOUND_FACTOR = "load_bound_factor";
  public static final String PREFILL_BACKLOG_WEIGHT = "prefill_backlog_weight";
  public static final String LOAD_BOUND_WINDOW = "load_bound_window";
  public static final String PRESET = "preset";

  private static final PolicyConfig DEFAULTS = defaultsOf(KvPreset.KVROUTER);

  private static PolicyConfig defaultsOf(KvPreset kv) {
    return new PolicyConfig(Policy.KV, 0.0, kv.overlapCredit(), kv.prefillLoadScale(), kv.hostCacheHitWeight(),
        kv.diskCacheHitWeight(), null, null, null, QueueConfig.parse(QueueConfig.defaultParameters()), null,
        kv.overlapCreditDecay(), kv.decodeActiveRequestWeight(), kv.sharedCacheMultiplier(), kv.loadBoundFactor(),
        kv.prefillBacklogWeight(), kv, SessionConfig.DEFAULTS, DisaggregationConfig.OFF, kv.loadBoundWindow());
  }

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
    for (String key : parameters.keySet()) {
      if (!merged.containsKey(key) && !QueueConfig.isClassKey(key)) {
        throw RoutingError.invalid(RoutingError.INVALID_POLICY_PARAMETER, "unknown policy parameter '"
            + RoutingError.echo(key) + "'; known: " + merged.keySet()).toException();
      }
    }
    // a preset named in this call replaces every kv weight first; the call's own values then apply over it
    KvPreset base = preset;
    String presetName = parameters.get(PRESET);
    if (presetName != null) {
      base = presetName.isBlank() ? KvPreset.KVROUTER : KvPreset.fromWireName(presetName);
      merged.put(PRESET, base.wireName());
      merged.putAll(base.parameters());
    }
    Map<String, String> defaults = defaults().toParameters();
    defaults.putAll(base.parameters());
    for (Map.Entry<String, String> entry : parameters.entrySet()) {
      if (entry.getKey().equals(PRESET)) {
        continue;
      }
      String value = entry.getValue() == null || entry.getValue().isBlank()
          ? defaults.get(entry.getKey()) : entry.getValue().trim();
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
        optionalLong(SEED, p.get(SEED)),
        nonNegative(OVERLAP_CREDIT_DECAY, p.get(OVERLAP_CREDIT_DECAY)),
        nonNegative(DECODE_ACTIVE_REQUEST_WEIGHT, p.get(DECODE_ACTIVE_REQUEST_WEIGHT)),
        nonNegative(SHARED_CACHE_MULTIPLIER, p.get(SHARED_CACHE_MULTIPLIER)),
        offOrAtLeastOne(LOAD_BOUND_FACTOR, p.get(LOAD_BOUND_FACTOR)),
        nonNegative(PREFILL_BACKLOG_WEIGHT, p.get(PREFILL_BACKLOG_WEIGHT)),
        KvPreset.fromWireName(p.get(PRESET)),
        SessionConfig.parse(p),
        DisaggregationConfig.parse(p, optionalNonNegative(QUEUE_THRESHOLD_FRAC, p.get(QUEUE_THRESHOLD_FRAC))),
        nonNegative(LOAD_BOUND_WINDOW, p.get(LOAD_BOUND_WINDOW)));
  }

  /** {@link #loadBoundWindow} in milliseconds (0: off). */
  public long loadBoundWindowMillis() {
    return Math.round(loadBoundWindow * 1000);
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
    p.put(OVERLAP_CREDIT_DECAY, Double.toString(overlapCreditDecay));
    p.put(DECODE_ACTIVE_REQUEST_WEIGHT, Double.toString(decodeActiveRequestWeight));
    p.put(SHARED_CACHE_MULTIPLIER, Double.toString(sharedCacheMultiplier));
    p.put(LOAD_BOUND_FACTOR, Double.toString(loadBoundFactor));
    p.put(PREFILL_BACKLOG_WEIGHT, Double.toString(prefillBacklogWeight));
    p.put(LOAD_BOUND_WINDOW, Double.toString(loadBoundWindow));
    p.put(PRESET, preset.wireName());
    p.putAll(session.parameters());
    p.putAll(disaggregation.parameters());
    return p;
  }

  /** 0 (off) or a finite value of at least 1. */
  private static double offOrAtLeastOne(String key, String raw) {
    double value = nonNegative(key, raw);
    if (value != 0 && value < 1) {
      throw bad(key, raw);
    }
    return value;
  }

  private static String text(Object value) {
    return value == null ? "" : value.toString();
  }
}
