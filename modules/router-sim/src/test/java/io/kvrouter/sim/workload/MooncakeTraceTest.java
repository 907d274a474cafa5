package io.kvrouter.sim.workload;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvrouter.core.hashing.BlockHasher;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.StringReader;
import java.io.StringWriter;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

class MooncakeTraceTest {
  private static List<MooncakeTrace.Entry> read(String text) throws IOException {
    return MooncakeTrace.read(new BufferedReader(new StringReader(text)), "trace.jsonl");
  }

  @Test
  void parsesEveryFieldAndSkipsBlankLines() throws IOException {
    List<MooncakeTrace.Entry> entries = read("""
        {"timestamp": 0, "input_length": 600, "output_length": 12, "hash_ids": [46, 47]}

        {"timestamp": 27482, "input_length": 512, "output_length": 1, "hash_ids": [46], "extra": "ignored"}
        """);
    assertThat(entries).hasSize(2);
    MooncakeTrace.Entry first = entries.get(0);
    assertThat(first.timestampMillis()).isZero();
    assertThat(first.inputLength()).isEqualTo(600);
    assertThat(first.outputLength()).isEqualTo(12);
    assertThat(first.hashIds()).containsExactly(46, 47);
    assertThat(entries.get(1).timestampMillis()).isEqualTo(27_482);
  }

  @Test
  void badLinesAreRejectedWithTheirLineNumber() {
    String good = "{\"timestamp\": 0, \"input_length\": 10, \"output_length\": 5, \"hash_ids\": [1]}\n";
    assertThatThrownBy(() -> read(good + "{\"timestamp\": 1, \"input_length\": 10\n"))
        .isInstanceOf(MooncakeTrace.TraceFormatException.class).hasMessageStartingWith("trace.jsonl:2: not JSON");
    assertThatThrownBy(() -> read(good + good + "{\"timestamp\": 1, \"output_length\": 5, \"hash_ids\": [1]}"))
        .hasMessage("trace.jsonl:3: missing field 'input_length'");
    assertThatThrownBy(() -> read("{\"timestamp\": -4, \"input_length\": 10, \"output_length\": 5, \"hash_ids\": [1]}"))
        .hasMessage("trace.jsonl:1: 'timestamp' is not a non-negative integer: -4");
    assertThatThrownBy(() -> read("{\"timestamp\": 0, \"input_length\": 1000, \"output_length\": 5, \"hash_ids\": [1]}"))
        .hasMessage("trace.jsonl:1: input_length 1000 needs 2 hash_ids (one per 512 tokens), got 1");
    assertThatThrownBy(() -> read("{\"timestamp\": 0, \"input_length\": 10, \"output_length\": 5, \"hash_ids\": [\"x\"]}"))
        .hasMessage("trace.jsonl:1: hash_ids[0] is not a non-negative integer: \"x\"");
    assertThatThrownBy(() -> read("[1, 2]")).hasMessage("trace.jsonl:1: expected a JSON object");
  }

  @Test
  void writtenEntriesReadBackTheSame() throws IOException {
    List<MooncakeTrace.Entry> generated = new MooncakeSampleGenerator(3).generate(200, 5.0);
    StringWriter out = new StringWriter();
    MooncakeTrace.write(generated, out);
    List<MooncakeTrace.Entry> back = read(out.toString());
    assertThat(back).hasSize(200);
    for (int i = 0; i < back.size(); i++) {
      assertThat(back.get(i).hashIds()).containsExactly(generated.get(i).hashIds());
      assertThat(back.get(i).inputLength()).isEqualTo(generated.get(i).inputLength());
    }
  }

  @Test
  void equalLeadingHashIdsBecomeEqualTokensAndEqualBlockHashes() throws IOException {
    List<MooncakeTrace.Entry> entries = read("""
        {"timestamp": 0, "input_length": 1200, "output_length": 4, "hash_ids": [7, 8, 9]}
        {"timestamp": 500, "input_length": 1100, "output_length": 4, "hash_ids": [7, 8, 10]}
        {"timestamp": 1000, "input_length": 700, "output_length": 4, "hash_ids": [5, 8]}
        """);
    List<WorkloadRequest> requests = new ArrayList<>();
    List<Long> arrivals = new ArrayList<>();
    new TraceWorkload(entries, "t", 2.0, 1).start((micros, request) -> {
      arrivals.add(micros);
      requests.add(request);
    });
    assertThat(arrivals).containsExactly(0L, 1_000_000L, 2_000_000L);
    assertThat(requests.get(0).promptTokens()).isEqualTo(1200);
    int[] a = requests.get(0).tokens();
    int[] b = requests.get(1).tokens();
    int[] c = requests.get(2).tokens();
    assertThat(Arrays.copyOf(a, 1024)).isEqualTo(Arrays.copyOf(b, 1024));
    assertThat(Arrays.copyOfRange(a, 1024, 1100)).isNotEqualTo(Arrays.copyOfRange(b, 1024, 1100));
    // the same id after a different first block (partial in c): same tokens, yet different block hashes
    assertThat(Arrays.copyOfRange(a, 512, 700)).isEqualTo(Arrays.copyOfRange(c, 512, 700));
    long[] hashesA = BlockHasher.sequenceHashes(Arrays.copyOf(a, 1200), 16, BlockHasher.BASE_SEED);
    long[] hashesB = BlockHasher.sequenceHashes(Arrays.copyOf(b, 1100), 16, BlockHasher.BASE_SEED);
    long[] hashesC = BlockHasher.sequenceHashes(Arrays.copyOf(c, 700), 16, BlockHasher.BASE_SEED);
    assertThat(Arrays.copyOf(hashesA, 64)).isEqualTo(Arrays.copyOf(hashesB, 64));
    assertThat(hashesA[64]).isNotEqualTo(hashesB[64]);
    assertThat(hashesC[32]).isNotEqualTo(hashesA[32]);
  }
}
