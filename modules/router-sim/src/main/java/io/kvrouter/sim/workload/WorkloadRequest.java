package io.kvrouter.sim.workload;

/**
 * One request of a workload: its whole token sequence, prompt first, then the output the simulated engine will
 * produce (so a later turn can extend it). {@code session} groups the turns of one conversation. {@code policyClass}
 * and {@code strictPriority} are what a frontend would tag it with for the router's admission queue (a tenant, a
 * tier); empty and 0 when the workload tags nothing.
 */
public record WorkloadRequest(String id, String session, int[] tokens, int promptTokens, String policyClass,
    int strictPriority) {

  public WorkloadRequest(String id, String session, int[] tokens, int promptTokens) {
    this(id, session, tokens, promptTokens, "", 0);
  }

  public int outputTokens() {
    return tokens.length - promptTokens;
  }
}
