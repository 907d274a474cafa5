package io.kvrouter.core.selection;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvrouter.core.error.RoutingError;
import io.kvrouter.core.error.RoutingException;
import io.kvrouter.core.model.WorkerConfig;
import io.kvrouter.core.model.WorkerRole;
import org.junit.jupiter.api.Test;

class RequestLimitsTest {
  private final RequestLimits limits = RequestLimits.defaults();

  private static WorkerConfig worker(int dpStart, int dpSize, int blockSize) {
    return new WorkerConfig("w", dpStart, dpSize, 8192, 1000, blockSize, "", "", WorkerRole.AGGREGATED);
  }

  private static String reasonOf(Runnable check) {
    try {
      check.run();
    } catch (RoutingException e) {
      assertThat(e.error().code()).isEqualTo(RoutingError.Code.INVALID_ARGUMENT);
      return e.error().reason();
    }
    throw new AssertionError("accepted");
  }

  @Test
  void rankRangesThatOverflowOrCostTooMuchAreRejected() {
    assertThat(reasonOf(() -> limits.validate(worker(0, Integer.MAX_VALUE, 16)))).isEqualTo("TOO_MANY_RANKS");
    assertThat(reasonOf(() -> limits.validate(worker(Integer.MAX_VALUE, 2, 16)))).isEqualTo("TOO_MANY_RANKS");
    assertThat(reasonOf(() -> limits.validate(worker(-1, 1, 16)))).as("a uint32 above 2^31")
        .isEqualTo("TOO_MANY_RANKS");
    assertThat(reasonOf(() -> limits.validate(worker(0, 1025, 16)))).isEqualTo("TOO_MANY_RANKS");
    limits.validate(worker(64_512, 1024, 16));
    assertThat(reasonOf(() -> new RequestLimits(131_072, 1_048_576, 4096, 1024).validate(worker(0, 4097, 16))))
        .isEqualTo("TOO_MANY_RANKS");
    new RequestLimits(131_072, 1_048_576, 4096, 1024).validate(worker(0, 4096, 16));
  }

  @Test
  void theBlockSizeIsBoundedSoBlockCountsCannotOverflow() {
    assertThat(reasonOf(() -> limits.validate(worker(0, 1, Integer.MAX_VALUE)))).isEqualTo("INVALID_BLOCK_SIZE");
    assertThat(reasonOf(() -> limits.validate(worker(0, 1, 65_537)))).isEqualTo("INVALID_BLOCK_SIZE");
    limits.validate(worker(0, 1, 65_536));
  }

  @Test
  void theAdmissionStateChecksTheFixedLimitsToo() {
    assertThatThrownBy(() -> RequestLimits.requireWorkerShape(worker(Integer.MAX_VALUE, 2, 16)))
        .isInstanceOf(RoutingException.class);
  }

  @Test
  void theQueueFieldsAreBounded() {
    limits.validate(request(-5, 0, ""), true); // a negative priority counts as 0
    limits.validate(request(RequestLimits.MAX_PRIORITY, RequestLimits.MAX_STRICT_PRIORITY, "x".repeat(64)), true);
    assertThat(reasonOf(() -> limits.validate(request(RequestLimits.MAX_PRIORITY + 1, 0, ""), true)))
        .isEqualTo("INVALID_SIZE");
    assertThat(reasonOf(() -> limits.validate(request(0, RequestLimits.MAX_STRICT_PRIORITY + 1, ""), true)))
        .isEqualTo("INVALID_SIZE");
    assertThat(reasonOf(() -> limits.validate(request(0, -1, ""), true))).as("a uint32 above 2^31")
        .isEqualTo("INVALID_SIZE");
    assertThat(reasonOf(() -> limits.validate(request(0, 0, "x".repeat(65)), true))).isEqualTo("FIELD_TOO_LONG");
  }

  private static SelectionRequest request(int priority, int strictPriority, String policyClass) {
    return new SelectionRequest("m", "r", null, 10, 0, null, null, null, null, priority, null, null, null, strictPriority,
        policyClass);
  }

  @Test
  void anEchoIsCutAfter128Characters() {
    assertThat(RoutingError.echo("short")).isEqualTo("short");
    assertThat(RoutingError.echo("x".repeat(10_000))).isEqualTo("x".repeat(128) + "...");
    String surrogates = "a".repeat(127) + "\uD83D\uDE00" + "b";
    assertThat(RoutingError.echo(surrogates)).isEqualTo("a".repeat(127) + "...");
    assertThat(reasonOf(() -> RequestLimits.requireModel("m".repeat(257)))).isEqualTo("FIELD_TOO_LONG");
    assertThatThrownBy(() -> RequestLimits.requireModel("m".repeat(100_000)))
        .hasMessageContaining("m".repeat(128) + "...")
        .satisfies(e -> assertThat(e.getMessage()).hasSizeLessThan(300));
  }

  @Test
  void configuredLimitsAreBounded() {
    assertThatThrownBy(() -> new RequestLimits(0)).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> new RequestLimits(131_072, 1, 65_537, 1)).isInstanceOf(IllegalArgumentException.class);
  }
}
