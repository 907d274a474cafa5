package io.kvrouter.bench;

import io.kvrouter.cluster.admission.ModelClient;
import io.kvrouter.core.selection.SelectionRequest;
import io.kvrouter.core.testkit.Requests;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import org.HdrHistogram.AbstractHistogram;
import org.apache.pekko.cluster.sharding.typed.javadsl.EntityRef;

/**
 * Book throughput of one model through its admission actor (each caller books, then releases what it booked, then
 * books again, chained), next to a trivial ask to a bench-local sharded entity that only replies, at the same caller
 * counts in the same run. Both entity types run on the admission dispatcher, whose mailbox the bench replaces with
 * {@link CountingMailbox} to record the maximum mailbox depth.
 */
final class AdmissionBench {
  record Settings(int workers, int threads, int books, int warmupRounds, int rounds, int[] callers,
      long capMillis) {
    static Settings defaults(boolean quick) {
      return quick
          ? new Settings(4, 4, 1_000, 1, 1, new int[] {16, 256}, 20_000)
          : new Settings(4, 4, 20_000, 3, 5, new int[] {16, 256}, 60_000);
    }
  }

  record Row(int callers, Callers.Result books, long admissionMaxDepth, double messagesPerCycle,
      Callers.Result asks, long echoMaxDepth, String bookRange, String askRange, Callers.Result booksOnly,
      Callers.Result directAsks) {
    double ratio() {
      return books.callsPerSecond() / asks.callsPerSecond();
    }

    double bookOnlyRatio() {
      return booksOnly.callsPerSecond() / asks.callsPerSecond();
    }

    double bookOnlyDirectRatio() {
      return booksOnly.callsPerSecond() / directAsks.callsPerSecond();
    }
  }

  private AdmissionBench() {}

