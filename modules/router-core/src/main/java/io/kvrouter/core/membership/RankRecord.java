package io.kvrouter.core.membership;

import io.kvrouter.core.load.RankLoad;
import io.kvrouter.core.load.ReportedLoad;
import io.kvrouter.core.model.Rank;

/** A rank's load as its owner last set it: the booked record (seq-ordered) and the last engine report (or null). */
public record RankRecord(String workerId, int dpRank, RankLoad booked, ReportedLoad reported) {

  public Rank rank() {
    return new Rank(workerId, dpRank);
  }
}
