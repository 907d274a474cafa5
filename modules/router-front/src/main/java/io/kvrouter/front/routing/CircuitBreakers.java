package io.kvrouter.front.routing;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.LongSupplier;

/**
 * This node's circuit breaker per (model, worker) for the front's forwarding. A worker that fails before the first
 * byte {@code failures} times in a row opens its breaker: this node's Books exclude it for {@code coolDown}. Then it
 * is half-open: the next request booked on it is its trial (others exclude it meanwhile); the trial's first byte
 * closes the breaker, its failure opens it again. Failures after the first byte count too (the engine broke), but the
 * request is not retried. A breaker is local to this node; the admission state (shared by every node) is unchanged.
 *
 * <p>Thread-safe: one lock per breaker, a concurrent map per model.
 */
public final class CircuitBreakers {

  public enum State { CLOSED, OPEN, HALF_OPEN }

  /** One breaker as the state route, the dashboard and the metrics show it. */
  public record Snapshot(String model, String workerId, State state, int consecutiveFailures, long failures,
      long trips, long openUntilMillis) {}

  /** Told when a breaker changes state (metrics, logs). */
  public interface Listener {
    void changed(String model, String workerId, State from, State to);

    /** The breaker of a worker that is no longer registered was dropped. */
    default void forgotten(String model, String workerId) {}

    Listener NONE = (model, worker, from, to) -> { };
  }

  private static final class Breaker {
    State state = State.CLOSED;
    int consecutive;
    long failures;
    long trips;
    long openUntil;
    boolean trialInFlight;
  }

  private final int threshold;
  private final long coolDownMillis;
  private final LongSupplier clock;
  private final Listener listener;
  private final Map<String, Map<String, Breaker>> models = new ConcurrentHashMap<>();

  public CircuitBreakers(int failures, Duration coolDown, LongSupplier clock, Listener listener) {
    if (failures < 1) {
      throw new IllegalArgumentException("failures must be at least 1");
    }
    this.threshold = failures;
    this.coolDownMillis = coolDown.toMillis();
    this.clock = clock;
    this.listener = listener;
  }

  /**
   * The workers of {@code model} a Book must exclude now: open breakers within their cool-down, and half-open ones
   * whose trial is in flight. An open breaker whose cool-down has passed turns half-open (not excluded).
   */
  public Set<String> excluded(String model) {
    Map<String, Breaker> breakers = models.get(model);
    if (breakers == null || breakers.isEmpty()) {
      return Set.of();
    }
    long now = clock.getAsLong();
    Set<String> out = null;
    for (Map.Entry<String, Breaker> entry : breakers.entrySet()) {
      Breaker b = entry.getValue();
      State from = null;
      boolean exclude;
      synchronized (b) {
        if (b.state == State.OPEN && now >= b.openUntil) {
          b.state = State.HALF_OPEN;
          b.trialInFlight = false;
          from = State.OPEN;
        }
        exclude = b.state == State.OPEN || (b.state == State.HALF_OPEN && b.trialInFlight);
      }
      if (from != null) {
        listener.changed(model, entry.getKey(), from, State.HALF_OPEN);
      }
      if (exclude) {
        if (out == null) {
          out = new HashSet<>();
        }
        out.add(entry.getKey());
      }
    }
    return out == null ? Set.of() : out;
  }

  /** A request was booked on the worker: a half-open breaker's first such request is its trial. */
  public void attempting(String model, String workerId) {
    Breaker b = find(model, workerId);
    if (b != null) {
      synchronized (b) {
        if (b.state == State.HALF_OPEN) {
          b.trialInFlight = true;
        }
      }
    }
  }

  /** The worker answered (a first byte, or a client error it reported itself). */
  public void succeeded(String model, String workerId) {
    Breaker b = find(model, workerId);
    if (b == null) {
      return;
    }
    State from;
    synchronized (b) {
      from = b.state;
      b.consecutive = 0;
      b.trialInFlight = false;
      b.state = State.CLOSED;
    }
    if (from != State.CLOSED) {
      listener.changed(model, workerId, from, State.CLOSED);
    }
  }

  /** The worker failed a request; returns the state after. */
  public State failed(String model, String workerId) {
    Breaker b = models.computeIfAbsent(model, m -> new ConcurrentHashMap<>())
        .computeIfAbsent(workerId, w -> new Breaker());
    State from;
    State to;
    synchronized (b) {
      from = b.state;
      b.failures++;
      b.consecutive++;
      b.trialInFlight = false;
      if (b.state == State.HALF_OPEN || (b.state == State.CLOSED && b.consecutive >= threshold)) {
        b.state = State.OPEN;
        b.trips++;
        b.openUntil = clock.getAsLong() + coolDownMillis;
      }
      to = b.state;
    }
    if (from != to) {
      listener.changed(model, workerId, from, to);
    }
    return to;
  }

  /** A trial that ended without a verdict (the client left before the first byte): the next request tries. */
  public void abandoned(String model, String workerId) {
    Breaker b = find(model, workerId);
    if (b != null) {
      synchronized (b) {
        b.trialInFlight = false;
      }
    }
  }

  /** Every breaker of {@code model} this node holds, by worker id. */
  public List<Snapshot> snapshot(String model) {
    Map<String, Breaker> breakers = models.get(model);
    if (breakers == null) {
      return List.of();
    }
    excluded(model); // turns breakers whose cool-down passed half-open
    List<Snapshot> out = new ArrayList<>();
    breakers.forEach((worker, b) -> {
      synchronized (b) {
        out.add(new Snapshot(model, worker, b.state, b.consecutive, b.failures, b.trips,
            b.state == State.OPEN ? b.openUntil : 0));
      }
    });
    out.sort(Comparator.comparing(Snapshot::workerId));
    return out;
  }

  /** The models with breakers. */
  public Set<String> models() {
    return Set.copyOf(models.keySet());
  }

  /** Forgets the breakers of workers no longer registered ({@code live}), and of models that are gone. */
  public void retain(String model, Collection<String> live) {
    Map<String, Breaker> breakers = models.get(model);
    if (breakers != null) {
      breakers.keySet().retainAll(live);
      if (breakers.isEmpty()) {
        models.remove(model, breakers);
      }
    }
  }

  private Breaker find(String model, String workerId) {
    Map<String, Breaker> breakers = models.get(model);
    return breakers == null ? null : breakers.get(workerId);
  }
}
