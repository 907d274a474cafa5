package io.kvrouter.bench;

import io.kvrouter.core.admission.AdmissionState;
import io.kvrouter.core.policy.PolicyConfig;
import io.kvrouter.core.policy.Scoring;
import io.kvrouter.core.selection.Candidates;
import io.kvrouter.core.selection.LoadProjection;
import io.kvrouter.core.selection.SelectionRequest;
import io.kvrouter.core.selection.SelectionResult;
import io.kvrouter.core.selection.SelectionView;
import io.kvrouter.core.selection.Selector;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.runner.RunnerException;

/**
 * JMH: what each kv cost term adds to a Select. One view per configuration, built by {@code AdmissionState} over a
 * populated {@code ModelKvIndex} (as {@code growth.md}'s) with live bookings on every rank, so prefill backlogs,
 * in-flight counts and active prefixes differ between ranks; the policy is Dynamo's preset plus one term, or the
 * kvrouter preset (every term it uses). {@code score} is the scorer alone ({@code Scorers.KV} over candidates
 * projected and looked up once); {@code select} is the whole inline {@code Selector.select}. {@link #run} writes
 * {@code kv-terms.md}.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class KvTermsBenchmark {
  /** Each term's parameters over Dynamo's preset; {@code kvrouter} is the default preset as it is. */
  static final Map<String, Map<String, String>> TERMS = terms();

  @Param({"dynamo", "overlap_credit_decay", "decode_active_request_weight", "shared_cache_multiplier",
      "load_bound_factor", "kvrouter"})
  public String terms;

  @Param({"4", "64"})
  public int workers;

  static final int BLOCKS = 64;

  private SelectionView view;
  private SelectionRequest request;
  private Scoring scoring;
  private final Candidates scored = new Candidates();

  private static Map<String, Map<String, String>> terms() {
    Map<String, Map<String, String>> t = new LinkedHashMap<>();
    t.put("dynamo", Map.of(PolicyConfig.PRESET, "dynamo"));
    t.put("overlap_credit_decay", Map.of(PolicyConfig.PRESET, "dynamo", PolicyConfig.OVERLAP_CREDIT_DECAY, "1"));
    t.put("decode_active_request_weight", Map.of(PolicyConfig.PRESET, "dynamo",
        PolicyConfig.DECODE_ACTIVE_REQUEST_WEIGHT, "32"));
    t.put("shared_cache_multiplier", Map.of(PolicyConfig.PRESET, "dynamo", PolicyConfig.SHARED_CACHE_MULTIPLIER,
        "0.5"));
    t.put("load_bound_factor", Map.of(PolicyConfig.PRESET, "dynamo", PolicyConfig.LOAD_BOUND_FACTOR, "1.25"));
    t.put("kvrouter", Map.of(PolicyConfig.PRESET, "kvrouter"));
    return t;
  }

  @Setup(Level.Trial)
  public void setUp() {
    long[] hashes = Fixtures.chain(new SplittableRandom(workers * 31L + BLOCKS), BLOCKS);
    AdmissionState state = Fixtures.kvState(workers, "kv", hashes, 2, workers * 17L + BLOCKS);
    // live bookings: worker w carries w % 4 of them, sharing the request's first blocks, so ranks differ in prefill
    // tokens, in flight and active prefix
    for (int w = 0; w < workers; w++) {
      for (int b = 0; b < w % 4; b++) {
        long[] prefix = java.util.Arrays.copyOf(hashes, 1 + (w * 7 + b) % BLOCKS);
        SelectionRequest live = new SelectionRequest(Fixtures.MODEL, "live-" + w + "-" + b, prefix,
            prefix.length * Fixtures.BLOCK_SIZE, 0, Fixtures.workerId(w), null, null, 0, null, null, null);
        state.book(live, w * 8L + b, 0);
      }
    }
    Map<String, String> parameters = new LinkedHashMap<>(TERMS.get(terms));
    parameters.put("seed", "7");
    state.setPolicy("kv", parameters);
    view = state.view();
    request = Fixtures.request(hashes, "terms");
    LoadProjection.projectWorkerLoads(view, request, scored, Fixtures.CLOCK);
    view.overlapSource().overlaps(view, hashes, scored);
    view.activePrefix().matched(view, hashes, scored);
    scoring = Selector.scoring(view.policy(), request, view.blockSize());
  }

  @Benchmark
  public double score() {
    view.policy().policy().scorer().score(scoring, scored);
    return scored.cost(0);
  }

  @Benchmark
  public SelectionResult select() {
    return Selector.select(view, request, Candidates.forCurrentThread(), Fixtures.CLOCK);
  }

  static List<Path> run(Path out, boolean quick) throws RunnerException {
    Jmh jmh = new Jmh(quick);
    Report report = new Report("What each kv cost term adds to a Select (JMH)");
    report.paragraph(String.format("`KvTermsBenchmark`: one thread, one view per configuration built by "
        + "`AdmissionState` over a populated `ModelKvIndex` (worker w holds a prefix of the %d-block request spread "
        + "over 0–100 %% of it, plus 2 chains of its own) with w %% 4 live bookings on worker w sharing the request's "
        + "first blocks. `terms` names the policy: Dynamo's preset (`preset=dynamo`), Dynamo's preset plus one term "
        + "(`overlap_credit_decay=1`, `decode_active_request_weight=32`, `shared_cache_multiplier=0.5`, "
        + "`load_bound_factor=1.25`), or the kvrouter preset as it is. `score` is the scorer alone over candidates "
        + "projected and looked up once; `select` is `Selector.select`. %s; sample-time mode (the score is the mean, "
        + "p50 the median).", BLOCKS, jmh.describe()));
    String include = KvTermsBenchmark.class.getName() + ".(score|select)$";
    List<RunResult> results = new ArrayList<>(jmh.run(jmh.options(include)
        .param("workers", quick ? new String[] {"4"} : new String[] {"4", "64"}).build()));
    report.table(Jmh.table(results));
    report.paragraph("Added by each term, from the medians (p50) above, against Dynamo's preset in the same run:");
    Report.Table added = new Report.Table("terms", "workers", "score p50 (ns)", "score added (ns)",
        "select p50 (ns)", "select added (ns)");
    for (RunResult r : results) {
      if (!r.getParams().getBenchmark().endsWith(".score")) {
        continue;
      }
      String workers = Jmh.param(r, "workers");
      String term = Jmh.param(r, "terms");
      double score = p50(r);
      double baseScore = p50(find(results, "score", "dynamo", workers));
      double select = p50(find(results, "select", term, workers));
      double baseSelect = p50(find(results, "select", "dynamo", workers));
      added.row(term, workers, Report.ns(score), Report.ns(score - baseScore), Report.ns(select),
          Report.ns(select - baseSelect));
    }
    report.table(added);
    return List.of(report.write(out, "kv-terms.md"));
  }

  private static double p50(RunResult r) {
    return r.getPrimaryResult().getStatistics().getPercentile(50);
  }

  private static RunResult find(List<RunResult> results, String method, String terms, String workers) {
    return results.stream()
        .filter(r -> r.getParams().getBenchmark().endsWith("." + method) && Jmh.param(r, "terms").equals(terms)
            && Jmh.param(r, "workers").equals(workers))
        .findFirst().orElseThrow();
  }
}
