package io.kvrouter.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.LongAdder;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.AskPattern;
import org.apache.pekko.actor.typed.javadsl.Behaviors;

/**
 * The JDK common pool on a small host: with parallelism 1 (the JDK's default on 2 cores) every async stage without
 * an executor starts a thread, and a Pekko Java ask's continuations are such stages. Each measurement is a child JVM
 * ({@link Probe}) chaining asks to a trivial actor from 16 callers, once with the common pool at parallelism 1 and
 * once at 4, alternating; it reports asks per second, CPU per ask and the threads the JVM started.
 */
final class CommonPoolBench {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final int CALLERS = 16;
  /** The probe's result line starts with this (the child's log lines share its stdout). */
  private static final String RESULT = "COMMON-POOL-PROBE ";

  private CommonPoolBench() {}

  static List<Path> run(Path out, boolean quick) throws Exception {
    Duration duration = quick ? Duration.ofMillis(500) : Duration.ofSeconds(5);
    int rounds = quick ? 1 : 2;
    Report report = new Report("The JDK common pool and Pekko's Java ask");
    Report.Table table = new Report.Table("round", "common pool parallelism", "asks/s", "CPU µs per ask",
        "threads started", "relative asks/s");
    for (int round = 1; round <= rounds; round++) {
      JsonNode four = probe(4, duration);
      JsonNode one = probe(1, duration);
      for (JsonNode r : List.of(one, four)) {
        table.row(round, r.get("parallelism").asInt(), Report.rate(r.get("asksPerSecond").asDouble()),
            String.format(Locale.ROOT, "%.2f", r.get("cpuMicrosPerAsk").asDouble()),
            r.get("threadsStarted").asLong(), String.format(Locale.ROOT, "%.3f×",
                r.get("asksPerSecond").asDouble() / four.get("asksPerSecond").asDouble()));
      }
    }
    report.table(table);
    report.paragraph("Each row is a child JVM (`-Xmx256m`) running " + CALLERS + " callers for " + duration.toMillis()
        + " ms after 1 s of warm-up: each caller sends the next `AskPattern.ask` to a trivial typed actor from the "
        + "completion of its last (`whenComplete` without an executor, as code that does not pass one does). CPU is "
        + "the child process's CPU time over the measured window; threads started is the JVM's total started "
        + "thread count at the end. At parallelism 1 every such stage runs on a new thread (the JDK's fallback "
        + "when the common pool cannot run it), which is why every kvrouter JVM sets "
        + "`-Djava.util.concurrent.ForkJoinPool.common.parallelism=4` and hot paths pass an executor.");
    return List.of(report.write(out, "common-pool.md"));
  }

  private static JsonNode probe(int parallelism, Duration duration) throws IOException, InterruptedException {
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    Process process = new ProcessBuilder(java, "-Xmx256m",
        "-Djava.util.concurrent.ForkJoinPool.common.parallelism=" + parallelism,
        "-cp", System.getProperty("java.class.path"), Probe.class.getName(), Long.toString(duration.toMillis()))
        .redirectError(ProcessBuilder.Redirect.INHERIT).start();
    String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    if (!process.waitFor(duration.toSeconds() + 60, TimeUnit.SECONDS) || process.exitValue() != 0) {
      process.destroyForcibly();
      throw new IOException("the common-pool probe at parallelism " + parallelism + " failed: " + output);
    }
    for (String line : output.split("\n")) {
      if (line.startsWith(RESULT)) {
        return JSON.readTree(line.substring(RESULT.length()));
      }
    }
    throw new IOException("the common-pool probe at parallelism " + parallelism + " printed no result: " + output);
  }

  /** The child JVM: chained asks from {@link #CALLERS} callers; prints one JSON line. */
  static final class Probe {
    record Ping(ActorRef<Boolean> replyTo) {}

    public static void main(String[] args) throws Exception {
      long millis = Long.parseLong(args[0]);
      Behavior<Ping> echo = Behaviors.receiveMessage(ping -> {
        ping.replyTo().tell(Boolean.TRUE);
        return Behaviors.same();
      });
      ActorSystem<Ping> system = ActorSystem.create(echo, "common-pool-probe");
      try {
        LongAdder asks = new LongAdder();
        AtomicBoolean stop = new AtomicBoolean();
        for (int i = 0; i < CALLERS; i++) {
          next(system, asks, stop);
        }
        Thread.sleep(1000); // warm-up: the measured window starts below
        long cpuBefore = processCpuNanos();
        long asksBefore = asks.sum();
        long start = System.nanoTime();
        Thread.sleep(millis);
        long elapsed = System.nanoTime() - start;
        long count = asks.sum() - asksBefore;
        long cpu = processCpuNanos() - cpuBefore;
        stop.set(true);
        System.out.println(RESULT + JSON.writeValueAsString(java.util.Map.of(
            "parallelism", ForkJoinPool.getCommonPoolParallelism(),
            "asksPerSecond", count * 1e9 / elapsed,
            "cpuMicrosPerAsk", count == 0 ? 0 : cpu / 1000.0 / count,
            "threadsStarted", ManagementFactory.getThreadMXBean().getTotalStartedThreadCount())));
      } finally {
        system.terminate();
        system.getWhenTerminated().toCompletableFuture().get(30, TimeUnit.SECONDS);
      }
    }

    private static void next(ActorSystem<Ping> system, LongAdder asks, AtomicBoolean stop) {
      if (stop.get()) {
        return;
      }
      CompletionStage<Boolean> reply = AskPattern.ask(system, Ping::new, Duration.ofSeconds(5), system.scheduler());
      reply.whenComplete((answer, failure) -> {
        asks.increment();
        next(system, asks, stop);
      });
    }

    private static long processCpuNanos() {
      return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean())
          .getProcessCpuTime();
    }
  }
}
