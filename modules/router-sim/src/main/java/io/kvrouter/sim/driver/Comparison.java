package io.kvrouter.sim.driver;

import io.kvrouter.sim.workload.Workload;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.Supplier;

/**
 * Runs one workload once per contender, side by side: each of the router's policies (a fresh model per run, the
 * same seeded workload, a fresh fleet), and the simulator-only prefix-greedy reference.
 */
public final class Comparison {
  /**
   * One row of the comparison: a router policy with policy parameters of its own (on top of the setup's), or the
   * prefix-greedy reference when {@code policy} is null.
   */
  public record Contender(String label, String policy, boolean publishEvents, Map<String, String> parameters,
      boolean sessions) {
    public Contender(String label, String policy, boolean publishEvents) {
      this(label, policy, publishEvents, Map.of());
    }

    /** A row whose Books carry no session. */
    public Contender(String label, String policy, boolean publishEvents, Map<String, String> parameters) {
      this(label, policy, publishEvents, parameters, false);
    }

    /**
     * {@code policy} with session affinity: each Book names its conversation ({@code session_id}) and the model runs
     * in {@code mode} (soft, hard).
     */
    public static Contender withSessions(String policy, String mode) {
      return new Contender(policy + " + sessions (" + mode + ")", policy, true, Map.of("session_mode", mode), true);
    }

    public boolean usesRouter() {
      return policy != null;
    }

    /** kv with {@code parameters}, labelled by them. */
    public static Contender kvWith(Map<String, String> parameters) {
      StringBuilder label = new StringBuilder("kv (");
      parameters.forEach((k, v) -> label.append(label.length() > 4 ? ", " : "").append(k).append('=').append(v));
      return new Contender(label.append(')').toString(), "kv", true, Map.copyOf(parameters));
    }
  }

  /** What to run: the fleet, a fresh workload per run, the seed given to the router's pickers. */
  public record Setup(String workloadName, FleetConfig fleet, Supplier<Workload> workload, long seed,
      Map<String, String> kvParameters) {}

  public static final Contender PREFIX_GREEDY = new Contender("prefix-greedy (no router)", null, true);

  /** The router's policies (kv twice: event-fed, and approximate with engines publishing no events), then greedy. */
  public static List<Contender> contenders() {
    return List.of(
        new Contender("round_robin", "round_robin", true),
        new Contender("random", "random", true),
        new Contender("least_in_flight", "least_in_flight", true),
        new Contender("power_of_two", "power_of_two", true),
        new Contender("kv", "kv", true),
        new Contender("kv (approximate, no events)", "kv", false),
        PREFIX_GREEDY);
  }

  private Comparison() {}

  /**
   * Runs every contender in order. {@code clients} may be null when no contender uses the router; {@code runTag}
   * makes the model names unique on a shared router.
   */
  public static List<RunResult> run(Setup setup, List<Contender> contenders, RouterClients clients, Pacer pacer,
      String runTag, Simulation.Progress progress) {
    List<RunResult> results = new ArrayList<>();
    for (Contender contender : contenders) {
      Placement placement = contender.usesRouter()
          ? new RouterPlacement(clients, contender.label(), modelName(setup, contender, runTag), contender.policy(),
              parameters(setup, contender), contender.publishEvents(),
              contender.sessions() ? RouterPlacement.Tagging.SESSIONS : RouterPlacement.Tagging.NONE)
          : new PrefixGreedyPlacement();
      Simulation simulation = new Simulation(new Fleet(setup.fleet()), setup.workload().get(), placement, pacer,
          progress, Simulation.Settings.defaults());
      results.add(simulation.run());
    }
    return results;
  }

  private static Map<String, String> parameters(Setup setup, Contender contender) {
    Map<String, String> parameters = new LinkedHashMap<>();
    parameters.put("seed", Long.toString(setup.seed()));
    if ("kv".equals(contender.policy())) {
      parameters.putAll(setup.kvParameters());
    }
    parameters.putAll(contender.parameters());
    return parameters;
  }

  private static String modelName(Setup setup, Contender contender, String runTag) {
    String slug = contender.label().toLowerCase(Locale.ROOT).replaceAll("[^a-z0-9]+", "-").replaceAll("-+$", "");
    return "sim/" + setup.workloadName() + "/" + slug + (runTag.isEmpty() ? "" : "/" + runTag);
  }
}
