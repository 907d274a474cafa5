package io.kvrouter.core.policy;

import io.kvrouter.core.error.RoutingError;
import java.util.List;
import java.util.Locale;
import java.util.stream.Collectors;

/**
 * A selection policy: its wire name, the {@link Scorer} that fills the candidates' costs and the {@link PickRule} that
 * chooses by them. {@link #values()} is the registry of the policies a model can run (switched at runtime with
 * Admin.SetPolicy): a new policy is one entry there.
 */
public final class Policy {
  /**
   * Chooses one candidate: pick number {@code pick} of a picker seeded with {@code seed}. A pure function of its
   * inputs, so restoring (seed, pick counter) replays the same picks; randomness comes from {@link Pickers#draw}.
   */
  @FunctionalInterface
  public interface PickRule {
    int pick(long seed, long pick, ScoredCandidates c);
  }

  public static final Policy ROUND_ROBIN = new Policy("round_robin", Scorer.NONE,
      (seed, pick, c) -> (int) Math.floorMod(pick, (long) c.size()), true);
  public static final Policy RANDOM = new Policy("random", Scorer.NONE,
      (seed, pick, c) -> Pickers.below(Pickers.draw(seed, pick, 0), c.size()), false);
  public static final Policy LEAST_IN_FLIGHT = new Policy("least_in_flight", Scorers.IN_FLIGHT,
      (seed, pick, c) -> Pickers.minCostReservoir(c, seed, pick), false);
  public static final Policy POWER_OF_TWO = new Policy("power_of_two", Scorers.IN_FLIGHT,
      (seed, pick, c) -> Pickers.powerOfTwo(c, Pickers.draw(seed, pick, 0), Pickers.draw(seed, pick, 1)), false);
  /** Dynamo's KV cost; temperature 0 picks the minimum (ties at random), above 0 a softmax over costs. */
  public static final Policy KV = new Policy("kv", Scorers.KV, (seed, pick, c) -> c.temperature() > 0
      ? Pickers.softmax(c, c.temperature(), Pickers.draw(seed, pick, 0)) : Pickers.minCostReservoir(c, seed, pick),
      false);

  private static final List<Policy> REGISTRY = List.of(ROUND_ROBIN, RANDOM, LEAST_IN_FLIGHT, POWER_OF_TWO, KV);

  private final String wireName;
  private final Scorer scorer;
  private final PickRule rule;
  private final boolean rotation;

  /**
   * @param rotation the pick counter is a global rotation (round robin): a lock-free picker claims its numbers one at
   *     a time instead of in per-thread chunks
   */
  private Policy(String wireName, Scorer scorer, PickRule rule, boolean rotation) {
    this.wireName = wireName;
    this.scorer = scorer;
    this.rule = rule;
    this.rotation = rotation;
  }

  /** Every policy, in a fixed order ({@link #index}). */
  public static List<Policy> values() {
    return REGISTRY;
  }

  /** This policy's place in {@link #values()}. */
  public int index() {
    return REGISTRY.indexOf(this);
  }

  public String wireName() {
    return wireName;
  }

  public Scorer scorer() {
    return scorer;
  }

  /** Pick number {@code pick} of a picker seeded with {@code seed}: the same inputs always give the same index. */
  public int pick(long seed, long pick, ScoredCandidates c) {
    return rule.pick(seed, pick, c);
  }

  boolean rotation() {
    return rotation;
  }

  public static Policy fromWireName(String name) {
    String wanted = name == null ? "" : name.trim().toLowerCase(Locale.ROOT).replace('-', '_');
    for (Policy policy : REGISTRY) {
      if (policy.wireName.equals(wanted)) {
        return policy;
      }
    }
    throw RoutingError.invalid(RoutingError.UNKNOWN_POLICY, "unknown policy '" + RoutingError.echo(name)
        + "'; expected one of " + REGISTRY.stream().map(Policy::wireName).collect(Collectors.joining(", ")))
        .toException();
  }

  @Override
  public String toString() {
    return wireName;
  }
}
