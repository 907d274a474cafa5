package io.kvrouter.front.routing;

import io.kvrouter.cluster.RouterCluster;
import io.kvrouter.cluster.admission.BookCall;
import io.kvrouter.core.admission.BookingAnswer;
import io.kvrouter.core.admission.MutationResult;
import io.kvrouter.core.selection.SelectionRequest;
import java.time.Duration;
import java.util.Collections;
import java.util.LinkedHashSet;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The bookings of one client request, one at a time, with no transport in it (the HTTP front and the endpoint picker
 * both drive it): {@link #book} books under a fresh request id per attempt ({@code <base>/<n>}), excluding the
 * workers this request already tried and those whose breaker is open; {@link #failed} releases the current booking
 * and counts the worker's failure (a retry then books again without it); {@link #started} marks prefill done once
 * (the first token) and renews the lease while the request runs; {@link #finish} releases. Every path releases
 * exactly once: a booking is released when the request fails over, ends, errs or is abandoned, and a Book still in
 * flight when the request is abandoned is abandoned too (CancelBook undoes it even if it was answered meanwhile).
 *
 * <p>Thread-safe: the transport calls it from its own threads; state changes under this object's lock.
 */
public final class RequestBooking {
  private static final Logger log = LoggerFactory.getLogger(RequestBooking.class);

  /** A booking made for this request: the answer, its attempt number (1-based) and where it goes. */
  public record Booked(BookingAnswer answer, int attempt, String workerId, int dpRank, String endpoint) {
    public String requestId() {
      return answer.requestId();
    }
  }

  /** What the request's bookings report (metrics). */
  public interface Events {
    void released(boolean applied);

    void releaseFailed(Throwable failure);

    Events NONE = new Events() {
      @Override
      public void released(boolean applied) {}

      @Override
      public void releaseFailed(Throwable failure) {}
    };
  }

  private final RouterCluster cluster;
  private final BookingScope scope;
  private final SelectionRequest base;
  private final String idBase;
  private final Duration bookTimeout;
  private final Duration mutationTimeout;
  private final Duration renewInterval;
  private final ScheduledExecutorService timers;
  private final CircuitBreakers breakers;
  private final Events events;

  private final Set<String> tried = new LinkedHashSet<>();
  private int attempts;
  private BookCall pending;
  private Booked current;
  private boolean prefillMarked;
  private boolean verdict;
  private ScheduledFuture<?> renewal;
  private boolean closed;

  public RequestBooking(RouterCluster cluster, BookingScope scope, SelectionRequest base, String idBase,
      Duration bookTimeout, Duration mutationTimeout, Duration renewInterval, ScheduledExecutorService timers,
      CircuitBreakers breakers, Events events) {
    this.cluster = cluster;
    this.scope = scope;
    this.base = base;
    this.idBase = idBase;
    this.bookTimeout = bookTimeout;
    this.mutationTimeout = mutationTimeout;
    this.renewInterval = renewInterval;
    this.timers = timers;
    this.breakers = breakers;
    this.events = events;
  }

  public BookingScope scope() {
    return scope;
  }

  /** Attempts made so far (Books sent). */
  public synchronized int attempts() {
    return attempts;
  }

  /** The workers this request tried and that failed it, in order. */
  public synchronized Set<String> failedWorkers() {
    return Collections.unmodifiableSet(new LinkedHashSet<>(tried));
  }

  /** The current booking, or null. */
  public synchronized Booked current() {
    return current;
  }

  /**
   * Books the next attempt, excluding the workers that failed this request and those whose breaker is open. Fails
   * with the router's {@link io.kvrouter.core.error.RoutingException} (e.g. no endpoint left), or
   * {@link IllegalStateException} when the request was closed or already holds a booking.
   */
  public CompletionStage<Booked> book() {
    BookCall call;
    int attempt;
    synchronized (this) {
      if (closed) {
        return CompletableFuture.failedFuture(new IllegalStateException("the request has ended"));
      }
      if (current != null || pending != null) {
        return CompletableFuture.failedFuture(new IllegalStateException("the request holds a booking already"));
      }
      attempt = ++attempts;
      Set<String> excluded = new LinkedHashSet<>(tried);
      excluded.addAll(breakers.excluded(scope.model()));
      SelectionRequest request = base.withRequestId(idBase + "/" + attempt)
          .withExcludedWorkers(excluded.isEmpty() ? Set.of() : Set.copyOf(excluded));
      call = scope.client(cluster).book(request, bookTimeout);
      pending = call;
      prefillMarked = false;
      verdict = false;
    }
    if (scope.remote() != null) {
      // this node's copy of the chosen pool counts the booking until the pool's next summary (as RouterService)
      call.thenRun(() -> cluster.regions().pools().booked(scope.model(), scope.region(), base.islTokens()));
    }
    return call.thenApply(answer -> {
      Booked booked = new Booked(answer, attempt, answer.selection().rank().workerId(),
          answer.selection().rank().dpRank(), answer.selection().endpoint());
      boolean keep;
      synchronized (this) {
        keep = !closed && pending == call;
        if (keep) {
          pending = null;
          current = booked;
        }
      }
      if (!keep) {
        call.abandon(); // the request ended while the Book was in flight: undo it
        throw new IllegalStateException("the request has ended");
      }
      breakers.attempting(scope.model(), booked.workerId());
      return booked;
    }).whenComplete((done, failure) -> {
      if (failure != null) {
        synchronized (this) {
          if (pending == call) {
            pending = null;
          }
        }
      }
    });
  }

  /**
   * The current worker failed before the first byte: its booking is released, its failure counted, and the next
   * {@link #book} excludes it. Returns the worker (null without a current booking).
   */
  public String failed() {
    Booked booked;
    synchronized (this) {
      booked = current;
      if (booked == null) {
        return null;
      }
      current = null;
      tried.add(booked.workerId());
      cancelRenewal();
    }
    breakers.failed(scope.model(), booked.workerId());
    release(booked);
    return booked.workerId();
  }

  /** The worker answered a client error itself (e.g. a 400 of the engine's own checks): it is healthy. */
  public void answered() {
    Booked booked;
    synchronized (this) {
      booked = current;
      if (booked == null || verdict) {
        return;
      }
      verdict = true;
    }
    breakers.succeeded(scope.model(), booked.workerId());
  }

  /**
   * The first byte (streaming: the first token) reached the front: the worker is healthy, the booking's prefill is
   * done (marked once), and its lease is renewed every renew interval until the request ends.
   */
  public void started() {
    Booked booked;
    synchronized (this) {
      booked = current;
      if (booked == null || prefillMarked) {
        return;
      }
      prefillMarked = true;
      verdict = true;
      if (!closed) {
        renewal = timers.scheduleAtFixedRate(this::renew, renewInterval.toMillis(), renewInterval.toMillis(),
            TimeUnit.MILLISECONDS);
      }
    }
    breakers.succeeded(scope.model(), booked.workerId());
    mutation("MarkPrefillDone", booked, scope.client(cluster).markPrefillDone(booked.requestId(),
        booked.answer().attempt(), mutationTimeout));
  }

  /** The worker broke the request after its first byte: counted for its breaker; {@link #finish} still releases. */
  public void brokeAfterStart() {
    Booked booked;
    synchronized (this) {
      booked = current;
    }
    if (booked != null) {
      breakers.failed(scope.model(), booked.workerId());
    }
  }

  /**
   * The request ended (completed, failed, or its client went away): the current booking is released, a Book in
   * flight abandoned, and nothing is booked afterwards. Idempotent.
   */
  public void finish() {
    Booked booked;
    BookCall inFlight;
    boolean trialOpen;
    synchronized (this) {
      if (closed) {
        return;
      }
      closed = true;
      booked = current;
      current = null;
      inFlight = pending;
      pending = null;
      trialOpen = booked != null && !verdict;
      cancelRenewal();
    }
    if (inFlight != null) {
      inFlight.abandon();
    }
    if (booked != null) {
      if (trialOpen) {
        breakers.abandoned(scope.model(), booked.workerId());
      }
      release(booked);
    }
  }

  private void renew() {
    Booked booked;
    synchronized (this) {
      booked = current;
    }
    if (booked != null) {
      mutation("Renew", booked, scope.client(cluster).renew(booked.requestId(), booked.answer().attempt(),
          mutationTimeout));
    }
  }

  private void cancelRenewal() {
    if (renewal != null) {
      renewal.cancel(false);
      renewal = null;
    }
  }

  private void release(Booked booked) {
    scope.client(cluster).release(booked.requestId(), booked.answer().attempt(), mutationTimeout)
        .whenComplete((result, failure) -> {
          if (failure != null) {
            events.releaseFailed(failure);
            log.warn("release of {} (attempt {}) failed: {}; its lease reclaims it", booked.requestId(),
                booked.answer().attempt(), failure.toString());
          } else {
            events.released(result.applied());
          }
        });
  }

  private static void mutation(String what, Booked booked, CompletionStage<MutationResult> stage) {
    stage.whenComplete((result, failure) -> {
      if (failure != null) {
        log.debug("{} of {} failed: {}", what, booked.requestId(), failure.toString());
      }
    });
  }
}
