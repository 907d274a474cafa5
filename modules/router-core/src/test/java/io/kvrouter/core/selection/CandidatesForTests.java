package io.kvrouter.core.selection;

/** Builds candidate sets with given costs for picker tests (package access to the scratch setters). */
public final class CandidatesForTests {
  private CandidatesForTests() {}

  public static Candidates withCosts(double... costs) {
    return withCosts(new Candidates(), costs);
  }

  /** As {@link #withCosts(double...)}, for one caller that picks in order ({@link Candidates#inOrder}). */
  public static Candidates inOrderWithCosts(double... costs) {
    return withCosts(Candidates.inOrder(), costs);
  }

  private static Candidates withCosts(Candidates c, double... costs) {
    c.reset(costs.length);
    for (int i = 0; i < costs.length; i++) {
      c.add(i, 0, 0, 0);
      c.setCost(i, costs[i]);
    }
    return c;
  }

  /** An empty candidate set for up to {@code capacity} candidates, filled with {@link #add}. */
  public static Candidates empty(int capacity) {
    Candidates c = new Candidates();
    c.reset(capacity);
    return c;
  }

  /** Adds a candidate (rank index = its position) with these loads, overlaps and active match. */
  public static Candidates add(Candidates c, int inFlight, long prefillTokens, long decodeBlocks, int device,
      int host, int disk, int activeMatched) {
    int i = c.size();
    c.add(i, inFlight, prefillTokens, decodeBlocks);
    c.setOverlap(i, device, host, disk);
    c.setActiveMatched(i, activeMatched);
    return c;
  }

  /** As {@link #add}, the candidate having {@code recentBookings} recent bookings (the load bound's window on). */
  public static Candidates addWithRecent(Candidates c, int inFlight, double recentBookings, int device,
      int activeMatched) {
    int i = c.size();
    c.add(i, inFlight, 0, 0, recentBookings);
    c.setOverlap(i, device, 0, 0);
    c.setActiveMatched(i, activeMatched);
    return c;
  }

  public static void setTemperature(Candidates c, double temperature) {
    c.setTemperature(temperature);
  }
}
