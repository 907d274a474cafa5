package io.kvrouter.bench;

import io.kvrouter.core.admission.MutationResult;
import io.kvrouter.core.selection.SelectionRequest;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicLong;
import org.openjdk.jmh.results.RunResult;

/**
 * Regions: global vs regional Select CPU per call ({@link RegionsSelectBenchmark}, JMH), and Book + Release pairs per
 * second from a node of us to eu's admission actor through the cross-region sharding proxy vs on eu's own node, side
 * by side on the same two-node cluster.
 */
final class RegionsBench {
  /** The model of {@link Fixtures#request}. */
  private static final String BOOK_MODEL = Fixtures.MODEL;

  private RegionsBench() {}

  static List<Path> run(Path out, boolean quick) throws Exception {
    Jmh jmh = new Jmh(quick);
    Report report = new Report("Regions: global vs regional Select, Books across regions");
    report.paragraph("`RegionsSelectBenchmark`: `RouterService.select` called in-process (request mapping, hashing "
        + "1,024 token ids into 64 blocks, the pick, the Select timer) on two regions `us` and `eu` of one node each "
        + "in one JVM, each with 4 idle workers of the model (kv policy). `regional`: a regional Select on eu. "
        + "`globalInline`: a global Select on eu, whose pool is chosen (idle pools tie; the tie goes to the first "
        + "region by name), so the pool choice plus the same inline pick. `globalOtherRegion`: a global Select on us, "
        + "answered with eu's region and router endpoint from us's pool summaries (no worker pick, no hashing). "
        + jmh.describe() + "; the score is JMH's average time per call.");
    List<RunResult> results = jmh.run(jmh.options(RegionsSelectBenchmark.class.getName()).threads(1).build());
    report.table(Jmh.table(results));
    double regional = score(results, "regional");
    report.paragraph(String.format(Locale.ROOT, "Global Select per call relative to regional: inline %.2f×, "
        + "answered by another region %.2f× (target ≤ 1.2×).", score(results, "globalInline") / regional,
        score(results, "globalOtherRegion") / regional));

    Duration duration = quick ? Duration.ofMillis(500) : Duration.ofSeconds(5);
    // the JIT compiles the relayed path for about 20 s on 2 cores (C2 still busy after 10 s)
    Duration warmUp = quick ? Duration.ofMillis(500) : Duration.ofSeconds(20);
    int callers = 16;
    try (TwoRegions regions = TwoRegions.start()) {
      TwoRegions.register(regions.eu, BOOK_MODEL, 4);
      regions.awaitPool(regions.us, BOOK_MODEL, "eu");
      var fromUs = regions.us.cluster().client(BOOK_MODEL, "eu");
      var local = regions.eu.cluster().client(BOOK_MODEL);
      Lane localLane = (request) -> local.book(request, null)
          .thenCompose(b -> local.release(b.requestId(), b.attempt(), null));
      Lane proxiedLane = (request) -> fromUs.book(request, null)
          .thenCompose(b -> fromUs.release(b.requestId(), b.attempt(), null));
      // warm both paths, then measure them one after the other, twice, on the same cluster
      drive(localLane, callers, warmUp);
      drive(proxiedLane, callers, warmUp);
      Report.Table table = new Report.Table("path", "round", "Book+Release pairs/s", "relative to local");
      for (int round = 1; round <= 2; round++) {
        double onEu = drive(localLane, callers, duration);
        double throughProxy = drive(proxiedLane, callers, duration);
        table.row("Book + Release on eu's node (local actor)", round, Report.rate(onEu), "1.00×");
        table.row("Book + Release from us through the eu proxy", round, Report.rate(throughProxy),
            String.format(Locale.ROOT, "%.2f×", throughProxy / onEu));
      }
      report.paragraph("Book + Release pairs per second, " + callers + " callers each with one pair in flight, "
          + duration.toMillis() + " ms per measurement after " + warmUp.toMillis() + " ms of warm-up per path, on a "
          + "model with 4 workers in eu only (kv policy, 64-block requests). Local: `ModelClient.book`/`release` on eu's node, where the admission actor runs. Proxied: "
          + "`ModelClient.book`/`release` of region eu on us's node, through the sharding proxy for data center eu (Artery over "
          + "loopback, the relay's messages as protobuf both ways). Both regions run in this JVM on the same cores, so the proxied path also "
          + "pays for serialisation on both sides.");
      report.table(table);
    }
    return List.of(report.write(out, "regions.md"));
  }

  private static double score(List<RunResult> results, String method) {
    for (RunResult r : results) {
      if (r.getParams().getBenchmark().endsWith("." + method)) {
        return r.getPrimaryResult().getScore();
      }
    }
    throw new IllegalStateException("no result for " + method);
  }

  /** One Book + Release pair. */
  private interface Lane {
    CompletionStage<MutationResult> pair(SelectionRequest request);
  }

  /** Runs {@code callers} closed loops of pairs for {@code duration}; returns pairs per second. */
  private static double drive(Lane lane, int callers, Duration duration) {
    AtomicLong done = new AtomicLong();
    AtomicLong ids = new AtomicLong();
    long end = System.nanoTime() + duration.toNanos();
    long[] hashes = Fixtures.chain(new SplittableRandom(3), 64);
    List<CompletableFuture<Void>> loops = new ArrayList<>();
    long start = System.nanoTime();
    for (int i = 0; i < callers; i++) {
      CompletableFuture<Void> loop = new CompletableFuture<>();
      next(lane, hashes, ids, done, end, loop);
      loops.add(loop);
    }
    CompletableFuture.allOf(loops.toArray(CompletableFuture[]::new)).join();
    return done.get() / ((System.nanoTime() - start) / 1e9);
  }

  private static void next(Lane lane, long[] hashes, AtomicLong ids, AtomicLong done, long end,
      CompletableFuture<Void> loop) {
    if (System.nanoTime() >= end) {
      loop.complete(null);
      return;
    }
    SelectionRequest request = Fixtures.request(hashes, "r" + ids.incrementAndGet());
    lane.pair(request).whenComplete((released, failure) -> {
      if (failure != null) {
        loop.completeExceptionally(failure);
      } else {
        done.incrementAndGet();
        next(lane, hashes, ids, done, end, loop);
      }
    });
  }
}
