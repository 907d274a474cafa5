package io.kvrouter.core.policy;

import io.kvrouter.core.model.SessionMode;
import static io.kvrouter.core.policy.PolicyParameters.bad;
import static io.kvrouter.core.policy.PolicyParameters.requiredLong;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A model's session affinity, from its {@code session_*} policy parameters.
 *
 * @param idleTtlMillis a binding ends this long after the last Book of its session ({@code session_ttl_ms}); 0 turns
 *     affinity off (sessions are neither bound nor honoured)
 * @param mode the mode of a request that asks for none ({@code session_mode}: soft or hard)
 * @param softFactor what a soft binding's rank's cost counts ({@code session_soft_factor}, in [0, 1]: 0 keeps the
 *     session wherever its rank is eligible, 1 only breaks ties)
 * @param maxBindings at most this many bindings per model ({@code session_max_bindings}, 1 to
 *     {@link #MAX_BINDINGS_LIMIT}): binding one more ends the least recently used one
 */
public record SessionConfig(long idleTtlMillis, SessionMode mode, double softFactor, int maxBindings) {
  public static final String SESSION_TTL_MS = "session_ttl_ms";
  public static final String SESSION_MODE = "session_mode";
  public static final String SESSION_SOFT_FACTOR = "session_soft_factor";
  public static final String SESSION_MAX_BINDINGS = "session_max_bindings";
  /** The most bindings a model may keep (each costs its replicas and snapshots about 100 bytes). */
  public static final int MAX_BINDINGS_LIMIT = 1_000_000;
  /** At most one year, as Dynamo's TTL. */
  public static final long MAX_TTL_MILLIS = 365L * 24 * 3600 * 1000;

  public static final SessionConfig DEFAULTS = new SessionConfig(600_000, SessionMode.SOFT, 0.5, 100_000);

  public boolean enabled() {
    return idleTtlMillis > 0;
  }

  /** The mode a request asking for {@code asked} gets. */
  public SessionMode modeFor(SessionMode asked) {
    return asked == null || asked == SessionMode.DEFAULT ? mode : asked;
  }

  public Map<String, String> parameters() {
    Map<String, String> p = new LinkedHashMap<>();
    p.put(SESSION_TTL_MS, Long.toString(idleTtlMillis));
    p.put(SESSION_MODE, mode.wireName());
    p.put(SESSION_SOFT_FACTOR, Double.toString(softFactor));
    p.put(SESSION_MAX_BINDINGS, Integer.toString(maxBindings));
    return p;
  }

  /** Reads the {@code session_*} keys of {@code p} (a missing one takes its default); INVALID_ARGUMENT on a bad one. */
  public static SessionConfig parse(Map<String, String> p) {
    String ttlText = p.getOrDefault(SESSION_TTL_MS, Long.toString(DEFAULTS.idleTtlMillis));
    long ttl = requiredLong(SESSION_TTL_MS, ttlText);
    if (ttl < 0 || ttl > MAX_TTL_MILLIS) {
      throw bad(SESSION_TTL_MS, ttlText, "milliseconds from 0 (off) to " + MAX_TTL_MILLIS);
    }
    String modeText = p.getOrDefault(SESSION_MODE, DEFAULTS.mode.wireName());
    SessionMode mode = SessionMode.fromWireName(modeText);
    if (mode == null || mode == SessionMode.DEFAULT) {
      throw bad(SESSION_MODE, modeText, "soft or hard");
    }
    String factorText = p.getOrDefault(SESSION_SOFT_FACTOR, Double.toString(DEFAULTS.softFactor));
    double factor = PolicyParameters.parseDouble(SESSION_SOFT_FACTOR, factorText);
    if (!(factor >= 0 && factor <= 1)) {
      throw bad(SESSION_SOFT_FACTOR, factorText, "a factor in [0, 1]");
    }
    String maxText = p.getOrDefault(SESSION_MAX_BINDINGS, Integer.toString(DEFAULTS.maxBindings));
    long max = requiredLong(SESSION_MAX_BINDINGS, maxText);
    if (max < 1 || max > MAX_BINDINGS_LIMIT) {
      throw bad(SESSION_MAX_BINDINGS, maxText, "too many bindings: an integer from 1 to " + MAX_BINDINGS_LIMIT);
    }
    return new SessionConfig(ttl, mode, factor, (int) max);
  }
}
