package io.kvrouter.core.policy;

import io.kvrouter.core.error.RoutingError;
import java.util.Locale;

/** The selection policies a model can run; switched at runtime with Admin.SetPolicy. */
public enum Policy {
  ROUND_ROBIN("round_robin"),
  RANDOM("random"),
  LEAST_IN_FLIGHT("least_in_flight"),
  POWER_OF_TWO("power_of_two"),
  KV("kv");

  private final String wireName;

  Policy(String wireName) {
    this.wireName = wireName;
  }

  public String wireName() {
    return wireName;
  }

  public static Policy fromWireName(String name) {
    String wanted = name == null ? "" : name.trim().toLowerCase(Locale.ROOT).replace('-', '_');
    for (Policy policy : values()) {
      if (policy.wireName.equals(wanted)) {
        return policy;
      }
    }
    throw RoutingError.invalid(RoutingError.UNKNOWN_POLICY, "unknown policy '" + RoutingError.echo(name)
        + "'; expected one of round_robin, random, least_in_flight, power_of_two, kv").toException();
  }
}
