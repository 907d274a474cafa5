package io.kvrouter.core.hashing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvrouter.core.error.RoutingError;
import io.kvrouter.core.error.RoutingException;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Pins {@link BlockHasher} to vectors produced by an independent XXH3 (python3-xxhash, see make_vectors.py), so a
 * silent change of byte order, seed derivation or chaining would break routing parity with the spec.
 */
class BlockHasherTest {

  record Vector(String name, int blockSize, String salt, String lora, long seed, int[] tokens, long[] local,
      long[] sequence) {
    @Override
    public String toString() {
      return name;
    }
  }

  static Stream<Vector> vectors() throws IOException {
    List<Vector> out = new ArrayList<>();
    try (InputStream in = BlockHasherTest.class.getResourceAsStream("/hashing/block_hash_vectors.tsv")) {
      assertThat(in).as("vectors resource").isNotNull();
      BufferedReader reader = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8));
      String line;
      while ((line = reader.readLine()) != null) {
        if (line.isBlank() || line.startsWith("#")) {
          continue;
        }
        String[] f = line.split("\t", -1);
        assertThat(f).hasSize(8);
        out.add(new Vector(f[0], Integer.parseInt(f[1]), text(f[2]), text(f[3]), Long.parseUnsignedLong(f[4], 16),
            tokens(f[5]), hashes(f[6]), hashes(f[7])));
      }
    }
    assertThat(out).hasSizeGreaterThan(20);
    return out.stream();
  }

  private static String text(String hex) {
    return hex.equals("-") ? "" : new String(HexFormat.of().parseHex(hex), StandardCharsets.UTF_8);
  }

  private static int[] tokens(String list) {
    // Tokens are written as unsigned u32; values >= 2^31 become negative ints, which is the same 4 bytes.
    return list.equals("-") ? new int[0]
        : Arrays.stream(list.split(",")).mapToInt(s -> (int) Long.parseLong(s)).toArray();
  }

  private static long[] hashes(String list) {
    return list.equals("-") ? new long[0]
        : Arrays.stream(list.split(",")).mapToLong(s -> Long.parseUnsignedLong(s, 16)).toArray();
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("vectors")
  void matchesIndependentXxh3(Vector v) {
    long seed = BlockHasher.seed(v.salt(), v.lora());
    assertThat(seed).as("seed").isEqualTo(v.seed());
    assertThat(BlockHasher.localBlockHashes(v.tokens(), v.blockSize(), seed)).as("local").containsExactly(v.local());
    assertThat(BlockHasher.sequenceHashes(v.tokens(), v.blockSize(), seed)).as("sequence")
        .containsExactly(v.sequence());
    assertThat(BlockHasher.sequenceHashesFromLocal(v.local(), seed)).as("from local").containsExactly(v.sequence());
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("vectors")
  void reusableBufferVariantsAgree(Vector v) {
    int[] buffer = Arrays.copyOf(v.tokens(), v.tokens().length + 2 * v.blockSize() + 3);
    Arrays.fill(buffer, v.tokens().length, buffer.length, 0x5555);
    long seed = v.seed();
    assertThat(BlockHasher.sequenceHashes(buffer, v.tokens().length, v.blockSize(), seed))
        .containsExactly(v.sequence());
    long[] out = new long[v.sequence().length + 4];
    int n = BlockHasher.sequenceHashes(buffer, v.tokens().length, v.blockSize(), seed, out);
    assertThat(Arrays.copyOf(out, n)).containsExactly(v.sequence());
    n = BlockHasher.localBlockHashes(buffer, v.tokens().length, v.blockSize(), seed, out);
    assertThat(Arrays.copyOf(out, n)).containsExactly(v.local());
  }

  @Test
  void trailingPartialBlockIsNotHashed() {
    int[] full = {1, 2, 3, 4, 5, 6, 7, 8};
    int[] withPartial = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
    long[] a = BlockHasher.sequenceHashes(full, 4, BlockHasher.BASE_SEED);
    long[] b = BlockHasher.sequenceHashes(withPartial, 4, BlockHasher.BASE_SEED);
    assertThat(b).hasSize(2).containsExactly(a);
    assertThat(BlockHasher.sequenceHashes(new int[] {1, 2, 3}, 4, BlockHasher.BASE_SEED)).isEmpty();
  }

  @Test
  void sequenceHashDependsOnPrefixButLocalDoesNot() {
    int[] x = {1, 2, 3, 4, 9, 9, 9, 9};
    int[] y = {5, 6, 7, 8, 9, 9, 9, 9};
    long seed = BlockHasher.BASE_SEED;
    assertThat(BlockHasher.localBlockHashes(x, 4, seed)[1]).isEqualTo(BlockHasher.localBlockHashes(y, 4, seed)[1]);
    assertThat(BlockHasher.sequenceHashes(x, 4, seed)[1]).isNotEqualTo(BlockHasher.sequenceHashes(y, 4, seed)[1]);
    long[] local = BlockHasher.localBlockHashes(x, 4, seed);
    assertThat(BlockHasher.nextSequenceHash(local[0], local[1], seed))
        .isEqualTo(BlockHasher.sequenceHashes(x, 4, seed)[1]);
  }

  @Test
  void saltAndLoraChangeTheHashes() {
    int[] tokens = {10, 20, 30, 40, 50, 60, 70, 80};
    long base = BlockHasher.seed("", "");
    long salted = BlockHasher.seed("tenant", "");
    long lora = BlockHasher.seed("", "tenant");
    long both = BlockHasher.seed("tenant", "adapter");
    assertThat(base).isEqualTo(BlockHasher.BASE_SEED).isEqualTo(BlockHasher.seed(null, null));
    assertThat(List.of(base, salted, lora, both)).doesNotHaveDuplicates();
    // The separator keeps the salt and the LoRA name apart.
    assertThat(BlockHasher.seed("ab", "")).isNotEqualTo(BlockHasher.seed("a", "b"));
    long[] plain = BlockHasher.sequenceHashes(tokens, 4, base);
    for (long seed : new long[] {salted, lora, both}) {
      long[] other = BlockHasher.sequenceHashes(tokens, 4, seed);
      assertThat(other[0]).isNotEqualTo(plain[0]);
      assertThat(other[1]).isNotEqualTo(plain[1]);
    }
  }

  @Test
  void nonPositiveBlockSizeIsInvalidArgument() {
    for (int bad : new int[] {0, -1}) {
      assertThatThrownBy(() -> BlockHasher.sequenceHashes(new int[] {1, 2}, bad, BlockHasher.BASE_SEED))
          .isInstanceOfSatisfying(RoutingException.class, e -> {
            assertThat(e.error().code()).isEqualTo(RoutingError.Code.INVALID_ARGUMENT);
            assertThat(e.error().reason()).isEqualTo(RoutingError.INVALID_BLOCK_SIZE);
          });
      assertThatThrownBy(() -> BlockHasher.localBlockHashes(new int[0], bad, BlockHasher.BASE_SEED))
          .isInstanceOf(RoutingException.class);
    }
  }

  @Test
  void manySeedsDoNotConfuseTheSeedCache() {
    int[] tokens = {1, 2, 3, 4};
    long[] first = new long[600];
    for (int i = 0; i < first.length; i++) {
      first[i] = BlockHasher.sequenceHashes(tokens, 4, BlockHasher.seed("salt-" + i, ""))[0];
    }
    for (int i = first.length - 1; i >= 0; i--) {
      assertThat(BlockHasher.sequenceHashes(tokens, 4, BlockHasher.seed("salt-" + i, ""))[0]).isEqualTo(first[i]);
    }
  }
}
