package io.kvrouter.sim.fleet;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;

/** The engines file router-sim writes: a prefill or decode engine's entry carries its role, an aggregated one none. */
class EnginesFileTest {
  @Test
  void onlyPrefillAndDecodeEnginesCarryARole() throws Exception {
    String text = EnginesFile.render(List.of(
        new EnginesFile.Entry("m", "sim-0", "127.0.0.1", 8100, -1, -1, "kv-events", 1, 16, 100, 8192, "prefill"),
        new EnginesFile.Entry("m", "sim-1", "127.0.0.1", 8101, -1, -1, "kv-events", 1, 16, 100, 8192, "decode"),
        new EnginesFile.Entry("m", "sim-2", "127.0.0.1", 8102, -1, -1, "kv-events", 1, 16, 100, 8192)));
    assertThat(text).contains("role: prefill").contains("role: decode");
    assertThat(text.split("role:", -1)).hasSize(3);
  }

  @Test
  void theFirstEnginesPrefillTheNextDecode() {
    EnginesCommand command = new EnginesCommand();
    command.count = 4;
    command.prefill = 1;
    command.decode = 2;
    assertThat(List.of(command.role(0), command.role(1), command.role(2), command.role(3)))
        .containsExactly("prefill", "decode", "decode", "aggregated");
  }
}
