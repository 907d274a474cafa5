package io.kvrouter.tokenizer.bench;

import io.kvrouter.tokenizer.ModelTokenizer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Locale;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.options.OptionsBuilder;
import org.openjdk.jmh.runner.options.TimeValue;
import org.openjdk.jmh.runner.options.VerboseMode;

/** Runs TokenizeBenchmark (JMH Runner API) and writes results/tokenize.md; {@code --quick} for a smoke run. */
public final class TokenizeBench {
  private TokenizeBench() {}

  public static void main(String[] args) throws Exception {
    boolean quick = List.of(args).contains("--quick");
    Path tiny = Path.of(System.getProperty("kvrouter.tiny", "models/kvrouter-tiny")).toAbsolutePath();
    int tokens;
    try (ModelTokenizer t = ModelTokenizer.load(tiny)) {
      TokenizeBenchmark b = new TokenizeBenchmark();
      b.setUp();
      tokens = b.encode().length;
      b.tearDown();
    }
    int warmups = quick ? 1 : 3;
    int iterations = quick ? 1 : 5;
    TimeValue time = TimeValue.milliseconds(quick ? 200 : 1000);
    Collection<RunResult> results = new Runner(new OptionsBuilder()
        .include(TokenizeBenchmark.class.getName())
        .forks(quick ? 0 : 1)
        .warmupIterations(warmups).warmupTime(time)
        .measurementIterations(iterations).measurementTime(time)
        .jvmArgsAppend("-Djava.util.concurrent.ForkJoinPool.common.parallelism=4", "-Xmx1g",
            "-Dkvrouter.tiny=" + tiny)
        .verbosity(VerboseMode.SILENT)
        .build()).run();
    List<RunResult> sorted = new ArrayList<>(results);
    sorted.sort((a, b) -> a.getParams().getBenchmark().compareTo(b.getParams().getBenchmark()));
    double encodeP50 = 0;
    for (RunResult r : sorted) {
      if (r.getParams().getBenchmark().endsWith(".encode")) {
        encodeP50 = r.getPrimaryResult().getStatistics().getPercentile(50);
      }
    }
    StringBuilder md = new StringBuilder();
    md.append("## Tokenizing to route: cost per request (JMH)\n\n");
    md.append(String.format(Locale.ROOT, "`modules/router-tokenizer/bin/bench-tokenize%s`, run %s on %d CPUs, %s %s. ",
        quick ? " --quick" : "", ZonedDateTime.now(ZoneOffset.UTC).format(DateTimeFormatter.ofPattern(
            "yyyy-MM-dd HH:mm 'UTC'")), Runtime.getRuntime().availableProcessors(),
        System.getProperty("java.vm.name"), System.getProperty("java.version")));
    md.append(String.format(Locale.ROOT, "Load average (1 min) when written: %s.%n%n",
        Files.readString(Path.of("/proc/loadavg")).split(" ")[0]));
    md.append(String.format(Locale.ROOT, "`TokenizeBenchmark`: a prompt of %d tokens of `models/kvrouter-tiny` "
        + "(byte-level BPE, vocab 4,096; the first characters of its README corpus), one thread. JMH 1.37, %s, "
        + "%d × %s warm-up and %d × %s measurement iterations; sample-time mode (score = mean).%n%n", tokens,
        quick ? "in this JVM" : "1 fork", warmups, time, iterations, time));
    md.append("| benchmark | what | mean (µs) | p50 (µs) | p99 (µs) | p50 / encode p50 |\n|---|---|---:|---:|---:|---:|\n");
    for (RunResult r : sorted) {
      String name = r.getParams().getBenchmark().replaceAll(".*\\.", "");
      var s = r.getPrimaryResult().getStatistics();
      md.append(String.format(Locale.ROOT, "| %s | %s | %.1f ± %.1f | %.1f | %.1f | %.2f |%n", name, what(name),
          s.getMean(), r.getPrimaryResult().getScoreError(), s.getPercentile(50), s.getPercentile(99),
          s.getPercentile(50) / encodeP50));
    }
    md.append(python(tiny, tokens));
    Path out = Path.of(System.getProperty("kvrouter.results", "modules/router-tokenizer/results"));
    Files.createDirectories(out);
    Files.writeString(out.resolve(quick ? "tokenize-quick.md" : "tokenize.md"), md.toString());
    System.out.print(md);
  }

  /** The same prompt encoded by HuggingFace's Python tokenizers (the project's .venv), in this run, for scale. */
  private static String python(Path tiny, int tokens) {
    Path python = Path.of(System.getenv().getOrDefault("KVROUTER_PYTHON", ".venv/bin/python"));
    if (!Files.isExecutable(python)) {
      return "\nHuggingFace's Python tokenizers: not measured (no KVROUTER_PYTHON or .venv).\n";
    }
    String script = String.join("\n",
        "import sys, time",
        "from tokenizers import Tokenizer, __version__",
        "t = Tokenizer.from_file(sys.argv[1] + '/tokenizer.json')",
        "corpus = open(sys.argv[1] + '/corpus.txt').read()",
        "end = 0",
        "while len(t.encode(corpus[:end]).ids) < 2000: end += 1000",
        "p = corpus[:end]",
        "for _ in range(100): t.encode(p)",
        "times = []",
        "for _ in range(500):",
        "    s = time.perf_counter_ns(); t.encode(p); times.append(time.perf_counter_ns() - s)",
        "times.sort()",
        "print(__version__, len(t.encode(p).ids), times[len(times) // 2] / 1000)");
    try {
      Process process = new ProcessBuilder(python.toString(), "-c", script, tiny.toString()).start();
      String[] out = new String(process.getInputStream().readAllBytes()).trim().split(" ");
      process.waitFor();
      return String.format(Locale.ROOT, "%nThe same %s-token prompt through HuggingFace's Python `tokenizers` %s "
          + "(`Tokenizer.encode`, 500 calls after 100 warm-up, same host, right after the JMH run): p50 %s µs.%n",
          out[1], out[0], out[2]);
    } catch (Exception e) {
      return "\nHuggingFace's Python tokenizers: not measured (" + e.getMessage() + ").\n";
    }
  }

  private static String what(String name) {
    return switch (name) {
      case "encode" -> "`ModelTokenizer.encode`: one JNI encode, ids copied out";
      case "djlEncoding" -> "DJL's `HuggingFaceTokenizer.encode` (ids, tokens, offsets, masks)";
      case "encodeAndHash" -> "`encode` + `BlockHasher.sequenceHashes` (block size 16)";
      case "approximate" -> "approximate mode: pack the text, hash its 64-byte chunks";
      default -> "";
    };
  }
}
