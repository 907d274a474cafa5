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
 * (the first token) and renews the lease while the request runs; for a prefill/decode pair {@link #prefillAnswered}
 * marks it when the prefill engine answers instead, which frees the prefill rank; {@link #finish} releases (a pair's
 * both halves). Every path releases
 * exactly once: a booking is released when the request fails over, ends, errs or is abandoned, and a Book still in
 * flight when the request is abandoned is abandoned too (CancelBook undoes it even if it was answered meanwhile).
 *
 * <p>Thread-safe: the transport calls it from its own threads; state changes under this object's lock.
 */
public final class RequestBooking {
  private static final Logger log = LoggerFactory.getLogger(RequestBooking.class);

  /**
   * A booking made for this request: the answer, its attempt number (1-based) and where it goes. For a
   * prefill/decode pair, {@code workerId}, {@code dpRank} and {@code endpoint} are the prefill half's and
   * {@code decode} the decode half's (null: a single rank).
   */
  public record Booked(BookingAnswer answer, int attempt, String workerId, int dpRank, String endpoint,
      Half decode) {
    public String requestId() {
      return answer.requestId();
    }

    /** Whether this is a prefill/decode pair (two engines, one booking). */
    public boolean disaggregated() {
      return decode != null;
    }

    /** The worker that answers the client: the decode half of a pair, else the booked one. */
    public String servingWorker() {
      return decode != null ? decode.workerId() : workerId;
    }

    /** The prefill worker of a pair, or null. */
    public String prefillWorker() {
      return decode != null ? workerId : null;
    }

    static Booked of(BookingAnswer answer, int attempt) {
      var selection = answer.selection();
      var decode = selection.decode();
      return new Booked(answer, attempt, selection.rank().workerId(), selection.rank().dpRank(),
          selection.endpoint(), decode == null ? null
              : new Half(decode.rank().workerId(), decode.rank().dpRank(), decode.endpoint()));
    }
  }

  /** One half of a prefill/decode pair: its worker, data-parallel rank and endpoint. */
  public record Half(String workerId, int dpRank, String endpoint) {}

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
      Booked booked = Booked.of(answer, attempt);
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
      if (booked.disaggregated()) {
        breakers.attempting(scope.model(), booked.decode().workerId());
      }
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
    }
    return booked == null ? null : failed(booked.workerId());
  }

  /**
   * {@code worker} (either half of a pair) failed the current booking before the first byte reached the client: the
   * booking is released (a pair's both halves: one booking reference covers them), the worker's failure counted, and
   * the next {@link #book} excludes it. Returns the worker (null without a current booking).
   */
  public String failed(String worker) {
    Booked booked;
    synchronized (this) {
      booked = current;
      if (booked == null) {
        return null;
      }
      current = null;
      tried.add(worker);
      cancelRenewal();
    }
    breakers.failed(scope.model(), worker);
    release(booked);
    return worker;
  }

  /** The worker answered a client error itself (e.g. a 400 of the engine's own checks): it is healthy. */
  public void answered() {
    answered(null);
  }

  /** {@code worker} (null: the serving one) answered a client error itself: it is healthy. */
  public void answered(String worker) {
    Booked booked;
    synchronized (this) {
      booked = current;
      if (booked == null || verdict) {
        return;
      }
      verdict = true;
    }
    breakers.succeeded(scope.model(), worker != null ? worker : booked.servingWorker());
  }

  /**
   * The prefill half of a pair answered: the prefill worker is healthy, and the booking's prefill is done (marked
   * once: the admission actor frees the prefill rank's slot and prefill load, the decode rank keeps the request);
   * the lease is renewed every renew interval from now until the request ends.
   */
  public void prefillAnswered() {
    Booked booked;
    synchronized (this) {
      booked = current;
      if (booked == null || !booked.disaggregated() || prefillMarked) {
        return;
      }
      prefillMarked = true;
      startRenewal();
    }
    breakers.succeeded(scope.model(), booked.workerId());
    mutation("MarkPrefillDone", booked, scope.client(cluster).markPrefillDone(booked.requestId(),
        booked.answer().attempt(), mutationTimeout));
  }

  /**
   * The first byte (streaming: the first token) reached the front: the worker is healthy, the booking's prefill is
   * done (marked once), and its lease is renewed every renew interval until the request ends.
   */
  public void started() {
    Booked booked;
    boolean mark;
    synchronized (this) {
      booked = current;
      if (booked == null || verdict) {
        return;
      }
      verdict = true;
      mark = !prefillMarked; // a pair's was marked when its prefill answered
      prefillMarked = true;
      startRenewal();
    }
    breakers.succeeded(scope.model(), booked.servingWorker());
    if (mark) {
      mutation("MarkPrefillDone", booked, scope.client(cluster).markPrefillDone(booked.requestId(),
          booked.answer().attempt(), mutationTimeout));
    }
  }

  private void startRenewal() {
    if (!closed && renewal == null) {
      renewal = timers.scheduleAtFixedRate(this::renew, renewInterval.toMillis(), renewInterval.toMillis(),
          TimeUnit.MILLISECONDS);
    }
  }

  /** The worker broke the request after its first byte: counted for its breaker; {@link #finish} still releases. */
  public void brokeAfterStart() {
    Booked booked;
    synchronized (this) {
      booked = current;
    }
    if (booked != null) {
      breakers.failed(scope.model(), booked.servingWorker());
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
        if (booked.disaggregated()) {
          breakers.abandoned(scope.model(), booked.decode().workerId());
        }
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
