package io.kvrouter.core.policy;

import static io.kvrouter.core.policy.PolicyParameters.bad;
import static io.kvrouter.core.policy.PolicyParameters.nonNegative;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Conditional disaggregation (Dynamo's {@code isl_bounding} policy): a Book of a model with prefill and decode
 * workers skips the prefill worker, the decode rank doing its own prefill, when the prompt left uncached on the chosen
 * decode rank ({@code eff_isl = prompt - decode rank's cached tokens}) is below {@code islThreshold} tokens and, when
 * {@code ratioThreshold} is below 1, below that fraction of the prompt. {@code islThreshold} 0 (the default) always
 * disaggregates; Dynamo's values are 2048 and 0.7.
 */
public record DisaggregationConfig(long islThreshold, double ratioThreshold) {
  public static final String ISL_THRESHOLD = "conditional_disagg_isl_threshold";
  public static final String RATIO_THRESHOLD = "conditional_disagg_ratio_threshold";
  public static final DisaggregationConfig OFF = new DisaggregationConfig(0, 1.0);

  /** Whether a pair's prefill is skipped for a prompt of {@code promptTokens}, {@code cachedTokens} cached on decode. */
  public boolean bypass(int promptTokens, int cachedTokens) {
    if (islThreshold <= 0 || promptTokens <= 0) {
      return false;
    }
    long effective = Math.max(0, (long) promptTokens - cachedTokens);
    return effective < islThreshold && (ratioThreshold >= 1.0 || effective < ratioThreshold * promptTokens);
  }

  static DisaggregationConfig parse(Map<String, String> p) {
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
    return new DisaggregationConfig(isl, ratio);
  }

  Map<String, String> parameters() {
    Map<String, String> p = new LinkedHashMap<>();
    p.put(ISL_THRESHOLD, Long.toString(islThreshold));
    p.put(RATIO_THRESHOLD, Double.toString(ratioThreshold));
    return p;
  }
}
