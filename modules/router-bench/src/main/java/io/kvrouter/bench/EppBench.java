package io.kvrouter.bench;

import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code bench epp}: what kvrouter's endpoint picker adds to a streamed completion behind Envoy, per request, against
 * the same Envoy routing straight to the engine, side by side in one run ({@link FrontBench}'s driver and windows):
 * {@code envoy-direct} (Envoy, one route to the one simulated engine) and {@code envoy-kvrouter} (the plain Envoy
 * recipe, deploy/gateway/envoy.yaml, with kvrouter as its ext_proc endpoint picker in front of that engine). CPU per
 * request counts Envoy's process and, for the second, the kvrouter node's.
 */
@Command(name = "epp", mixinStandardHelpOptions = true, description = "The endpoint picker behind Envoy against Envoy "
    + "routing straight to the engine: added TTFT and inter-token latency, CPU per request (writes results/epp.md).")
public final class EppBench implements Callable<Integer> {
  @Option(names = "--rate", defaultValue = "100", description = "streamed requests per second (open loop)")
  int rate;
  @Option(names = "--measure-s", defaultValue = "15", description = "measured seconds per target per round")
  int measureSeconds;
  @Option(names = "--warmup-s", defaultValue = "30", description = "unmeasured seconds per target first")
  int warmupSeconds;
  @Option(names = "--rounds", defaultValue = "3")
  int rounds;
  @Option(names = "--time-scale", defaultValue = "100", description = "the engine's simulated time speed-up")
  double timeScale;
  @Option(names = "--max-tokens", defaultValue = "16")
  int maxTokens;
  @Option(names = "--prompt-chars", defaultValue = "4000", description = "characters of each prompt's shared prefix")
  int promptChars;
  @Option(names = "--out", description = "results directory (default: modules/router-bench/results)")
  Path out;
  @Option(names = "--quick", description = "tiny sizes: checks that everything runs, not a measurement")
  boolean quick;

  @Override
  public Integer call() throws Exception {
    if (quick) { // as FrontBench's --quick, so the report states what ran
      rate = Math.min(rate, 20);
      measureSeconds = 2;
      warmupSeconds = 2;
      rounds = 1;
    }
    FrontBench bench = new FrontBench();
    bench.rate = rate;
    bench.measureSeconds = measureSeconds;
    bench.warmupSeconds = warmupSeconds;
    bench.rounds = rounds;
    bench.engines = 1;
    bench.timeScale = timeScale;
    bench.maxTokens = maxTokens;
    bench.promptChars = promptChars;
    bench.targets = List.of("envoy-direct", "envoy-kvrouter");
    bench.baseline = "envoy-direct";
    bench.out = out;
    bench.fileName = "epp.md";
    bench.quick = quick;
    bench.title = "The endpoint picker behind Envoy: added latency and CPU per request (bench epp)";
    bench.intro = String.format(Locale.ROOT, "One simulated engine (`bin/sim engines`, time scale %s, its own JVM, "
        + "tokenizing with models/kvrouter-tiny as vLLM does); two targets in front of it, each its own processes for "
        + "the whole run: `envoy-direct`, Envoy routing every request straight to the engine, and `envoy-kvrouter`, "
        + "the same Envoy binary from the plain Envoy recipe (deploy/gateway/envoy.yaml) with kvrouter as its "
        + "endpoint picker (ext_proc FULL_DUPLEX_STREAMED: the request body and every response chunk go through the "
        + "picker; the prompt is tokenized, a booking made and released per request). The driver (this JVM, the "
        + "JDK's HTTP client over HTTP/1.1) sends %d streamed text completions per second (open loop), each a "
        + "%d-character prefix shared by one in eight requests plus a unique question, `max_tokens` %d with "
        + "`ignore_eos`, to one target at a time: %d s of warm-up per target, then %d round(s) of %d s windows per "
        + "target (the order reversed every other round). Figures are the median over rounds; TTFT is sending to the "
        + "first SSE event, inter-token the mean gap between events of one answer; \"added\" is the row's figure less "
        + "`envoy-direct`'s: what the picker adds. CPU per request is the target's processes' CPU time (utime + "
        + "stime, /proc) over the window per answered request: Envoy's, plus the kvrouter node's for "
        + "`envoy-kvrouter` (\"of which kvrouter\"; \"of which JIT\" counts Envoy's, which has none).", timeScale,
        rate, promptChars, maxTokens, warmupSeconds, rounds, measureSeconds);
    return bench.call();
  }
}
