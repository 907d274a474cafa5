package io.kvrouter.bench;

import io.grpc.CallOptions;
import io.grpc.ClientCall;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.kvrouter.api.ReasonTrailer;
import io.kvrouter.api.v1.AdminGrpc;
import io.kvrouter.api.v1.Booking;
import io.kvrouter.api.v1.BookingRef;
import io.kvrouter.api.v1.ModelState;
import io.kvrouter.api.v1.ModelStateRequest;
import io.kvrouter.api.v1.RankState;
import io.kvrouter.api.v1.Released;
import io.kvrouter.api.v1.RouteRequest;
import io.kvrouter.api.v1.RouterGrpc;
import io.kvrouter.api.v1.WorkerRegistration;
import io.kvrouter.api.v1.WorkerState;
import io.kvrouter.api.v1.WorkersGrpc;
import io.kvrouter.bench.transport.Unary;
import io.kvrouter.server.RouterNode;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * Bookings left behind by abandoned Books (issue 9). One router in this JVM on loopback; concurrent Book loops over
 * grpc-java, where some Books carry a deadline of a few milliseconds and some are cancelled by the client shortly
 * after they are sent. Every booking the client is told about is released; the clients never replay. Once every loop
 * has ended, the model's live bookings are the leaked ones. With a short lease, the run then waits for the leaked
 * bookings to expire.
 */
@Command(name = "leaks", mixinStandardHelpOptions = true,
    description = "Bookings left behind by Books the client gave up on (deadline or cancel), on one router.")
public final class LeakBench implements java.util.concurrent.Callable<Integer> {
  private static final String MODEL = "leaks";
  private static final int WORKERS = 4;
  private static final Duration CALL = Duration.ofSeconds(10);

  @Mixin
  Bench.Common common;

  @Option(names = "--binding", description = "netty (default) or pekko")
  String binding = "netty";

  @Option(names = "--loops", description = "concurrent Book loops (default 256; --quick: 32)")
  Integer loops;

  @Option(names = "--seconds", description = "how long the loops start new Books (default 20; --quick: 2)")
  Integer seconds;

  @Option(names = "--channels", description = "client connections the loops share, loop i on connection i mod n "
      + "(default 1)")
  int channels = 1;

  @Option(names = "--max-books", description = "upper bound on Books sent in all (default 5,000,000)")
  long maxBooks = 5_000_000;

  @Option(names = "--short-deadline-percent", description = "Books with a deadline of 1-5 ms (default 20)")
  int shortDeadlinePercent = 20;

  @Option(names = "--cancel-percent", description = "Books the client cancels 0-2 ms after sending (default 10)")
  int cancelPercent = 10;

  @Option(names = "--lease-seconds", description = "the router's lease; when set, the run waits for leaked bookings "
      + "to expire (e.g. 5)")
  Integer leaseSeconds;

  @Option(names = "--late-cancel-window", description = "the router's kvrouter.grpc.late-cancel-window (netty): how "
      + "long after a Book's answer was written a client's cancel still frees it; 0s turns that off (default: the "
      + "router's, 2s)")
  String lateCancelWindow;

  @Option(names = "--file", description = "results file name under the results directory (default leaks.md)")
  String file = "leaks.md";

  /** What the client saw, summed over every loop. */
  private static final class Counts {
    final LongAdder sent = new LongAdder();
    final LongAdder booked = new LongAdder();
    final LongAdder released = new LongAdder();
    /** Releases that found no booking: the router freed a booking its client had read (it must not). */
    final LongAdder releasedNothing = new LongAdder();
    final LongAdder deadline = new LongAdder();
    final LongAdder cancelled = new LongAdder();
    final Map<String, LongAdder> otherErrors = new ConcurrentHashMap<>();
    /** How each abandoned Book was sent, by request id: to tell which kind the leaked bookings are. */
    final Map<String, String> abandonedKind = new ConcurrentHashMap<>();
  }

