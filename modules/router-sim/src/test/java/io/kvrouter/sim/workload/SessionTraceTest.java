package io.kvrouter.sim.workload;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.StringWriter;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.PriorityQueue;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * The session workloads as multi-turn traces: each line is the turn the workload itself sends when every turn
 * finishes the moment it arrives (start time, think time, new tokens, output), and the hash ids share exactly the
 * shared prefixes' blocks.
 */
class SessionTraceTest {
  private record Sent(long micros, WorkloadRequest request) {}

  /** Every turn as the workload sends it, finishing each the moment it arrives. */
  private static Map<String, List<Sent>> played(SessionWorkload.Params params) {
    SessionWorkload workload = new SessionWorkload(params);
    PriorityQueue<Sent> queue = new PriorityQueue<>((a, b) -> Long.compare(a.micros(), b.micros()));
    workload.start((micros, request) -> queue.add(new Sent(micros, request)));
    Map<String, List<Sent>> sessions = new HashMap<>();
    while (!queue.isEmpty()) {
      Sent next = queue.poll();
      sessions.computeIfAbsent(next.request().session(), k -> new ArrayList<>()).add(next);
      workload.finished(next.request(), next.micros(), (micros, request) -> queue.add(new Sent(micros, request)));
    }
    return sessions;
  }

  @Test
  void everyTraceLineIsTheTurnTheWorkloadSends() {
    for (SessionWorkload.Params params : List.of(SessionWorkload.multiTurn(12, 1.5, 42),
        SessionWorkload.agent(9, 1.0, 7))) {
      List<SessionWorkload.TraceTurn> lines = new SessionWorkload(params).toTrace(100);
      Map<String, List<Sent>> sessions = played(params);
      assertThat(lines).hasSize(sessions.values().stream().mapToInt(List::size).sum());
      Map<String, Integer> turnOf = new HashMap<>();
      for (SessionWorkload.TraceTurn line : lines) {
        int turn = turnOf.merge(line.sessionId(), 1, Integer::sum);
        List<Sent> sent = sessions.get(line.sessionId());
        Sent now = sent.get(turn - 1);
        int history = turn == 1 ? 0 : sent.get(turn - 2).request().tokens().length;
        assertThat(line.inputLength()).as(line.sessionId() + " turn " + turn)
            .isEqualTo(now.request().promptTokens() - history);
        assertThat(line.outputLength()).isEqualTo(now.request().outputTokens());
        if (turn == 1) {
          assertThat(line.delayMillis()).isNull();
          assertThat(line.timestampMillis()).isCloseTo(now.micros() / 1000, org.assertj.core.data.Offset.offset(1L));
        } else {
          assertThat(line.timestampMillis()).isNull();
          assertThat(line.delayMillis()).isCloseTo((now.micros() - sent.get(turn - 2).micros()) / 1000, 
              org.assertj.core.data.Offset.offset(1L));
        }
        assertThat(line.hashIds()).hasSize((line.inputLength() + 99) / 100);
      }
    }
  }

  @Test
  void onlyTheSharedPrefixesBlocksAreShared() {
    SessionWorkload.Params params = SessionWorkload.multiTurn(16, 1.5, 42);
    List<SessionWorkload.TraceTurn> lines = new SessionWorkload(params).toTrace(100);
    Map<Long, Set<String>> sessionsOf = new HashMap<>();
    for (SessionWorkload.TraceTurn line : lines) {
      for (long id : line.hashIds()) {
        sessionsOf.computeIfAbsent(id, k -> new HashSet<>()).add(line.sessionId());
      }
    }
    // 8 system prompts of 1,000 tokens = 10 blocks each, each opening 2 of the 16 sessions; nothing else shared
    long shared = sessionsOf.values().stream().filter(s -> s.size() > 1).count();
    assertThat(shared).isEqualTo(8 * 10);
    assertThat(sessionsOf.values().stream().filter(s -> s.size() > 1)).allMatch(s -> s.size() == 2);
    SessionWorkload.TraceTurn first = lines.get(0);
    assertThat(first.hashIds()).startsWith(0, 1, 2, 3, 4, 5, 6, 7, 8, 9);
  }

  @Test
  void writtenLinesCarryAiperfsMultiTurnFields() throws Exception {
    StringWriter out = new StringWriter();
    SessionWorkload.writeTrace(new SessionWorkload(SessionWorkload.agent(2, 1.0, 42)).toTrace(100), out);
    String[] lines = out.toString().split("\n");
    com.fasterxml.jackson.databind.ObjectMapper json = new com.fasterxml.jackson.databind.ObjectMapper();
    var first = json.readTree(lines[0]);
    var second = json.readTree(lines[1]);
    assertThat(first.get("session_id").asText()).isEqualTo("agent-s0");
    assertThat(first.has("timestamp")).isTrue();
    assertThat(first.has("delay")).isFalse();
    assertThat(first.get("input_length").asInt()).isGreaterThan(6_000);
    assertThat(second.get("session_id").asText()).isEqualTo("agent-s0");
    assertThat(second.has("delay")).isTrue();
    assertThat(second.has("timestamp")).isFalse();
    assertThat(second.get("hash_ids").size()).isEqualTo((second.get("input_length").asInt() + 99) / 100);
  }
}
