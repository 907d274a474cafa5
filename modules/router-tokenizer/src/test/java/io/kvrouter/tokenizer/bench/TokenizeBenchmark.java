package io.kvrouter.tokenizer.bench;

import ai.djl.huggingface.tokenizers.HuggingFaceTokenizer;
import io.kvrouter.core.hashing.BlockHasher;
import io.kvrouter.tokenizer.ModelTokenizer;
import io.kvrouter.tokenizer.RoutingPrompt;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

/**
 * What tokenizing to route costs per request, for a prompt of about 2,000 tokens of kvrouter-tiny (README text):
 * {@code encode} is ModelTokenizer's hot path (one JNI encode, the ids copied out); {@code djlEncoding} is DJL's
 * own {@code HuggingFaceTokenizer.encode} (which also copies tokens, offsets and masks) for comparison;
 * {@code encodeAndHash} adds the router's block hashing of the ids (what the router does with token_ids);
 * {@code approximate} is approximate mode over the same text (pack and hash, no tokenizer).
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
public class TokenizeBenchmark {
  ModelTokenizer tokenizer;
  HuggingFaceTokenizer djl;
  String prompt;

  @Setup(Level.Trial)
  public void setUp() throws Exception {
    Path tiny = Path.of(System.getProperty("kvrouter.tiny", "models/kvrouter-tiny"));
    tokenizer = ModelTokenizer.load(tiny);
    djl = HuggingFaceTokenizer.newInstance(tiny.resolve("tokenizer.json"),
        Map.of("truncation", "false", "padding", "false"));
    String corpus = Files.readString(tiny.resolve("corpus.txt"));
    int end = 0;
    while (tokenizer.encode(corpus.substring(0, end), true).length < 2000) {
      end += 1000;
    }
    prompt = corpus.substring(0, end);
  }

  @TearDown(Level.Trial)
  public void tearDown() {
    tokenizer.close();
    djl.close();
  }

  @Benchmark
  public int[] encode() {
    return tokenizer.encode(prompt, true);
  }

  @Benchmark
  public long[] djlEncoding() {
    return djl.encode(prompt, true, false).getIds();
  }

  @Benchmark
  public long[] encodeAndHash() {
    return BlockHasher.sequenceHashes(tokenizer.encode(prompt, true), 16, BlockHasher.BASE_SEED);
  }

  @Benchmark
  public RoutingPrompt approximate() {
    return RoutingPrompt.approximate(prompt, 16, null, null, null);
  }
}
