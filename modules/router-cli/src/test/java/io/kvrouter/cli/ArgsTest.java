package io.kvrouter.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

class ArgsTest {

  @Test
  void paramsKeepOrderAndSplitOnTheFirstEquals() {
    var params = Args.parseParams(List.of("temperature=0.5", "b=x=y", " overlap_credit = 1 ", "empty="));
    assertThat(params).containsExactly(
        org.assertj.core.api.Assertions.entry("temperature", "0.5"),
        org.assertj.core.api.Assertions.entry("b", "x=y"),
        org.assertj.core.api.Assertions.entry("overlap_credit", "1"),
        org.assertj.core.api.Assertions.entry("empty", ""));
    assertThat(Args.parseParams(null)).isEmpty();
  }

  @Test
  void malformedParamsAreRejected() {
    assertThatThrownBy(() -> Args.parseParams(List.of("novalue")))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("key=value");
    assertThatThrownBy(() -> Args.parseParams(List.of("=1")))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("empty key");
    assertThatThrownBy(() -> Args.parseParams(List.of("a=1", "a=2")))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("twice");
  }

  @Test
  void tokensParseAsUnsigned32() {
    assertThat(Args.parseTokens("1,2, 3")).containsExactly(1, 2, 3);
    assertThat(Args.parseTokens("7 8\t9")).containsExactly(7, 8, 9);
    assertThat(Args.parseTokens("4294967295,0x10")).containsExactly(-1, 16);
  }

  @Test
  void badTokensAreRejected() {
    assertThatThrownBy(() -> Args.parseTokens("1,-2")).hasMessageContaining("out of range");
    assertThatThrownBy(() -> Args.parseTokens("4294967296")).hasMessageContaining("out of range");
    assertThatThrownBy(() -> Args.parseTokens("1,x")).hasMessageContaining("not a number");
    assertThatThrownBy(() -> Args.parseTokens(" , ")).hasMessageContaining("at least one");
  }

  @Test
  void blockHashesAreUnsigned64DecimalOrHex() {
    assertThat(Args.parseBlockHashes("18446744073709551615,0xff,42")).containsExactly(-1L, 255L, 42L);
    assertThatThrownBy(() -> Args.parseBlockHashes("18446744073709551616")).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> Args.parseBlockHashes("-1")).isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void targets() {
    assertThat(Args.parseTarget("127.0.0.1:50051")).isEqualTo(new Args.Target("127.0.0.1", 50051));
    assertThat(Args.parseTarget("router.local:7")).isEqualTo(new Args.Target("router.local", 7));
    assertThat(Args.parseTarget("[::1]:50051")).isEqualTo(new Args.Target("::1", 50051));
    assertThat(Args.parseTarget("[::1]:50051").toString()).isEqualTo("[::1]:50051");
    for (String bad : List.of("localhost", "localhost:", ":50051", "h:0", "h:65536", "h:x", "::1:50051", "[]:1")) {
      assertThatThrownBy(() -> Args.parseTarget(bad)).as(bad).isInstanceOf(IllegalArgumentException.class);
    }
  }

  @Test
  void durations() {
    assertThat(Args.parseDuration("5s")).isEqualTo(Duration.ofSeconds(5));
    assertThat(Args.parseDuration("500ms")).isEqualTo(Duration.ofMillis(500));
    assertThat(Args.parseDuration("1.5s")).isEqualTo(Duration.ofMillis(1500));
    assertThat(Args.parseDuration("2m")).isEqualTo(Duration.ofMinutes(2));
    assertThat(Args.parseDuration("3")).isEqualTo(Duration.ofSeconds(3));
    assertThat(Args.parseDuration("PT0.25S")).isEqualTo(Duration.ofMillis(250));
    for (String bad : List.of("0s", "-1s", "5x", "", "PT-1S", "soon")) {
      assertThatThrownBy(() -> Args.parseDuration(bad)).as(bad).isInstanceOf(IllegalArgumentException.class);
    }
  }

  @Test
  void generatedTokensAreDeterministicPerSeedAndExtendAsPrefixes() {
    int[] a = TokenGenerator.generate(42, 64);
    assertThat(TokenGenerator.generate(42, 64)).containsExactly(a);
    int[] longer = TokenGenerator.generate(42, 200);
    assertThat(java.util.Arrays.copyOf(longer, 64)).containsExactly(a);
    assertThat(TokenGenerator.generate(43, 64)).isNotEqualTo(a);
    assertThat(java.util.Arrays.stream(a).boxed()).allSatisfy(t -> assertThat(t).isBetween(0, TokenGenerator.DEFAULT_VOCAB_SIZE - 1));
    assertThat(java.util.Arrays.stream(a).distinct().count()).as("not a constant sequence").isGreaterThan(50);
    assertThat(java.util.Arrays.stream(TokenGenerator.generate(1, 100, 10)).boxed()).allSatisfy(t -> assertThat(t).isBetween(0, 9));
    assertThat(TokenGenerator.generate(1, 0)).isEmpty();
  }
}
