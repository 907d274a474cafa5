package io.kvrouter.core.policy;

import io.kvrouter.core.error.RoutingError;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.stream.Collectors;

/**
 * A named set of the kv cost's weights (the policy parameter {@code preset}): {@code kvrouter}, the router's
 * defaults, and {@code dynamo}, NVIDIA Dynamo's defaults (lib/kv-router/src/scheduling/config.rs), so a model can run
 * either by name and compare them.
 */
public enum KvPreset {
  KVROUTER("kvrouter", 1.0, 32.0, 0.75, 0.25, 0.0, 0.0, 0.0, 1.25, 0.1, 10.0),
  DYNAMO("dynamo", 1.0, 1.0, 0.75, 0.25, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0);

  /** The parameters a preset sets. */
  public static final List<String> KEYS = List.of(PolicyConfig.OVERLAP_CREDIT, PolicyConfig.PREFILL_LOAD_SCALE,
      PolicyConfig.HOST_CACHE_HIT_WEIGHT, PolicyConfig.DISK_CACHE_HIT_WEIGHT, PolicyConfig.OVERLAP_CREDIT_DECAY,
      PolicyConfig.DECODE_ACTIVE_REQUEST_WEIGHT, PolicyConfig.SHARED_CACHE_MULTIPLIER, PolicyConfig.LOAD_BOUND_FACTOR,
      PolicyConfig.PREFILL_BACKLOG_WEIGHT, PolicyConfig.LOAD_BOUND_WINDOW);

  private final String wireName;
  private final double overlapCredit;
  private final double prefillLoadScale;
  private final double hostCacheHitWeight;
  private final double diskCacheHitWeight;
  private final double overlapCreditDecay;
  private final double decodeActiveRequestWeight;
  private final double sharedCacheMultiplier;
  private final double loadBoundFactor;
  private final double prefillBacklogWeight;
  private final double loadBoundWindow;

  KvPreset(String wireName, double overlapCredit, double prefillLoadScale, double hostCacheHitWeight,
      double diskCacheHitWeight, double overlapCreditDecay, double decodeActiveRequestWeight,
      double sharedCacheMultiplier, double loadBoundFactor, double prefillBacklogWeight, double loadBoundWindow) {
    this.wireName = wireName;
    this.overlapCredit = overlapCredit;
    this.prefillLoadScale = prefillLoadScale;
    this.hostCacheHitWeight = hostCacheHitWeight;
    this.diskCacheHitWeight = diskCacheHitWeight;
    this.overlapCreditDecay = overlapCreditDecay;
    this.decodeActiveRequestWeight = decodeActiveRequestWeight;
    this.sharedCacheMultiplier = sharedCacheMultiplier;
    this.loadBoundFactor = loadBoundFactor;
    this.prefillBacklogWeight = prefillBacklogWeight;
    this.loadBoundWindow = loadBoundWindow;
  }

  public String wireName() {
    return wireName;
  }

  public double overlapCredit() {
    return overlapCredit;
  }

  public double prefillLoadScale() {
    return prefillLoadScale;
  }

  public double hostCacheHitWeight() {
    return hostCacheHitWeight;
  }

  public double diskCacheHitWeight() {
    return diskCacheHitWeight;
  }

  public double overlapCreditDecay() {
    return overlapCreditDecay;
  }

  public double decodeActiveRequestWeight() {
    return decodeActiveRequestWeight;
  }

  public double sharedCacheMultiplier() {
    return sharedCacheMultiplier;
  }

  public double loadBoundFactor() {
    return loadBoundFactor;
  }

  public double prefillBacklogWeight() {
    return prefillBacklogWeight;
  }

  /** The load bound's recent-bookings time constant, seconds (0: the bound counts in-flight requests only). */
  public double loadBoundWindow() {
    return loadBoundWindow;
  }

  /** This preset's weights as policy parameters, keyed as {@link #KEYS}. */
  public Map<String, String> parameters() {
    double[] values = {overlapCredit, prefillLoadScale, hostCacheHitWeight, diskCacheHitWeight, overlapCreditDecay,
        decodeActiveRequestWeight, sharedCacheMultiplier, loadBoundFactor,
        prefillBacklogWeight, loadBoundWindow};
    Map<String, String> p = new LinkedHashMap<>();
    for (int i = 0; i < KEYS.size(); i++) {
      p.put(KEYS.get(i), Double.toString(values[i]));
    }
    return p;
  }

  /** The preset named {@code name} (case and surrounding blanks ignored); INVALID_ARGUMENT for any other name. */
  public static KvPreset fromWireName(String name) {
    String wanted = name == null ? "" : name.trim().toLowerCase(Locale.ROOT);
    for (KvPreset preset : values()) {
      if (preset.wireName.equals(wanted)) {
        return preset;
      }
    }
    throw RoutingError.invalid(RoutingError.INVALID_POLICY_PARAMETER, "unknown kv preset '"
        + RoutingError.echo(name) + "'; expected one of "
        + Arrays.stream(values()).map(KvPreset::wireName).collect(Collectors.joining(", "))).toException();
  }
}