  @Override
  public Integer call() throws Exception {
    int loopCount = loops != null ? loops : common.quick ? 32 : 256;
    Duration runFor = Duration.ofSeconds(seconds != null ? seconds : common.quick ? 2 : 20);
    Progress.line("leaks", "%d Book loops for %ds on the %s binding: %d%% with 1-5 ms deadlines, %d%% cancelled",
        loopCount, runFor.toSeconds(), binding, shortDeadlinePercent, cancelPercent);
    Duration lease = leaseSeconds == null ? null : Duration.ofSeconds(leaseSeconds);
    Report report = new Report("Bookings left behind by abandoned Books");
    try (RouterNode node = LoopbackNode.start(routerConfig(lease))) {
      List<ManagedChannel> connections = new ArrayList<>();
      for (int i = 0; i < Math.max(1, channels); i++) {
        connections.add(NettyChannelBuilder.forAddress("127.0.0.1", node.grpcPort()).usePlaintext()
            .directExecutor().build());
      }
      ManagedChannel channel = connections.get(0);
      ScheduledExecutorService cancels = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "leaks-cancel");
        t.setDaemon(true);
        return t;
      });
      try {
        for (int i = 0; i < WORKERS; i++) {
          blocking(channel, WorkersGrpc.getRegisterMethod(), worker(i));
        }
        Counts counts = new Counts();
        long stopAt = System.nanoTime() + runFor.toNanos();
        AtomicLong budget = new AtomicLong(maxBooks);
        CountDownLatch done = new CountDownLatch(loopCount);
        for (int loop = 0; loop < loopCount; loop++) {
          new BookLoop(connections.get(loop % connections.size()), cancels, counts, "l" + loop + "-", stopAt,
              budget, done).next();
        }
        if (!done.await(runFor.toSeconds() + 60, TimeUnit.SECONDS)) {
          throw new IllegalStateException("Book loops did not end within a minute of the run");
        }
        ModelState settled = settledState(channel);
        long abandoned = counts.deadline.sum() + counts.cancelled.sum();
        // a booking the client was not told about is either still live or has expired on a (short) lease
        long leaked = settled.getBookingsCount() + settled.getExpiredBookings();
        Progress.line("leaks", "sent %d, booked and released %d, abandoned %d, leaked %d", counts.sent.sum(),
            counts.released.sum(), abandoned, leaked);
        report.paragraph(String.format(Locale.ROOT, "%d concurrent Book loops for %d s on one router (`%s` binding, "
            + "grpc-java client on loopback over %d connection(s), %d workers, lease %s, late-cancel window %s): "
            + "%d %% of Books with a 1-5 ms deadline, %d %% "
            + "cancelled by the client 0-2 ms after sending, the rest with a 10 s deadline. Every booking the "
            + "client was told about is released; the client never replays. Leaked = bookings live once every "
            + "loop has ended, plus those that expired on their lease during the run; abandoned = Books that "
            + "ended DEADLINE_EXCEEDED or CANCELLED; released, already freed = Releases of a booking the client "
            + "was told about that answered applied = false (the router had freed it: must be 0).", loopCount,
            runFor.toSeconds(), binding, Math.max(1, channels), WORKERS, lease == null ? "300 s" : lease.toSeconds() + " s",
            lateCancelWindow == null ? "2s (default)" : lateCancelWindow, shortDeadlinePercent, cancelPercent));
        report.table(new Report.Table("binding", "Books sent", "booked (all released)",
            "released, already freed", "abandoned: deadline", "abandoned: cancelled", "other errors", "leaked",
            "leaked / abandoned", "max in flight per rank", "target ≤ 1 %")
            .row(binding, counts.sent.sum(), counts.booked.sum(), counts.releasedNothing.sum(),
                counts.deadline.sum(), counts.cancelled.sum(),
                counts.otherErrors.isEmpty() ? "0" : counts.otherErrors.toString(), leaked,
                percent(leaked, abandoned), maxInFlight(settled),
                Report.verdict(leaked <= abandoned / 100.0)));
        report.paragraph("Live bookings at the end by how their Book was sent: " + leakedByKind(settled, counts) + ".");
        if (lease != null) {
          report.paragraph(reclaim(channel, lease, leaked));
        }
      } finally {
        cancels.shutdownNow();
        for (ManagedChannel connection : connections) {
          connection.shutdownNow();
          connection.awaitTermination(5, TimeUnit.SECONDS);
        }
      }
    }
    Path written = report.write(common.outDir(), file);
    Progress.line("leaks", "wrote %s", written);
    return 0;
  }

  private String routerConfig(Duration lease) {
    String config = "kvrouter.grpc.binding = \"" + binding + "\"\n";
    if (lateCancelWindow != null) {
      config += "kvrouter.grpc.late-cancel-window = " + lateCancelWindow + "\n";
    }
    return lease == null ? config : config + "kvrouter.admission.lease = " + lease.toMillis() + "ms\n";
  }

  /** One client loop: Book, release what it was told about, next Book, until the run's end or the budget. */
  private final class BookLoop {
    private final ManagedChannel channel;
    private final ScheduledExecutorService cancels;
    private final Counts counts;
    private final String prefix;
    private final long stopAt;
    private final AtomicLong budget;
    private final CountDownLatch done;
    private long sequence;

    BookLoop(ManagedChannel channel, ScheduledExecutorService cancels, Counts counts, String prefix, long stopAt,
        AtomicLong budget, CountDownLatch done) {
      this.channel = channel;
      this.cancels = cancels;
      this.counts = counts;
      this.prefix = prefix;
      this.stopAt = stopAt;
      this.budget = budget;
      this.done = done;
    }

    void next() {
      if (System.nanoTime() >= stopAt || budget.decrementAndGet() < 0) {
        done.countDown();
        return;
      }
      counts.sent.increment();
      int roll = ThreadLocalRandom.current().nextInt(100);
      boolean shortDeadline = roll < shortDeadlinePercent;
      boolean cancel = !shortDeadline && roll < shortDeadlinePercent + cancelPercent;
      long deadlineMicros = shortDeadline ? ThreadLocalRandom.current().nextLong(1_000, 5_001) : CALL.toNanos() / 1000;
      RouteRequest request = RouteRequest.newBuilder().setModel(MODEL).setRequestId(prefix + sequence++)
          .setIslTokens(64).build();
      ClientCall<RouteRequest, Booking> call = channel.newCall(RouterGrpc.getBookMethod(),
          CallOptions.DEFAULT.withDeadlineAfter(deadlineMicros, TimeUnit.MICROSECONDS));
      unary(call, request).whenComplete((booking, failure) -> {
        if (failure == null) {
          counts.booked.increment();
          release(booking);
          return;
        }
        Status status = Status.fromThrowable(failure);
        switch (status.getCode()) {
          case DEADLINE_EXCEEDED, CANCELLED -> {
            (status.getCode() == Status.Code.CANCELLED ? counts.cancelled : counts.deadline).increment();
            counts.abandonedKind.put(request.getRequestId(),
                shortDeadline ? "1-5 ms deadline" : cancel ? "cancelled" : "10 s deadline");
          }
          default -> counts.otherErrors.computeIfAbsent(status.getCode() + " "
              + ReasonTrailer.of(Status.trailersFromThrowable(failure)), k -> new LongAdder()).increment();
        }
        next();
      });
      if (cancel) {
        cancels.schedule(() -> call.cancel("the client gave up", null),
            ThreadLocalRandom.current().nextLong(0, 2_001), TimeUnit.MICROSECONDS);
      }
    }

    private void release(Booking booking) {
      BookingRef ref = BookingRef.newBuilder().setModel(MODEL).setRequestId(booking.getRequestId())
          .setAttempt(booking.getAttempt()).build();
      ClientCall<BookingRef, Released> call = channel.newCall(RouterGrpc.getReleaseMethod(),
          CallOptions.DEFAULT.withDeadlineAfter(CALL.toMillis(), TimeUnit.MILLISECONDS));
      unary(call, ref).whenComplete((released, failure) -> {
        if (failure == null) {
          counts.released.increment();
          if (!released.getApplied()) {
            counts.releasedNothing.increment();
          }
        } else {
          counts.otherErrors.computeIfAbsent("Release " + Status.fromThrowable(failure).getCode(),
              k -> new LongAdder()).increment();
        }
        next();
      });
    }
  }

  /** Starts a unary call; the future completes with its answer or fails with its status. */
  private static <Q, R> CompletableFuture<R> unary(ClientCall<Q, R> call, Q request) {
    return Unary.start(call, request).thenApply(Unary.Answer::message);
  }

  private static <Q, R> R blocking(ManagedChannel channel, MethodDescriptor<Q, R> method, Q request)
      throws Exception {
    ClientCall<Q, R> call = channel.newCall(method,
        CallOptions.DEFAULT.withDeadlineAfter(CALL.toMillis(), TimeUnit.MILLISECONDS));
    return unary(call, request).get(CALL.toSeconds() + 1, TimeUnit.SECONDS);
  }

  /**
   * The model's state once CancelBooks still in flight have landed: read until three reads 200 ms apart agree on
   * the live bookings (at most 10 s).
   */
  private static ModelState settledState(ManagedChannel channel) throws Exception {
    ModelState last = state(channel);
    int agreeing = 0;
    long giveUpAt = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (agreeing < 2 && System.nanoTime() < giveUpAt) {
      Thread.sleep(200);
      ModelState now = state(channel);
      agreeing = now.getBookingsCount() == last.getBookingsCount() ? agreeing + 1 : 0;
      last = now;
    }
    return last;
  }

  /** Waits for the leaked bookings to expire on the lease: lease + two expiry intervals + 10 s at most. */
  private static String reclaim(ManagedChannel channel, Duration lease, long leaked) throws Exception {
    long start = System.nanoTime();
    int live = state(channel).getBookingsCount();
    long giveUpAt = start + lease.toNanos() + TimeUnit.SECONDS.toNanos(12);
    ModelState state = state(channel);
    while (state.getBookingsCount() > 0 && System.nanoTime() < giveUpAt) {
      Thread.sleep(250);
      state = state(channel);
    }
    double waited = (System.nanoTime() - start) / 1e9;
    String outcome = state.getBookingsCount() == 0
        ? String.format(Locale.ROOT, "all reclaimed %.1f s after the loops ended", waited)
        : String.format(Locale.ROOT, "**%d still live** %.1f s after the loops ended", state.getBookingsCount(),
            waited);
    Progress.line("leaks", "lease %ds: %s (%d expired)", lease.toSeconds(), outcome, state.getExpiredBookings());
    return String.format(Locale.ROOT, "Lease check (lease %d s, expiry interval 1 s): of %d leaked booking(s), "
        + "%d were live when the loops ended: %s; the model counts %d expired booking(s) in all.", lease.toSeconds(),
        leaked, live, outcome, state.getExpiredBookings());
  }

  private static ModelState state(ManagedChannel channel) throws Exception {
    return blocking(channel, AdminGrpc.getGetModelStateMethod(),
        ModelStateRequest.newBuilder().setModel(MODEL).build());
  }

  private static String leakedByKind(ModelState state, Counts counts) {
    Map<String, Integer> byKind = new java.util.TreeMap<>();
    state.getBookingsList().forEach(b ->
        byKind.merge(counts.abandonedKind.getOrDefault(b.getRequestId(), "answered to the client"), 1, Integer::sum));
    return byKind.isEmpty() ? "none" : byKind.toString();
  }

  private static int maxInFlight(ModelState state) {
    int max = 0;
    for (WorkerState worker : state.getWorkersList()) {
      for (RankState rank : worker.getRanksList()) {
        max = Math.max(max, rank.getLiveBookings());
      }
    }
    return max;
  }

  private static String percent(long part, long whole) {
    return whole == 0 ? "–" : String.format(Locale.ROOT, "%.2f %%", 100.0 * part / whole);
  }

  private static WorkerRegistration worker(int i) {
    return WorkerRegistration.newBuilder().setModel(MODEL).setWorkerId("w" + i).setDpSize(1)
        // room for every outstanding Book, so none queues or is rejected on capacity
        .setMaxNumBatchedTokens(1 << 22).setTotalKvBlocks(1 << 20).setBlockSize(16)
        .setEndpoint("http://10.0.0." + (i + 1) + ":8000").build();
  }
}
