package io.kvrouter.core.testkit;

import io.kvrouter.core.admission.ModelSnapshot;
import io.kvrouter.core.load.RankLoad;
import java.util.HashMap;
import java.util.Map;

/**
 * Checks a model's state as its snapshot shows it: every rank's booked load is the sum of its live bookings (a
 * prefill/decode pair: its prefill rank one request and its prefill until done, its decode rank one request and its
 * blocks).
 */
public final class LedgerInvariants {
  private LedgerInvariants() {}

  /** A description of the first rank whose load cell disagrees with the ledger, or null when all agree. */
  public static String firstMismatch(ModelSnapshot snapshot) {
    Map<String, long[]> expected = new HashMap<>();
    for (ModelSnapshot.BookingSnapshot b : snapshot.bookings()) {
      if (b.decodeRank() != null) {
        long[] decode = expected.computeIfAbsent(b.decodeRank().workerId() + "/" + b.decodeRank().dpRank(),
            rank -> new long[3]);
        decode[0]++;
        decode[2] += b.decodeBlocks();
        if (b.prefillDone()) {
          continue;
        }
      }
      long[] sums = expected.computeIfAbsent(b.workerId() + "/" + b.dpRank(), rank -> new long[3]);
      sums[0]++;
      sums[1] += b.prefillTokens();
      if (b.decodeRank() == null) {
        sums[2] += b.decodeBlocks();
      }
    }
    for (ModelSnapshot.WorkerSnapshot worker : snapshot.workers()) {
      for (ModelSnapshot.RankSnapshot rank : worker.ranks()) {
        String key = worker.config().workerId() + "/" + rank.dpRank();
        long[] sums = expected.getOrDefault(key, new long[3]);
        RankLoad load = rank.load();
        if (load.inFlight() != sums[0] || load.prefillTokens() != sums[1] || load.decodeBlocks() != sums[2]
            || rank.liveBookings() != sums[0]) {
          return "rank " + key + " cell " + load + " but ledger holds in_flight=" + sums[0] + " prefill=" + sums[1]
              + " decode=" + sums[2];
        }
      }
    }
    return null;
  }
}