  static List<Path> run(Path out, boolean quick) {
    Settings s = Settings.defaults(quick);
    List<Row> rows = new ArrayList<>();
    List<String> owners;
    ExecutorService pool = Fixtures.pool("caller", s.threads());
    AbstractHistogram[] latency = Callers.histograms(256);
    CountingMailbox.forgetAll();
    try (BenchCluster cluster = BenchCluster.start("bench-admission", true)) {
      ModelClient client = cluster.model(Fixtures.MODEL, s.workers(), "least_in_flight");
      EntityRef<BenchCluster.Ping> echo = cluster.echo("echo-0");
      org.apache.pekko.actor.typed.ActorRef<BenchCluster.Ping> echoHere =
          BenchCluster.join(echo.ask(BenchCluster.Ping::new, BenchCluster.TIMEOUT)).from();
      String encoded = URLEncoder.encode(Fixtures.MODEL, StandardCharsets.UTF_8);
      CountingMailbox.Counting admissionBox = CountingMailbox.find(
          p -> p.startsWith("/system/sharding/ModelAdmission/") && p.endsWith("/" + encoded));
      CountingMailbox.Counting echoBox = CountingMailbox.find(
          p -> p.startsWith("/system/sharding/BenchEcho/") && p.endsWith("/echo-0"));
      owners = new ArrayList<>(CountingMailbox.owners());
      if (admissionBox == null || echoBox == null) {
        throw new IllegalStateException("the counting mailbox is not in use by the admission dispatcher's actors; "
            + "actors using it: " + owners);
      }
      SelectionRequest[] requests = new SelectionRequest[256];
      for (int i = 0; i < requests.length; i++) {
        requests[i] = Requests.of(Fixtures.MODEL, "book-" + i, 512);
      }
      Duration askTimeout = Duration.ofSeconds(5);
      Callers.AsyncCall book = caller -> client.book(requests[caller], null)
          .thenComposeAsync(answer -> client.release(answer.requestId(), answer.attempt(), null), pool);
      Callers.AsyncCall ask = caller -> echo.ask(BenchCluster.Ping::new, askTimeout);
      // the same ask straight to the entity's ActorRef, skipping the region as the router's own commands do
      Callers.AsyncCall askDirect = caller -> org.apache.pekko.actor.typed.javadsl.AskPattern.ask(echoHere,
          BenchCluster.Ping::new, askTimeout, cluster.system.scheduler());
      // Books alone: every call books a fresh request id; the bookings are released after the round, untimed
      java.util.concurrent.atomic.AtomicLong ids = new java.util.concurrent.atomic.AtomicLong();
      java.util.concurrent.ConcurrentLinkedQueue<io.kvrouter.core.admission.BookingAnswer> held =
          new java.util.concurrent.ConcurrentLinkedQueue<>();
      Callers.AsyncCall bookOnly = caller -> client.book(
              Requests.of(Fixtures.MODEL, "only-" + ids.incrementAndGet(), 512), null)
          .thenAcceptAsync(held::add, pool);
      for (int round = 1; round <= s.warmupRounds(); round++) {
        Progress.line("admission", "warm-up round %d/%d", round, s.warmupRounds());
        for (int callers : s.callers()) {
          Callers.runChained(pool, callers, s.books(), latency, s.capMillis(), book);
          Callers.runChained(pool, callers, s.books(), latency, s.capMillis(), ask);
          Callers.runChained(pool, callers, s.books(), latency, s.capMillis(), askDirect);
        }
      }
      for (int callers : s.callers()) {
        List<Callers.Result> bookRuns = new ArrayList<>();
        List<Callers.Result> bookOnlyRuns = new ArrayList<>();
        List<Callers.Result> askRuns = new ArrayList<>();
        List<Callers.Result> directRuns = new ArrayList<>();
        long admissionDepth = 0;
        long echoDepth = 0;
        long messages = 0;
        for (int round = 0; round < s.rounds(); round++) {
          admissionBox.resetMax();
          long before = admissionBox.enqueued();
          Callers.Result run = AdvisoryBench.check(
              Callers.runChained(pool, callers, s.books(), latency, s.capMillis(), book));
          long sent = admissionBox.enqueued() - before;
          if (sent < 2 * run.calls()) {
            throw new IllegalStateException("the admission actor's counting mailbox saw " + sent
                + " messages for " + run.calls() + " book+release cycles");
          }
          bookRuns.add(run);
          messages += sent;
          admissionDepth = Math.max(admissionDepth, admissionBox.maxDepth());
          bookOnlyRuns.add(AdvisoryBench.check(
              Callers.runChained(pool, callers, s.books(), latency, s.capMillis(), bookOnly)));
          releaseAll(client, held);
          echoBox.resetMax();
          askRuns.add(AdvisoryBench.check(Callers.runChained(pool, callers, s.books(), latency, s.capMillis(), ask)));
          echoDepth = Math.max(echoDepth, echoBox.maxDepth());
          directRuns.add(AdvisoryBench.check(
              Callers.runChained(pool, callers, s.books(), latency, s.capMillis(), askDirect)));
        }
        Callers.Result b = Callers.median(bookRuns);
        Callers.Result a = Callers.median(askRuns);
        double messagesPerCycle = messages / (double) bookRuns.stream().mapToLong(Callers.Result::calls).sum();
        Row row = new Row(callers, b, admissionDepth, messagesPerCycle, a, echoDepth, Callers.range(bookRuns),
            Callers.range(askRuns), Callers.median(bookOnlyRuns), Callers.median(directRuns));
        Progress.line("admission", "%3d callers: %s books/s (max mailbox %d), trivial ask %s/s (max mailbox %d): %s",
            callers, Report.rate(b.callsPerSecond()), admissionDepth, Report.rate(a.callsPerSecond()), echoDepth,
            Report.ratio(row.ratio()));
        Progress.line("admission", "%3d callers: %s Books/s alone: %s of the trivial sharded ask, %s of the same "
                + "ask sent straight to the entity (%s/s)", callers, Report.rate(row.booksOnly().callsPerSecond()),
            Report.ratio(row.bookOnlyRatio()), Report.ratio(row.bookOnlyDirectRatio()),
            Report.rate(row.directAsks().callsPerSecond()));
        rows.add(row);
      }
    } finally {
      pool.shutdownNow();
    }
    return List.of(write(out, s, rows, owners));
  }

