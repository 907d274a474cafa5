package io.kvrouter.sim.workload;

import java.util.Locale;
import java.util.SplittableRandom;

/**
 * Independent requests arriving as a Poisson process at a rate above what the fleet serves, for a fixed time: the
 * overload benchmark's workload. Each is tagged with one of two tenants (policy classes {@code a} and {@code b},
 * half each) and a strict-priority tier (1 for a share of them, else 0); prompts are short (200–1,000 tokens) or,
 * for a share of them, long (4,000–12,000), with nothing shared between requests; outputs are 32–128 tokens.
 */
public final class OverloadWorkload implements Workload {
  /** The workload's parameters. */
  public record Params(double ratePerSecond, double durationSeconds, double longShare, double tierOneShare,
      long seed) {
    public Params {
      if (!(ratePerSecond > 0) || !(durationSeconds > 0)) {
        throw new IllegalArgumentException("rate and duration must be positive");
      }
    }
  }

  public static final int SHORT_MIN = 200;
  public static final int SHORT_MAX = 1_000;
  public static final int LONG_MIN = 4_000;
  public static final int LONG_MAX = 12_000;

  private final Params params;

  public OverloadWorkload(Params params) {
    this.params = params;
  }

  @Override
  public String description() {
    return String.format(Locale.ROOT, "overload: Poisson arrivals at %.1f requests/s for %.0f s; prompts %d-%d tokens, "
            + "%.0f %% of them %d-%d; outputs 32-128 tokens; tenants a and b half each; %.0f %% in strict tier 1; "
            + "nothing shared between requests; seed %d", params.ratePerSecond(), params.durationSeconds(),
        SHORT_MIN, SHORT_MAX, params.longShare() * 100, LONG_MIN, LONG_MAX, params.tierOneShare() * 100,
        params.seed());
  }

  @Override
  public void start(Arrivals arrivals) {
    SplittableRandom random = new SplittableRandom(Tokens.key(params.seed(), 0x0E7L));
    long end = Math.round(params.durationSeconds() * 1e6);
    long at = 0;
    for (int i = 0; ; i++) {
      at += Math.round(-Math.log(1 - random.nextDouble()) / params.ratePerSecond() * 1e6);
      if (at >= end) {
        return;
      }
      boolean longPrompt = random.nextDouble() < params.longShare();
      int prompt = longPrompt ? LONG_MIN + random.nextInt(LONG_MAX - LONG_MIN + 1)
          : SHORT_MIN + random.nextInt(SHORT_MAX - SHORT_MIN + 1);
      int output = 32 + random.nextInt(97);
      String tenant = random.nextBoolean() ? "a" : "b";
      int tier = random.nextDouble() < params.tierOneShare() ? 1 : 0;
      String id = "o-" + i;
      arrivals.at(at, new WorkloadRequest(id, id, Tokens.generate(Tokens.key(params.seed(), i), prompt + output),
          prompt, tenant, tier));
    }
  }
}
