package io.kvrouter.bench.transport;

import io.grpc.CallOptions;
import io.grpc.ClientCall;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.kvrouter.api.v1.Booking;
import io.kvrouter.api.v1.BookingRef;
import io.kvrouter.api.v1.Released;
import io.kvrouter.api.v1.RouteRequest;
import io.kvrouter.api.v1.RouterGrpc;
import io.kvrouter.api.v1.Selection;
import io.kvrouter.bench.transport.Bodies.Body;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import org.HdrHistogram.Histogram;
import org.HdrHistogram.Recorder;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine;

/**
 * The load driver, in its own process: grpc-java channels (one connection each) over grpc-netty-shaded, each with a
 * bounded number of outstanding unary calls, a warm-up then a fixed measured window per point. For every point it
 * prints one {@code RESULT k=v ...} line: operations, latency (HdrHistogram), grpc-status outcomes, and the CPU the
 * server process and this process spent in the window (from {@code /proc/<pid>/stat}).
 *
 * <p>A point is {@code mode:body:connections}; mode {@code select} is one Select per operation, {@code pair} a Book
 * with a unique request_id followed by the Release of the returned attempt.
 */
@Command(name = "transport-load-driver", mixinStandardHelpOptions = true)
public final class LoadDriver implements Callable<Integer> {
  @Option(names = "--port", required = true)
  int port;

  @Option(names = "--server-pid", required = true)
  long serverPid;

  @Option(names = "--points", required = true, split = ",", description = "mode:body:connections, ...")
  List<String> points;

  @Option(names = "--outstanding", defaultValue = "8", description = "outstanding calls per connection")
  int outstanding;

  @Option(names = "--warmup-first-ms", defaultValue = "5000")
  long warmupFirstMs;

  @Option(names = "--warmup-ms", defaultValue = "2000")
  long warmupMs;

  @Option(names = "--measure-ms", defaultValue = "10000")
  long measureMs;

  @Option(names = "--max-ops", defaultValue = "20000000", description = "operations per point, warm-up included")
  long maxOps;

  @Option(names = "--deadline-ms", defaultValue = "10000")
  long deadlineMs;

  @Option(names = "--clk-tck", defaultValue = "0")
  long clockTicks;

  @Option(names = "--versus-port", defaultValue = "0",
      description = "alternate the load between --port and this server, in slices, and report both")
  int versusPort;

  @Option(names = "--versus-pid", defaultValue = "0")
  long versusPid;

  @Option(names = "--slice-ms", defaultValue = "1000", description = "alternating mode: load on one server at a time")
  long sliceMs;

  static final int MAX_POINT_SECONDS = 300;

  enum Mode { SELECT, PAIR }

  record Point(Mode mode, Body body, int connections) {
    static Point parse(String text) {
      String[] parts = text.split(":");
      return new Point(Mode.valueOf(parts[0].toUpperCase(Locale.ROOT)), Body.of(parts[1]),
          Integer.parseInt(parts[2]));
    }

    String key() {
      return mode.name().toLowerCase(Locale.ROOT) + ":" + body.key + ":" + connections;
    }
  }

  public static void main(String[] args) {
    System.exit(new CommandLine(new LoadDriver()).execute(args));
  }

  @Override
  public Integer call() throws Exception {
    if (clockTicks <= 0) {
      clockTicks = ProcStat.clockTicksPerSecond();
    }
    List<Point> parsed = points.stream().map(Point::parse).toList();
    // Probe first with the exact bodies: one call of each kind must succeed and decode.
    Map<String, Boolean> probed = new LinkedHashMap<>();
    for (Point point : parsed) {
      String key = point.mode + ":" + point.body;
      if (probed.putIfAbsent(key, Boolean.TRUE) == null) {
        String failure = probe(point);
        if (failure != null) {
          System.out.println("PROBE-FAILED mode=" + point.mode + " body=" + point.body.key + " " + failure);
          return 2;
        }
      }
    }
    if (versusPort > 0) {
      for (Point point : parsed) {
        for (String line : alternate(point)) {
          System.out.println(line);
        }
        System.out.flush();
      }
      return 0;
    }
    Mode previousMode = null;
    for (Point point : parsed) {
      // the first point of each call kind runs code the server has not compiled yet: give it the long warm-up
      boolean fresh = !point.mode.equals(previousMode);
      System.out.println(run(point, fresh ? warmupFirstMs : warmupMs));
      System.out.flush();
      previousMode = point.mode;
    }
    return 0;
  }