  private static void releaseAll(ModelClient client,
      java.util.Queue<io.kvrouter.core.admission.BookingAnswer> held) {
    List<java.util.concurrent.CompletableFuture<?>> releases = new ArrayList<>();
    for (io.kvrouter.core.admission.BookingAnswer answer; (answer = held.poll()) != null; ) {
      releases.add(client.release(answer.requestId(), answer.attempt(), null).toCompletableFuture());
    }
    BenchCluster.join(java.util.concurrent.CompletableFuture.allOf(
        releases.toArray(java.util.concurrent.CompletableFuture[]::new)));
  }

  private static Path write(Path out, Settings s, List<Row> rows, List<String> owners) {
    Report report = new Report("Admission: Books per second per model vs a trivial sharded ask");
    report.paragraph(String.format(
        "One model, %d workers, least_in_flight, on a real one-node cluster. A Book caller books through "
            + "`ModelClient.book`, then releases that booking (`release`, chained with an explicit executor), "
            + "then books again: one cycle = 2 asks to the admission actor. The trivial caller asks a bench-local "
            + "sharded entity that only replies. Callers are tasks on a fixed pool of %d threads, chained on "
            + "completion; %,d cycles / asks per configuration and round after %d warm-up rounds, %d measured rounds "
            + "alternating the two (median round shown, with the range). Both entity types run on "
            + "`kvrouter.admission.dispatcher` with `mailbox-type = %s` (verified: the admission entity and the echo "
            + "entity were created with it: %s); max depth = largest enqueued − dequeued seen during the run.",
        s.workers(), s.threads(), s.books(), s.warmupRounds(), s.rounds(), CountingMailbox.class.getName(),
        String.join(", ", owners)));
    Report.Table table = new Report.Table("callers", "books/s (book+release)", "cycle p50 / p99 (µs)",
        "admission max mailbox depth", "trivial asks/s", "ask p50 / p99 (µs)", "trivial max mailbox depth",
        "books/s ÷ asks/s", "target ≥ 0.5×", "admission msgs/s ÷ asks/s", "range books/s; asks/s");
    for (Row r : rows) {
      table.row(r.callers(), Report.rate(r.books().callsPerSecond()),
          Report.us(r.books().p50()) + " / " + Report.us(r.books().p99()), r.admissionMaxDepth(),
          Report.rate(r.asks().callsPerSecond()), Report.us(r.asks().p50()) + " / " + Report.us(r.asks().p99()),
          r.echoMaxDepth(), Report.ratio(r.ratio()), Report.verdict(r.ratio() >= 0.5),
          Report.ratio(r.messagesPerCycle() * r.books().callsPerSecond() / r.asks().callsPerSecond()),
          r.bookRange() + "; " + r.askRange());
    }
    report.table(table);
    report.paragraph("Books alone: each call books a fresh request id (one ask to the admission actor, like the "
        + "trivial ask); the round's bookings are released after it, untimed. This is the Books-per-second figure "
        + "the target names; the table above is the full book+release cycle (two asks). The router sends admission "
        + "commands straight to the model's actor while it runs on the node (`LocalAdmissions`), skipping the shard "
        + "region and the shard; the last columns therefore also show the trivial ask sent the same way, straight "
        + "to the echo entity's ActorRef, for the like-for-like ratio.");
    Report.Table alone = new Report.Table("callers", "Books/s (book only)", "Book p50 / p99 (µs)",
        "trivial sharded asks/s", "Books/s ÷ sharded asks/s", "target ≥ 0.5×", "trivial direct asks/s",
        "Books/s ÷ direct asks/s");
    for (Row r : rows) {
      alone.row(r.callers(), Report.rate(r.booksOnly().callsPerSecond()),
          Report.us(r.booksOnly().p50()) + " / " + Report.us(r.booksOnly().p99()),
          Report.rate(r.asks().callsPerSecond()), Report.ratio(r.bookOnlyRatio()),
          Report.verdict(r.bookOnlyRatio() >= 0.5), Report.rate(r.directAsks().callsPerSecond()),
          Report.ratio(r.bookOnlyDirectRatio()));
    }
    report.table(alone);
    return report.write(out, "admission.md");
  }
}
