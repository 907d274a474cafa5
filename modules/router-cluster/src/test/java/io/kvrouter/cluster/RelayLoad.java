package io.kvrouter.cluster;

import static org.awaitility.Awaitility.await;

import io.kvrouter.cluster.admission.ModelClient;
import io.kvrouter.core.admission.BookingAnswer;
import io.kvrouter.core.error.RoutingException;
import io.kvrouter.core.testkit.Requests;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Chains of Books through one node's facade, {@code callers} at a time (each of a fresh request id, the next sent
 * when the last completes) until {@link #stop}: what each call completed with, recorded once per call. Releasing
 * ones release each booking through the same facade before the chain's next Book.
 */
final class RelayLoad implements AutoCloseable {
  private final ModelClient client;
  private final String prefix;
  private final Duration deadline;
  private final ExecutorService next = Executors.newFixedThreadPool(2);
  private final AtomicBoolean stopping = new AtomicBoolean();
  private final AtomicInteger ids = new AtomicInteger();
  private final AtomicInteger inFlight = new AtomicInteger();
  final AtomicInteger issued = new AtomicInteger();
  /** Each answered call's booking, by request id (a second completion of one call would show up in {@link #twice}). */
  final Map<String, BookingAnswer> booked = new ConcurrentHashMap<>();
  final ConcurrentLinkedQueue<RoutingException> refused = new ConcurrentLinkedQueue<>();
  /** Completions that were neither a booking nor a routing error. */
  final ConcurrentLinkedQueue<Throwable> unclear = new ConcurrentLinkedQueue<>();
  /** Calls completed more than once, or answered with another call's booking. */
  final ConcurrentLinkedQueue<String> twice = new ConcurrentLinkedQueue<>();
  private final Map<String, Boolean> completed = new ConcurrentHashMap<>();
  private final boolean releasing;
  /** Bookings whose Release in the chain was applied. */
  final Set<String> released = ConcurrentHashMap.newKeySet();
  /** Releases in the chain answered not applied or with a routing error (the booking may still be live). */
  final Set<String> releaseUnclear = ConcurrentHashMap.newKeySet();
  /** Releases in the chain that completed with neither a result nor a routing error, or twice. */
  final ConcurrentLinkedQueue<String> releaseFailures = new ConcurrentLinkedQueue<>();
  private final Map<String, Boolean> releaseCompleted = new ConcurrentHashMap<>();

  RelayLoad(ModelClient client, String prefix, Duration deadline, int callers) {
    this(client, prefix, deadline, callers, false);
  }

  RelayLoad(ModelClient client, String prefix, Duration deadline, int callers, boolean releasing) {
    this.client = client;
    this.prefix = prefix;
    this.deadline = deadline;
    this.releasing = releasing;
    for (int i = 0; i < callers; i++) {
      inFlight.incrementAndGet();
      next.execute(this::bookOne);
    }
  }

  int completedCalls() {
    return completed.size();
  }

  private void bookOne() {
    if (stopping.get()) {
      inFlight.decrementAndGet();
      return;
    }
    String requestId = prefix + ids.incrementAndGet();
    issued.incrementAndGet();
    client.book(Requests.of(client.model(), requestId, 64), deadline).whenComplete((answer, failure) -> {
      if (completed.put(requestId, Boolean.TRUE) != null) {
        twice.add(requestId);
      }
      Throwable cause = failure instanceof CompletionException && failure.getCause() != null
          ? failure.getCause() : failure;
      if (cause == null) {
        if (!answer.requestId().equals(requestId) || booked.put(requestId, answer) != null) {
          twice.add(requestId + " answered as " + answer.requestId());
        }
        if (releasing) {
          releaseThenBook(answer);
          return;
        }
      } else if (cause instanceof RoutingException e) {
        refused.add(e);
      } else {
        unclear.add(cause);
      }
      next.execute(this::bookOne);
    });
  }

  private void releaseThenBook(BookingAnswer booking) {
    String requestId = booking.requestId();
    client.release(requestId, booking.attempt(), deadline).whenComplete((result, failure) -> {
      Throwable cause = failure instanceof CompletionException && failure.getCause() != null
          ? failure.getCause() : failure;
      if (releaseCompleted.put(requestId, Boolean.TRUE) != null) {
        releaseFailures.add(requestId + " completed twice");
      } else if (cause == null && result.applied()) {
        released.add(requestId);
      } else if (cause == null || cause instanceof RoutingException) {
        releaseUnclear.add(requestId);
      } else {
        releaseFailures.add(requestId + ": " + cause);
      }
      next.execute(this::bookOne);
    });
  }

  /** Stops sending and waits (at most {@code timeout}) until every chain's last call has completed. */
  void stop(Duration timeout) {
    stopping.set(true);
    await().atMost(timeout).until(() -> inFlight.get() == 0);
  }

  List<String> refusalReasons() {
    return refused.stream().map(e -> e.error().code() + " " + e.error().reason()).distinct().toList();
  }

  @Override
  public void close() {
    stopping.set(true);
    next.shutdownNow();
  }
}
