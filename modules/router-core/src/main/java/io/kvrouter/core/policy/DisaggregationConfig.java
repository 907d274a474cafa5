package io.kvrouter.core.policy;

import static io.kvrouter.core.policy.PolicyParameters.bad;
import static io.kvrouter.core.policy.PolicyParameters.invalid;
import static io.kvrouter.core.policy.PolicyParameters.nonNegative;
import static io.kvrouter.core.policy.PolicyParameters.optionalNonNegative;

import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

/**
 * Conditional disaggregation, Dynamo's three rules for when an {@code AUTO} Book of a model with prefill and decode
 * workers skips the prefill worker (its decode rank doing its own prefill, i.e. aggregated):
 *
 * <ul>
 *   <li>{@link Rule#ISL_BOUNDING} (the default): the prompt left uncached on the chosen decode rank
 *       ({@code eff_isl = prompt - decode rank's cached tokens}) is below {@code islThreshold} tokens and, when
 *       {@code ratioThreshold} is below 1, below that fraction of the prompt. {@code islThreshold} 0 (the default)
 *       never skips; Dynamo's values are 2048 and 0.7.
 *   <li>{@link Rule#PREFILL_LOAD}: the prefill rank the pair would take is busy: its prefill tokens above
 *       {@code prefillBusyThreshold} times its {@code max_num_batched_tokens}, the threshold falling back to the
 *       queue's {@code queue_threshold_frac} (Dynamo's {@code router_queue_threshold}); a config with neither is
 *       refused.
 *   <li>{@link Rule#ISL_OR_LOAD}: either of the two.
 * </ul>
 *
 * The decode-busy guard, {@code decodeBusyThreshold} (a fraction of the decode rank's {@code total_kv_blocks}; null:
 * off), vetoes a skip when the decode rank's decode blocks with this request's would exceed it.
 *
 * @param prefillBusyThreshold the threshold as set (null: unset)
 * @param effectivePrefillBusyThreshold the threshold {@link Rule#PREFILL_LOAD} applies: {@code prefillBusyThreshold},
 *     else the queue's {@code queue_threshold_frac}; null when neither is set
 */
public record DisaggregationConfig(long islThreshold, double ratioThreshold, Rule rule, Double prefillBusyThreshold,
    Double decodeBusyThreshold, Double effectivePrefillBusyThreshold) {
  public static final String POLICY = "conditional_disagg_policy";
  public static final String ISL_THRESHOLD = "conditional_disagg_isl_threshold";
  public static final String RATIO_THRESHOLD = "conditional_disagg_ratio_threshold";
  public static final String PREFILL_BUSY_THRESHOLD = "conditional_disagg_prefill_busy_threshold";
  public static final String DECODE_BUSY_THRESHOLD = "conditional_disagg_decode_busy_threshold";
  public static final DisaggregationConfig OFF = new DisaggregationConfig(0, 1.0, Rule.ISL_BOUNDING, null, null,
      null);

  /** Dynamo's conditional-disaggregation policies. */
  public enum Rule {
    ISL_BOUNDING,
    PREFILL_LOAD,
    ISL_OR_LOAD;

    public String wireName() {
      return name().toLowerCase(Locale.ROOT);
    }

    /** Whether the rule asks whether the prefill rank is busy. */
    public boolean usesPrefillLoad() {
      return this != ISL_BOUNDING;
    }

    /** Whether the rule looks at the prompt left uncached on the decode rank. */
    public boolean usesIsl() {
      return this != PREFILL_LOAD;
    }
  }

  /** Whether a pair's prefill may ever be skipped. */
  public boolean enabled() {
    return rule.usesPrefillLoad() || islThreshold > 0;
  }

  /**
   * Whether the prompt-length arm skips the prefill for a prompt of {@code promptTokens}, {@code cachedTokens} cached
   * on the decode rank (false under {@link Rule#PREFILL_LOAD}).
   */
  public boolean islBypass(int promptTokens, int cachedTokens) {
    if (!rule.usesIsl() || islThreshold <= 0 || promptTokens <= 0) {
      return false;
    }
    long effective = Math.max(0, (long) promptTokens - cachedTokens);
    return effective < islThreshold && (ratioThreshold >= 1.0 || effective < ratioThreshold * promptTokens);
  }

  /** When the prefill rank counts as busy for {@link Rule#PREFILL_LOAD}: prefill tokens above the fraction. */
  public BusyThresholds prefillBusy() {
    return new BusyThresholds(null, effectivePrefillBusyThreshold, null);
  }

  /** When the decode rank vetoes a skip: decode blocks above the fraction (nothing vetoes when the guard is off). */
  public BusyThresholds decodeBusy() {
    return new BusyThresholds(null, null, decodeBusyThreshold);
  }

  /**
   * The config of the merged parameters {@code p}; {@code queueThresholdFrac} is the queue's model-level
   * {@code queue_threshold_frac} (null: unset), the prefill-busy threshold's fallback.
   */
  static DisaggregationConfig parse(Map<String, String> p, Double queueThresholdFrac) {
    String rawRule = p.getOrDefault(POLICY, Rule.ISL_BOUNDING.wireName());
    Rule rule = null;
    for (Rule r : Rule.values()) {
      if (r.wireName().equals(rawRule.trim())) {
        rule = r;
      }
    }
    if (rule == null) {
      throw bad(POLICY, rawRule, "isl_bounding, prefill_load or isl_or_load");
    }
    String rawIsl = p.getOrDefault(ISL_THRESHOLD, "0");
    long isl;
    try {
      isl = Long.parseLong(rawIsl.trim());
    } catch (NumberFormatException e) {
      throw bad(ISL_THRESHOLD, rawIsl);
    }
    if (isl < 0) {
      throw bad(ISL_THRESHOLD, rawIsl);
    }
    String rawRatio = p.getOrDefault(RATIO_THRESHOLD, "1.0");
    double ratio = nonNegative(RATIO_THRESHOLD, rawRatio);
    if (ratio <= 0 || ratio > 1) {
      throw bad(RATIO_THRESHOLD, rawRatio);
    }
    Double prefillBusy = optionalNonNegative(PREFILL_BUSY_THRESHOLD, p.get(PREFILL_BUSY_THRESHOLD));
    Double decodeBusy = optionalNonNegative(DECODE_BUSY_THRESHOLD, p.get(DECODE_BUSY_THRESHOLD));
    Double effective = prefillBusy != null ? prefillBusy : queueThresholdFrac;
    if (rule.usesPrefillLoad() && effective == null) {
      throw invalid(POLICY + " " + rule.wireName() + " needs a prefill-busy threshold: set "
          + PREFILL_BUSY_THRESHOLD + " or " + QueueConfig.QUEUE_THRESHOLD_FRAC);
    }
    return new DisaggregationConfig(isl, ratio, rule, prefillBusy, decodeBusy, effective);
  }

  Map<String, String> parameters() {
    Map<String, String> p = new LinkedHashMap<>();
    p.put(POLICY, rule.wireName());
    p.put(ISL_THRESHOLD, Long.toString(islThreshold));
    p.put(RATIO_THRESHOLD, Double.toString(ratioThreshold));
    p.put(PREFILL_BUSY_THRESHOLD, prefillBusyThreshold == null ? "" : prefillBusyThreshold.toString());
    p.put(DECODE_BUSY_THRESHOLD, decodeBusyThreshold == null ? "" : decodeBusyThreshold.toString());
    return p;
  }
}
