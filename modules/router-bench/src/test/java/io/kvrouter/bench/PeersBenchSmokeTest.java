package io.kvrouter.bench;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Runs {@code bench peers --quick}: two simulated engines, kvrouter's front (kv, KV events on) and SGLang's gateway
 * (smg, cache_aware) one after the other, each loaded by aiperf replaying a 4-session multi-turn trace. Checks that
 * both rows ran (a router that could not start or be installed is named in the file with its error, and fails this
 * test), that every request was answered, that the engines' counters saw prefix-cache hits (the sessions' histories
 * are reused), and that the versions and the chart are written; the figures themselves are the benchmark's.
 */
class PeersBenchSmokeTest {
  private static final Pattern ROW = Pattern.compile(
      "^\\| (\\S+) \\| (\\d+) / (\\d+) \\| ([0-9.]+) % \\|", Pattern.MULTILINE);

  @Test
  @Timeout(value = 300)
  void kvrouterAndSmgServeTheSameAiperfTrace(@TempDir Path out) throws Exception {
    Path root = BenchProcesses.repositoryRoot();
    // bin/kvrouter and bin/sim would build (mvn package) without them: this runs in the reactor after their package
    for (String module : List.of("router-server", "router-sim")) {
      assertThat(root.resolve("modules/" + module + "/target/classpath.txt")).as(module + "'s launcher classpath; "
          + "run through the reactor, e.g. mvn -B -pl modules/router-bench -am verify").exists();
    }
    assertThat(PeersBench.peersPython(root)).as("the peers' environment (bin/python-env)").isExecutable();

    int exit = Bench.run("peers", "--quick", "--out", out.toString());

    String report = Files.readString(out.resolve("peers-quick.md"), StandardCharsets.UTF_8);
    assertThat(report).as("routers that did not run").doesNotContain("did not run");
    assertThat(exit).isZero();
    assertThat(report).contains("aiperf 0.13.0", "smg 1.13.0").contains("| " + String.join(" | ",
        PeersReport.HEADER) + " |");
    Matcher rows = ROW.matcher(report);
    int found = 0;
    while (rows.find()) {
      found++;
      assertThat(rows.group(1)).isIn("kvrouter-kv", "smg-cache-aware");
      assertThat(Integer.parseInt(rows.group(2))).as(rows.group(1) + " answered").isPositive();
      assertThat(Integer.parseInt(rows.group(3))).as(rows.group(1) + " errors").isZero();
      assertThat(Double.parseDouble(rows.group(4))).as(rows.group(1) + " hit rate (%)").isGreaterThan(0);
    }
    assertThat(found).as("rows in\n" + report).isEqualTo(2);
    assertThat(Files.readString(out.resolve("peers-quick.svg"))).startsWith("<svg").contains("kvrouter-kv",
        "smg-cache-aware");
  }
}
