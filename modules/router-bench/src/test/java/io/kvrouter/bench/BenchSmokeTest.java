package io.kvrouter.bench;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Runs every benchmark with {@code --quick} (tiny sizes) and checks that each writes its file with the expected
 * table headers. It asserts nothing about the figures: benchmarks are never tests.
 */
class BenchSmokeTest {

  @Test
  @Timeout(value = 300)
  void allQuickWritesEveryTable(@TempDir Path out) throws Exception {
    int code = Bench.run("all", "--quick", "--out", out.toString());
    assertThat(code).isZero();

    assertThat(read(out, "advisory.md"))
        .contains("| callers | actor p50 / p99 (µs) | inline p50 / p99 (µs) | calls/s actor → inline | "
            + "inline / actor | worst round |")
        .contains("| 1 |", "| 16 |", "| 256 |");
    assertThat(read(out, "admission.md"))
        .contains("| callers | books/s (book+release) |")
        .contains("| callers | Books/s (book only) | Book p50 / p99 (µs) | trivial sharded asks/s |")
        .contains("/system/sharding/ModelAdmission/");
    assertThat(read(out, "growth.md"))
        .contains("| benchmark | threads | blocks | policy | workers | score (ns/op) | bytes/op |")
        .contains("| select | 1 | 64 | least_in_flight | 4 |", "| select | 1 | 1 | kv | 64 |",
            "| kvLookup | 1 | 64 | kv | 64 |", "| unmatchedLookup | 1 | 64 | kv | 4 |");
    assertThat(read(out, "picker.md"))
        .contains("| benchmark | threads | policy | slot | score (ns/op) | p50 | p99 | p99.9 |")
        .contains("| select | 4 | least_in_flight | locked |", "| select | 4 | round_robin | lock-free |",
            "| select | 4 | kv | plugin-locked |", "| select | 4 | kv | plugin-atomic |")
        .contains("| threads | plugin-locked p50 (ns) | plugin-atomic p50 (ns) | locked / atomic |");
    assertThat(read(out, "kv-terms.md"))
        .contains("| benchmark | threads | terms | workers | score (ns/op) | p50 | p99 | p99.9 |")
        .contains("| score | 1 | dynamo | 4 |", "| select | 1 | load_bound_factor | 4 |",
            "| select | 1 | kvrouter | 4 |")
        .contains("| terms | workers | score p50 (ns) | score added (ns) | select p50 (ns) | select added (ns) |");
    assertThat(read(out, "metrics.md"))
        .contains("| benchmark | threads | policy | workers | score (ns/op) |")
        .contains("| select | 1 | kv | 4 |", "| selectTimed | 1 | kv | 4 |");
    assertThat(read(out, "explain.md"))
        .contains("| benchmark | threads | scenario | score (ns/op) | p50 | p99 | p99.9 | bytes/op |")
        .contains("| select | 1 | least_in_flight/4/8 |", "| selectRecorded | 1 | kv/64/128 |",
            "| selectExplained | 1 | kv/64/128 |")
        .contains("| scenario | threads | select p50 (ns) | selectRecorded p50 (ns) | added (ns) | "
            + "added / gRPC Select CPU | selectExplained p50 (ns) |");
    assertThat(read(out, "kvindex.md"))
        .contains("| benchmark | threads | events | score (ns/op) | p50 | p99 | p99.9 |")
        .contains("| writeAlone | 1 |", "| lookupAlone | 1 |", "| concurrent:lookup | 4 |", "| concurrent:write | 2 |")
        .contains("| (block, rank) entries | blocks (nodes) |");
    assertThat(read(out, "active-prefix.md"))
        .contains("| bookAndRelease | 1 | 128 |", "| matchEveryRank | 1 | 128 |");
  }

  @Test
  @Timeout(value = 300)
  void memoryQuickWritesItsTable(@TempDir Path out) throws Exception {
    assertThat(Bench.run("memory", "--quick", "--out", out.toString())).isZero();
    assertThat(read(out, "memory.md"))
        .contains("| phase | calls | heap after GC (MiB) | growth since the previous row (KiB) | "
            + "growth per call (bytes) | admission entities |")
        .contains("| after 500 distinct unknown names", "| after 100 register/deregister cycles");
  }

  @Test
  @Timeout(value = 300)
  void regionsQuickWritesItsTables(@TempDir Path out) throws Exception {
    assertThat(Bench.run("regions", "--quick", "--out", out.toString())).isZero();
    assertThat(read(out, "regions.md"))
        .contains("| benchmark | threads | score (ns/op) |")
        .contains("| regional | 1 |", "| globalInline | 1 |", "| globalOtherRegion | 1 |")
        .contains("| path | round | Book+Release pairs/s | relative to local |")
        .contains("Global Select per call relative to regional");
  }

  @Test
  @Timeout(value = 300)
  void dispatchersQuickComparesBothConfigsOnEveryPath(@TempDir Path out) throws Exception {
    assertThat(Bench.run("dispatchers", "--quick", "--out", out.toString())).isZero();
    assertThat(read(out, "dispatchers.md"))
        .contains("| path | callers | Pekko's pools calls/s |")
        .contains("| Books through the owner | 16 |", "| Books through a non-owner | 16 |",
            "| Book + Release from us to eu | 16 |", "| Book + Release on eu's node | 16 |")
        // both configs really ran: the bench's own admission pool beside the production config's default pool
        .containsPattern("`kvrouter\\.bench\\.admission-pool` \\d+")
        .containsPattern("`pekko\\.remote\\.default-remote-dispatcher` \\d+")
        .containsPattern("`pekko\\.actor\\.default-dispatcher` \\d+");
  }

  @Test
  @Timeout(value = 300)
  void commonPoolQuickWritesItsTable(@TempDir Path out) throws Exception {
    assertThat(Bench.run("common-pool", "--quick", "--out", out.toString())).isZero();
    assertThat(read(out, "common-pool.md"))
        .contains("| round | common pool parallelism | asks/s | CPU µs per ask | threads started | relative asks/s |")
        .contains("| 1 | 1 |", "| 1 | 4 |");
  }

  @Test
  void jmhAnnotationProcessorRan() {
    assertThat(getClass().getClassLoader().getResource(Jmh.BENCHMARK_LIST)).isNotNull();
  }

  @Test
  void unknownSubcommandFails() {
    assertThat(Bench.run("no-such-benchmark")).isNotZero();
  }

  private static String read(Path dir, String name) throws Exception {
    Path file = dir.resolve(name);
    assertThat(file).exists();
    return Files.readString(file, StandardCharsets.UTF_8);
  }
}
