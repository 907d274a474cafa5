package io.kvrouter.core.admission;

import io.kvrouter.core.model.Rank;
import io.kvrouter.core.replication.ReplicationLog;
import io.kvrouter.core.replication.SessionBinding;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A model's session bindings: session id to the rank its Books go to, least recently used first. A binding ends
 * when its idle TTL passes without a Book of its session ({@link #expire}), when its worker leaves
 * ({@link #dropWorker}), when it is found invalid ({@link #invalidate}), or, once the model holds its
 * {@code maxBindings}, when a new session is bound while it is the least recently used ({@link #bind}). Every
 * change is told to the {@link ReplicationLog}, so replicas hold the same bindings and a new incarnation recovers
 * them. Single-threaded (the admission state's).
 */
public final class SessionBindings {
  /** Access-ordered: a Book that uses a binding moves it to the end, so the head is the least recently used. */
  private final LinkedHashMap<String, SessionBinding> bindings = new LinkedHashMap<>(16, 0.75f, true);
  private ReplicationLog log;
  private long bound;
  private long rebound;
  private long expired;
  private long evicted;
  private long invalidated;

  /**
   * The counters an operator reads: sessions bound afresh, moved to another rank (soft or hard), bindings ended by
   * the TTL, by the bound (LRU), found invalid (worker removed, hard rank not eligible).
   */
  public record Counters(long bound, long rebound, long expired, long evicted, long invalidated) {}

  void replicateTo(ReplicationLog replicationLog) {
    this.log = replicationLog;
  }

  /**
   * Bindings recovered from a replica's copy, put back least recently used first (they are not replicated again: a
   * new incarnation's replicas take a full copy).
   */
  void restore(List<SessionBinding> recovered) {
    List<SessionBinding> byUse = new ArrayList<>(recovered);
    byUse.sort(java.util.Comparator.comparingLong(SessionBinding::lastUsedMillis));
    for (SessionBinding binding : byUse) {
      bindings.put(binding.sessionId(), binding);
    }
  }

  public int size() {
    return bindings.size();
  }

  /** The session's binding if it has not expired at {@code nowMillis}, else null (an expired one is ended). */
  SessionBinding live(String sessionId, long nowMillis) {
    SessionBinding binding = bindings.get(sessionId);
    if (binding != null && binding.expiresAtMillis() <= nowMillis) {
      end(sessionId);
      expired++;
      return null;
    }
    return binding;
  }

  /**
   * Binds the session to {@code rank} for {@code ttlMillis} from now, or refreshes its binding to the same rank; a
   * binding to another rank is replaced (counted rebound). A new session beyond {@code maxBindings} ends the least
   * recently used binding first. Returns the binding it replaced, or null.
   *
   * @param afterInvalid the session's binding was just found invalid ({@link #invalidate}): this binding replaces
   *     it (counted rebound, not bound)
   */
  SessionBinding bind(String sessionId, Rank rank, long nowMillis, long ttlMillis, int maxBindings,
      boolean afterInvalid) {
    SessionBinding previous = bindings.get(sessionId);
    long boundAt = previous != null && previous.rank().equals(rank) ? previous.boundAtMillis() : nowMillis;
    if (previous == null) {
      while (bindings.size() >= maxBindings) {
        Iterator<Map.Entry<String, SessionBinding>> eldest = bindings.entrySet().iterator();
        String victim = eldest.next().getKey();
        eldest.remove();
        ended(victim);
        evicted++;
      }
      if (afterInvalid) {
        rebound++;
      } else {
        bound++;
      }
    } else if (!previous.rank().equals(rank)) {
      rebound++;
    }
    SessionBinding binding = new SessionBinding(sessionId, rank, boundAt, nowMillis, nowMillis + ttlMillis);
    bindings.put(sessionId, binding);
    if (log != null) {
      log.sessionBound(binding);
    }
    return previous;
  }

  /** Ends a binding found invalid (its rank gone or no longer eligible for its session's Book). */
  void invalidate(String sessionId) {
    if (bindings.remove(sessionId) != null) {
      ended(sessionId);
      invalidated++;
    }
  }

  /** Ends every binding to one of the worker's ranks; returns how many. */
  int dropWorker(String workerId) {
    return invalidateIf(binding -> binding.rank().workerId().equals(workerId));
  }

  /** Ends every binding {@code invalid} accepts (counted invalidated); returns how many. */
  int invalidateIf(java.util.function.Predicate<SessionBinding> invalid) {
    int dropped = 0;
    for (Iterator<SessionBinding> it = bindings.values().iterator(); it.hasNext(); ) {
      SessionBinding binding = it.next();
      if (invalid.test(binding)) {
        it.remove();
        ended(binding.sessionId());
        dropped++;
      }
    }
    invalidated += dropped;
    return dropped;
  }

  /**
   * Ends the bindings idle past their TTL at {@code nowMillis}; returns how many. Least recently used first, so the
   * scan stops at the first live one while the TTL stays the same (a TTL changed since leaves a few until later).
   */
  int expire(long nowMillis) {
    int ended = 0;
    for (Iterator<SessionBinding> it = bindings.values().iterator(); it.hasNext(); ) {
      SessionBinding binding = it.next();
      if (binding.expiresAtMillis() > nowMillis) {
        break;
      }
      it.remove();
      ended(binding.sessionId());
      ended++;
    }
    expired += ended;
    return ended;
  }

  /** Ends every binding (affinity turned off). */
  void clear() {
    for (String sessionId : new ArrayList<>(bindings.keySet())) {
      end(sessionId);
    }
  }

  /** The bindings, least recently used first. */
  public List<SessionBinding> all() {
    return new ArrayList<>(bindings.values());
  }

  /** At most {@code limit} bindings, most recently used first. */
  List<SessionBinding> recent(int limit) {
    List<SessionBinding> all = all();
    List<SessionBinding> recent = new ArrayList<>(Math.min(limit, all.size()));
    for (int i = all.size() - 1; i >= 0 && recent.size() < limit; i--) {
      recent.add(all.get(i));
    }
    return recent;
  }

  public Counters counters() {
    return new Counters(bound, rebound, expired, evicted, invalidated);
  }

  private void end(String sessionId) {
    bindings.remove(sessionId);
    ended(sessionId);
  }

  private void ended(String sessionId) {
    if (log != null) {
      log.sessionEnded(sessionId);
    }
  }
}