  private ManagedChannel channel() {
    return channel(port);
  }

  private static ManagedChannel channel(int port) {
    return NettyChannelBuilder.forAddress("127.0.0.1", port)
        .usePlaintext()
        .directExecutor()
        .maxInboundMessageSize(16 << 20)
        .build();
  }

  private String probe(Point point) {
    ManagedChannel channel = channel();
    try {
      RouteRequest request = Bodies.request(point.body);
      Duration timeout = Duration.ofSeconds(10);
      String detail;
      Metadata headers;
      if (point.mode == Mode.SELECT) {
        Unary.Answer<Selection> answer = Unary.call(channel, RouterGrpc.getSelectMethod(), request, timeout);
        Selection selection = answer.message();
        if (selection.getWorker().getWorkerId().isEmpty()) {
          return "reason=no-worker-in-selection";
        }
        headers = answer.headers();
        detail = "worker=" + selection.getWorker().getWorkerId() + " overlap_blocks=" + selection.getOverlapBlocks()
            + " cached_tokens=" + selection.getCachedTokens() + " cost=" + selection.getCost()
            + " policy=" + selection.getPolicy();
      } else {
        String id = "probe-" + ProcessHandle.current().pid() + "-" + point.body.key;
        Unary.Answer<Booking> booked = Unary.call(channel, RouterGrpc.getBookMethod(),
            request.toBuilder().setRequestId(id).build(), timeout);
        Booking booking = booked.message();
        if (booking.getAttempt() == 0 || booking.getSelection().getWorker().getWorkerId().isEmpty()) {
          return "reason=booking-without-attempt-or-worker";
        }
        Released released = Unary.call(channel, RouterGrpc.getReleaseMethod(), BookingRef.newBuilder()
            .setModel(request.getModel()).setRequestId(id).setAttempt(booking.getAttempt()).build(), timeout)
            .message();
        if (!released.getApplied()) {
          return "reason=release-not-applied";
        }
        headers = booked.headers();
        detail = "worker=" + booking.getSelection().getWorker().getWorkerId() + " attempt=" + booking.getAttempt()
            + " released=true";
      }
      String server = headers.get(Unary.SERVER);
      System.out.println("PROBE-OK mode=" + point.mode + " body=" + point.body.key + " request_bytes="
          + request.getSerializedSize() + " server=" + (server == null ? "-" : server.replace(' ', '_')) + " "
          + detail);
      return null;
    } catch (StatusRuntimeException e) {
      return "status=" + Unary.describe(e).replace(' ', '_');
    } finally {
      channel.shutdownNow();
    }
  }

  /** Counters shared by every call of a point. */
  static final class Stats {
    final Recorder latency = new Recorder(3);
    final ConcurrentHashMap<String, LongAdder> outcomes = new ConcurrentHashMap<>();
    final LongAdder operations = new LongAdder();
    final AtomicLong started = new AtomicLong();

    void count(String what) {
      outcomes.computeIfAbsent(what, k -> new LongAdder()).increment();
    }

    Map<String, Long> snapshot() {
      Map<String, Long> copy = new TreeMap<>();
      outcomes.forEach((k, v) -> copy.put(k, v.sum()));
      return copy;
    }
  }

