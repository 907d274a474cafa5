package io.kvrouter.sim.workload;

/**
 * One request of a workload: its whole token sequence, prompt first, then the output the simulated engine will
 * produce (so a later turn can extend it). {@code session} groups the turns of one conversation.
 */
public record WorkloadRequest(String id, String session, int[] tokens, int promptTokens) {
  public int outputTokens() {
    return tokens.length - promptTokens;
  }
}
