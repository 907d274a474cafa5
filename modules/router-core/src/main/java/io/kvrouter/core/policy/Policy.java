package io.kvrouter.core.policy;

import io.kvrouter.core.error.RoutingError;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.ServiceLoader;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Function;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

/**
 * A selection policy: its wire name, the {@link Scorer} that fills the candidates' costs and how it picks by them.
 * {@link #values()} is the registry of the policies a model can run (switched at runtime with Admin.SetPolicy): the
 * built-ins, each a {@link PickRule} its lock-free picker applies, then the custom policies {@link PolicyProvider}s
 * add, each with its own picker.
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

  /** At most this many policies in all (each may label two timers per model): built-ins and custom ones. */
  public static final int MAX_POLICIES = 64;

  public static final Policy ROUND_ROBIN = new Policy(0, "round_robin", Scorer.NONE,
      (seed, pick, c) -> (int) Math.floorMod(pick, (long) c.size()), true, null);
  public static final Policy RANDOM = new Policy(1, "random", Scorer.NONE,
      (seed, pick, c) -> Pickers.below(Pickers.draw(seed, pick, 0), c.size()), false, null);
  public static final Policy LEAST_IN_FLIGHT = new Policy(2, "least_in_flight", Scorers.IN_FLIGHT,
      (seed, pick, c) -> Pickers.minCostReservoir(c, seed, pick), false, null);
  public static final Policy POWER_OF_TWO = new Policy(3, "power_of_two", Scorers.IN_FLIGHT,
      (seed, pick, c) -> Pickers.powerOfTwo(c, Pickers.draw(seed, pick, 0), Pickers.draw(seed, pick, 1)), false,
      null);
  /** Dynamo's KV cost; temperature 0 picks the minimum (ties at random), above 0 a softmax over costs. */
  public static final Policy KV = new Policy(4, "kv", Scorers.KV, (seed, pick, c) -> c.temperature() > 0
      ? Pickers.softmax(c, c.temperature(), Pickers.draw(seed, pick, 0)) : Pickers.minCostReservoir(c, seed, pick),
      false, null);

  private static final List<Policy> BUILT_IN = List.of(ROUND_ROBIN, RANDOM, LEAST_IN_FLIGHT, POWER_OF_TWO, KV);
  private static final Pattern WIRE_NAME = Pattern.compile("[a-z][a-z0-9_]{0,63}");

  private final int index;
  private final String wireName;
  private final Scorer scorer;
  private final PickRule rule;
  private final boolean rotation;
  private final Function<PickerState, Picker> pickers;

  /**
   * @param rotation the pick counter is a global rotation (round robin): a lock-free picker claims its numbers one at
   *     a time instead of in per-thread chunks
   * @param pickers a custom policy's picker factory; null for a built-in, whose picker applies {@code rule}
   */
  private Policy(int index, String wireName, Scorer scorer, PickRule rule, boolean rotation,
      Function<PickerState, Picker> pickers) {
    this.index = index;
    this.wireName = wireName;
    this.scorer = scorer;
    this.rule = rule;
    this.rotation = rotation;
    this.pickers = pickers;
  }

  /** Every policy, in a fixed order ({@link #index}): the built-ins, then custom ones by wire name. */
  public static List<Policy> values() {
    return Registry.ALL;
  }

  /** The built-in policies. */
  public static List<Policy> builtIns() {
    return BUILT_IN;
  }

  /** This policy's place in {@link #values()}. */
  public int index() {
    return index;
  }

  public String wireName() {
    return wireName;
  }

  public Scorer scorer() {
    return scorer;
  }

  /** Whether this is a built-in policy (a {@link PickRule} and kvrouter's lock-free picker), not a custom one. */
  public boolean isBuiltIn() {
    return pickers == null;
  }

  /** A picker of this policy starting from {@code state}: a built-in's lock-free picker, or the custom factory's. */
  public Picker newPicker(PickerState state) {
    if (pickers == null) {
      return Pickers.create(this, state);
    }
    Picker picker = pickers.apply(state);
    if (picker == null) {
      throw new IllegalStateException("custom policy '" + wireName + "' made no picker");
    }
    return picker;
  }

  /**
   * Pick number {@code pick} of a picker seeded with {@code seed}: the same inputs always give the same index. Only
   * built-ins have a pick rule; a custom policy picks through its own picker.
   */
  public int pick(long seed, long pick, ScoredCandidates c) {
    if (rule == null) {
      throw new UnsupportedOperationException("custom policy '" + wireName + "' picks through its own picker");
    }
    return rule.pick(seed, pick, c);
  }

  boolean rotation() {
    return rotation;
  }

  public static Policy fromWireName(String name) {
    String wanted = name == null ? "" : name.trim().toLowerCase(Locale.ROOT).replace('-', '_');
    for (Policy policy : Registry.ALL) {
      if (policy.wireName.equals(wanted)) {
        return policy;
      }
    }
    throw RoutingError.invalid(RoutingError.UNKNOWN_POLICY, "unknown policy '" + RoutingError.echo(name)
        + "'; expected one of " + Registry.ALL.stream().map(Policy::wireName).collect(Collectors.joining(", ")))
        .toException();
  }

  @Override
  public String toString() {
    return wireName;
  }

  /**
   * The registry, loaded on first use: the built-ins, then every {@link PolicyProvider}'s policies ordered by wire
   * name. A bad custom policy (a malformed or taken name, a missing scorer or factory, too many policies) fails the
   * load with a message naming its provider, so a router does not start with it.
   */
  private static final class Registry {
    static final List<Policy> ALL = registry(ServiceLoader.load(PolicyProvider.class, Policy.class.getClassLoader()));
  }

  /** The registry these providers make (see {@link Registry}). */
  static List<Policy> registry(Iterable<PolicyProvider> providers) {
    List<PolicyProvider.Definition> custom = new ArrayList<>();
    List<String> sources = new ArrayList<>();
    Set<String> taken = new HashSet<>();
    BUILT_IN.forEach(p -> taken.add(p.wireName));
    for (PolicyProvider provider : providers) {
      String source = provider.getClass().getName();
      List<PolicyProvider.Definition> definitions = provider.policies();
      if (definitions == null) {
        throw new IllegalStateException("policy provider " + source + " returned no list of policies");
      }
      for (PolicyProvider.Definition d : definitions) {
        String problem = d == null ? "a null policy"
            : d.wireName() == null || !WIRE_NAME.matcher(d.wireName()).matches()
                ? "policy name '" + d.wireName() + "' (want 1 to 64 of a-z, 0-9, _, starting with a letter)"
            : !taken.add(d.wireName()) ? "policy name '" + d.wireName() + "', which another policy has"
            : d.scorer() == null ? "policy '" + d.wireName() + "' without a scorer"
            : d.pickers() == null ? "policy '" + d.wireName() + "' without a picker factory" : null;
        if (problem != null) {
          throw new IllegalStateException("policy provider " + source + " declares " + problem);
        }
        custom.add(d);
        sources.add(source);
      }
    }
    if (BUILT_IN.size() + custom.size() > MAX_POLICIES) {
      throw new IllegalStateException("policy providers " + new TreeSet<>(sources) + " declare "
          + custom.size() + " policies; at most " + (MAX_POLICIES - BUILT_IN.size()) + " custom policies are allowed");
    }
    custom.sort(Comparator.comparing(PolicyProvider.Definition::wireName));
    List<Policy> all = new ArrayList<>(BUILT_IN);
    for (PolicyProvider.Definition d : custom) {
      all.add(new Policy(all.size(), d.wireName(), d.scorer(), null, false, d.pickers()));
    }
    return List.copyOf(all);
  }
}
