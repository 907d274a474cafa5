package io.kvrouter.bench;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** Runs {@code bench leaks --quick} and checks that it writes its table; the figures are not asserted. */
class LeakBenchSmokeTest {

  @Test
  @Timeout(value = 180)
  void leaksQuickWritesItsTable(@TempDir Path out) throws Exception {
    assertThat(Bench.run("leaks", "--quick", "--out", out.toString())).isZero();
    assertThat(Files.readString(out.resolve("leaks.md"), StandardCharsets.UTF_8))
        .contains("| binding | Books sent | booked (all released) | released, already freed | abandoned: deadline |")
        .contains("| netty |");
  }
}