  private String run(Point point, long warmup) throws InterruptedException {
    Stats stats = new Stats();
    AtomicBoolean running = new AtomicBoolean(true);
    AtomicInteger inFlight = new AtomicInteger();
    // non-OK answers are retried from here so that a failing channel cannot recurse on the event loop
    ExecutorService retry = Executors.newSingleThreadExecutor();
    List<ManagedChannel> channels = new ArrayList<>();
    RouteRequest base = Bodies.request(point.body);
    String idPrefix = "b" + ProcessHandle.current().pid() + "-" + System.nanoTime() + "-";
    AtomicLong ids = new AtomicLong();
    CallOptions options = CallOptions.DEFAULT;
    try {
      for (int c = 0; c < point.connections; c++) {
        ManagedChannel channel = channel();
        channels.add(channel);
        // connect each channel with one call before the load starts
        Unary.call(channel, RouterGrpc.getSelectMethod(), base, Duration.ofSeconds(10));
      }
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(MAX_POINT_SECONDS);
      for (ManagedChannel channel : channels) {
        for (int k = 0; k < outstanding; k++) {
          Slot slot = new Slot(point.mode, channel, base, options, stats, running, inFlight, retry, idPrefix, ids);
          inFlight.incrementAndGet();
          slot.next();
        }
      }
      Thread.sleep(warmup);
      Map<String, Long> before = stats.snapshot();
      long opsBefore = stats.operations.sum();
      stats.latency.getIntervalHistogram();
      long serverBefore = ProcStat.cpuTicks(serverPid);
      long jitBefore = ProcStat.compilerTicks(serverPid);
      long selfBefore = ProcStat.cpuTicks(ProcessHandle.current().pid());
      long machineBefore = ProcStat.machineBusyTicks();
      long t0 = System.nanoTime();
      Thread.sleep(Math.min(measureMs, TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime())));
      long serverAfter = ProcStat.cpuTicks(serverPid);
      long jitAfter = ProcStat.compilerTicks(serverPid);
      long selfAfter = ProcStat.cpuTicks(ProcessHandle.current().pid());
      long machineAfter = ProcStat.machineBusyTicks();
      long t1 = System.nanoTime();
      long opsAfter = stats.operations.sum();
      Histogram histogram = stats.latency.getIntervalHistogram();
      Map<String, Long> after = stats.snapshot();
      running.set(false);
      long drainUntil = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
      while (inFlight.get() > 0 && System.nanoTime() < drainUntil) {
        Thread.sleep(10);
      }
      long ops = opsAfter - opsBefore;
      double seconds = (t1 - t0) / 1e9;
      StringBuilder outcomes = new StringBuilder();
      for (Map.Entry<String, Long> entry : after.entrySet()) {
        long delta = entry.getValue() - before.getOrDefault(entry.getKey(), 0L);
        if (delta > 0) {
          outcomes.append(outcomes.length() == 0 ? "" : ";").append(entry.getKey()).append('=').append(delta);
        }
      }
      double tickMicros = 1e6 / clockTicks;
      return String.format(Locale.ROOT,
          "RESULT point=%s ops=%d seconds=%.3f ops_per_s=%.1f p50_us=%.1f p99_us=%.1f mean_us=%.1f"
              + " server_ticks=%d client_ticks=%d server_us_per_op=%.2f client_us_per_op=%.2f outcomes=%s"
              + " other_cores=%.2f in_flight_left=%d server_jit_us_per_op=%.2f",
          point.key(), ops, seconds, ops / seconds,
          histogram.getValueAtPercentile(50) / 1e3, histogram.getValueAtPercentile(99) / 1e3,
          histogram.getMean() / 1e3, serverAfter - serverBefore, selfAfter - selfBefore,
          ops == 0 ? Double.NaN : (serverAfter - serverBefore) * tickMicros / ops,
          ops == 0 ? Double.NaN : (selfAfter - selfBefore) * tickMicros / ops,
          outcomes.length() == 0 ? "-" : outcomes,
          // CPU the rest of the machine used in the window (other processes), in cores
          ((machineAfter - machineBefore) - (serverAfter - serverBefore) - (selfAfter - selfBefore))
              / (double) clockTicks / seconds,
          inFlight.get(), ops == 0 ? Double.NaN : (jitAfter - jitBefore) * tickMicros / ops);
    } catch (StatusRuntimeException e) {
      return "RESULT point=" + point.key() + " error=" + Unary.describe(e).replace(' ', '_');
    } finally {
      running.set(false);
      for (ManagedChannel channel : channels) {
        channel.shutdownNow();
      }
      for (ManagedChannel channel : channels) {
        channel.awaitTermination(5, TimeUnit.SECONDS);
      }
      retry.shutdownNow();
    }
  }

  /** One server under alternating load: its connections and what was measured on it. */
  private final class Side {
    final String name;
    final long pid;
    final List<ManagedChannel> channels = new ArrayList<>();
    final Stats stats = new Stats();
    final org.HdrHistogram.Histogram latency = new org.HdrHistogram.Histogram(3);
    long ops;
    long serverTicks;
    long jitTicks;
    long nanos;

    Side(String name, int port, long pid, Point point, RouteRequest base) {
      this.name = name;
      this.pid = pid;
      for (int c = 0; c < point.connections; c++) {
        ManagedChannel channel = channel(port);
        channels.add(channel);
        Unary.call(channel, RouterGrpc.getSelectMethod(), base, Duration.ofSeconds(10));
      }
    }

    /** Loads this server alone for one slice, then waits for its calls to drain; adds to the totals if measured. */
    void slice(Point point, RouteRequest base, ExecutorService retry, String idPrefix, AtomicLong ids,
        boolean measured) throws InterruptedException {
      AtomicBoolean running = new AtomicBoolean(true);
      AtomicInteger inFlight = new AtomicInteger();
      long opsBefore = stats.operations.sum();
      long ticksBefore = ProcStat.cpuTicks(pid);
      long jitBefore = ProcStat.compilerTicks(pid);
      long t0 = System.nanoTime();
      for (ManagedChannel channel : channels) {
        for (int k = 0; k < outstanding; k++) {
          inFlight.incrementAndGet();
          new Slot(point.mode, channel, base, CallOptions.DEFAULT, stats, running, inFlight, retry, idPrefix, ids)
              .next();
        }
      }
      Thread.sleep(sliceMs);
      running.set(false);
      long drainUntil = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
      while (inFlight.get() > 0 && System.nanoTime() < drainUntil) {
        Thread.sleep(1);
      }
      org.HdrHistogram.Histogram interval = stats.latency.getIntervalHistogram();
      if (measured) {
        nanos += System.nanoTime() - t0;
        ops += stats.operations.sum() - opsBefore;
        serverTicks += ProcStat.cpuTicks(pid) - ticksBefore;
        jitTicks += ProcStat.compilerTicks(pid) - jitBefore;
        latency.add(interval);
      }
    }

    void close() throws InterruptedException {
      for (ManagedChannel channel : channels) {
        channel.shutdownNow();
      }
      for (ManagedChannel channel : channels) {
        channel.awaitTermination(5, TimeUnit.SECONDS);
      }
    }
  }

  /**
   * The same point on two servers, load alternating between them in {@code --slice-ms} slices (only one is loaded
   * at a time, both stay warm): warm-up slices, then measured slices totalling {@code --measure-ms} per server.
   * The host's speed drifts over minutes; slices a second apart see the same host, so the two servers' CPU per call
   * compare like for like. One RESULT line per server, {@code side=a} for --port and {@code side=b} for the other.
   */
  private List<String> alternate(Point point) throws InterruptedException {
    RouteRequest base = Bodies.request(point.body);
    String idPrefix = "v" + ProcessHandle.current().pid() + "-" + System.nanoTime() + "-";
    AtomicLong ids = new AtomicLong();
    ExecutorService retry = Executors.newSingleThreadExecutor();
    Side a = null;
    Side b = null;
    try {
      a = new Side("a", port, serverPid, point, base);
      b = new Side("b", versusPort, versusPid, point, base);
      long warmupSlices = Math.max(1, warmupFirstMs / sliceMs);
      long measuredSlices = Math.max(1, measureMs / sliceMs);
      for (long k = 0; k < warmupSlices + measuredSlices; k++) {
        boolean measured = k >= warmupSlices;
        // swap the order every slice pair so neither server always follows the other
        Side first = (k & 1) == 0 ? a : b;
        Side second = first == a ? b : a;
        first.slice(point, base, retry, idPrefix, ids, measured);
        second.slice(point, base, retry, idPrefix, ids, measured);
      }
      double tickMicros = 1e6 / clockTicks;
      List<String> lines = new ArrayList<>();
      for (Side side : List.of(a, b)) {
        double seconds = side.nanos / 1e9;
        StringBuilder outcomes = new StringBuilder();
        side.stats.snapshot().forEach((k, v) -> outcomes.append(outcomes.length() == 0 ? "" : ";").append(k)
            .append('=').append(v));
        lines.add(String.format(Locale.ROOT,
            "RESULT point=%s side=%s ops=%d seconds=%.3f ops_per_s=%.1f p50_us=%.1f p99_us=%.1f mean_us=%.1f"
                + " server_ticks=%d client_ticks=0 server_us_per_op=%.2f client_us_per_op=NaN outcomes=%s"
                + " other_cores=NaN in_flight_left=0 server_jit_us_per_op=%.2f",
            point.key(), side.name, side.ops, seconds, side.ops / seconds,
            side.latency.getValueAtPercentile(50) / 1e3, side.latency.getValueAtPercentile(99) / 1e3,
            side.latency.getMean() / 1e3, side.serverTicks,
            side.ops == 0 ? Double.NaN : side.serverTicks * tickMicros / side.ops,
            outcomes.length() == 0 ? "-" : outcomes,
            side.ops == 0 ? Double.NaN : side.jitTicks * tickMicros / side.ops));
      }
      return lines;
    } catch (StatusRuntimeException e) {
      return List.of("RESULT point=" + point.key() + " error=" + Unary.describe(e).replace(' ', '_'));
    } finally {
      if (a != null) {
        a.close();
      }
      if (b != null) {
        b.close();
      }
      retry.shutdownNow();
    }
  }

  /** One outstanding operation slot: issues the next operation when the previous one closes. */
  final class Slot {
    private final Mode mode;
    private final ManagedChannel channel;
    private final RouteRequest base;
    private final CallOptions options;
    private final Stats stats;
    private final AtomicBoolean running;
    private final AtomicInteger inFlight;
    private final ExecutorService retry;
    private final String idPrefix;
    private final AtomicLong ids;

    Slot(Mode mode, ManagedChannel channel, RouteRequest base, CallOptions options, Stats stats,
        AtomicBoolean running, AtomicInteger inFlight, ExecutorService retry, String idPrefix, AtomicLong ids) {
      this.mode = mode;
      this.channel = channel;
      this.base = base;
      this.options = options;
      this.stats = stats;
      this.running = running;
      this.inFlight = inFlight;
      this.retry = retry;
      this.idPrefix = idPrefix;
      this.ids = ids;
    }

    void next() {
      if (!running.get() || stats.started.incrementAndGet() > maxOps) {
        inFlight.decrementAndGet();
        return;
      }
      long start = System.nanoTime();
      if (mode == Mode.SELECT) {
        unary(RouterGrpc.getSelectMethod(), base, (status, selection) -> finish("select", status, start));
      } else {
        String id = idPrefix + ids.incrementAndGet();
        unary(RouterGrpc.getBookMethod(), base.toBuilder().setRequestId(id).build(), (status, booking) -> {
          if (!status.isOk()) {
            finish("book", status, start);
            return;
          }
          BookingRef ref = BookingRef.newBuilder().setModel(base.getModel()).setRequestId(id)
              .setAttempt(booking.getAttempt()).build();
          unary(RouterGrpc.getReleaseMethod(), ref, (released, answer) -> {
            if (released.isOk() && !answer.getApplied()) {
              stats.count("release.NOT_APPLIED");
            }
            stats.count("book.OK");
            finish("release", released, start);
          });
        });
      }
    }

    private void finish(String method, Status status, long start) {
      stats.latency.recordValue(System.nanoTime() - start);
      stats.count(method + "." + status.getCode());
      stats.operations.increment();
      if (status.isOk()) {
        next();
      } else {
        try {
          retry.execute(this::next);
        } catch (RuntimeException e) {
          inFlight.decrementAndGet();
        }
      }
    }

    private <Q, R> void unary(io.grpc.MethodDescriptor<Q, R> method, Q request, Done<R> done) {
      ClientCall<Q, R> call = channel.newCall(method,
          options.withDeadlineAfter(deadlineMs, TimeUnit.MILLISECONDS));
      call.start(new ClientCall.Listener<>() {
        private R answer;

        @Override
        public void onMessage(R message) {
          answer = message;
        }

        @Override
        public void onClose(Status status, Metadata trailers) {
          done.closed(status.isOk() && answer == null ? Status.INTERNAL.withDescription("no message") : status,
              answer);
        }
      }, new Metadata());
      call.request(2);
      call.sendMessage(request);
      call.halfClose();
    }
  }

  @FunctionalInterface
  interface Done<R> {
    void closed(Status status, R answer);
  }
}
