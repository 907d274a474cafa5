package io.kvrouter.core.model;

/** The routing unit: one data-parallel rank of a worker. Ordered by (workerId, dpRank). */
public record Rank(String workerId, int dpRank) implements Comparable<Rank> {
  @Override
  public int compareTo(Rank other) {
    int byWorker = workerId.compareTo(other.workerId);
    return byWorker != 0 ? byWorker : Integer.compare(dpRank, other.dpRank);
  }

  @Override
  public String toString() {
    return workerId + "#" + dpRank;
  }
}
