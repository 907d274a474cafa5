package io.kvrouter.partitions;

import java.time.Duration;

/**
 * A failure profile (KVROUTER_FAILURE_PROFILE) and the scenario timings that fit it: production's resolver waits
 * 20 s (stable-after) and sharding 20 s more (removal margin), so its faults last longer and its clients hold
 * bookings longer, for the holds to span the failover. Before each fault the clients start no Book for {@code lull}
 * (longer than a short hold), so that the fault meets a ledger with room on both of its sides.
 */
public record Profile(String name, Duration warmup, Duration lull, Duration fault, Duration afterHeal, Duration converge,
    long callTimeoutMs, Clients.Holds holds) {

  public static Profile of(String name) {
    return switch (name) {
      case "loopback" -> new Profile(name, Duration.ofSeconds(5), Duration.ofSeconds(2), Duration.ofSeconds(20), Duration.ofSeconds(5),
          Duration.ofSeconds(120), 2_000, new Clients.Holds(100, 1_000, 0.3, 3_000, 15_000, 0.1));
      case "production" -> new Profile(name, Duration.ofSeconds(10), Duration.ofSeconds(2), Duration.ofSeconds(70), Duration.ofSeconds(10),
          Duration.ofSeconds(180), 3_000, new Clients.Holds(100, 1_000, 0.3, 10_000, 60_000, 0.1));
      default -> throw new IllegalArgumentException("unknown profile '" + name + "': production or loopback");
    };
  }
}
